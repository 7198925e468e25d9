"""Scenario `mp-board`: the runtime deployed to a (virtual) MicroPython board, checked against CPython.

1. A virtual MicroPython 1.27 board starts on a pty (``harness.sim.virtual_board``).
2. ``onboard.deploy`` copies the board package's file set with the real mpremote,
   verifies it by sha256, switches it active and soft-resets the board: its
   ``main.py`` prints ``READY``.
3. The harness sends ``H,lockstep`` and then, per 100 Hz tick, simulated IMU
   samples (``I``), aiding poses at 10 Hz (``P``) and the tick (``T,now_us``) over
   the serial link (``onboard.comms.line_link``), every line signed with the link key
   provisioned by the deploy (``link_key``; the board refuses unsigned lines); the board
   answers each tick with its estimate, pose variances and wheel command (``S``).
4. The same lines go through the same runtime on CPython; every number must agree
   within ``tolerance`` (1e-9).

Samples: a robot driving a speed/yaw-rate profile, IMU increments with white noise
and a constant gyro bias (ag2u eq. 10 reduced to the plane), aiding pose with
white noise (ag2u eq. 13). ``port`` set: use a real board instead of the virtual one.

``pull_log`` set to an ``OUT.mcap`` path: after the run the board's flight recorder (its ring log,
``boards/mp_common/mp_app.py``) is asked for its counters (``LOG``), copied with the real mpremote and
converted (``python -m onboard.deploy BOARD --pull-log``: ``OUT.bin`` and ``OUT.mcap``), and replayed
on CPython (``harness.replay``); the ``log_*`` metrics report its size and the replay's largest
difference. Unset (the default), the metrics are the lockstep comparison's only.

Metrics are outcomes (``success``: every number within ``tolerance``); the wall-clock figures (deploy
time, the board's and CPython's time per tick, the link's wall time per tick) go to run.json's
``timing``. The log (``log.mcap``) holds every sample sent to the board (``/mp_board/imu``,
``/mp_board/aiding/pose``), the true pose (``/mp_board/truth``) and the board's answer per tick
(``/mp_board/board/state``: estimate, pose variances and wheel command), with Foxglove poses under
``/viz/``.
"""
import math
import os
import time

from harness.config import ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, ConfigError, int_at_least, one_of
from harness.report.plots import figure, label
from onboard.comms import line_link as ll
from onboard.deploy.build import list_boards
from onboard.deploy.pull_log import pull_log, raw_log_path
from onboard.core.samples import ImuSample, PoseSample
from onboard.core.units import s_to_us
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.link_runtime import LinkRuntime, STATE_KEYS, parse_state, runtime_config

DESCRIPTION = "deploy to a virtual MicroPython board with mpremote, feed samples over serial, compare with CPython"

DEFAULTS = {
    "board": "pico_rp2040",
    "port": "",                    # empty: start a virtual board
    "mpy": False,
    "duration_s": 6.0,
    "tolerance": 1e-9,
    "batch_ticks": 25,
    "deploy_timeout_s": 20.0,
    "pull_log": "",                # an OUT.mcap path: pull the board's ring log there and replay it
    # the command link's key (a file of hex digits) provisioned with the deploy; empty: a key made for this run
    "link_key": "",
    "imu": {"gyro_noise_radps": 0.002, "accel_noise_mps2": 0.05, "gyro_bias_radps": 0.01},
    "aiding": {"pos_sigma_m": 0.05, "yaw_sigma_rad": 0.02},
}

# a quick run (`run --reduced`): 1 s of lockstep ticks (the deploy to the virtual board takes most of it)
REDUCED = {"duration_s": 1.0}


class _Board:
    """Constants of a board package read on CPython (``const`` is the identity there)."""

    def __init__(self, name):
        from onboard.deploy.build import BOARDS_DIR
        path = os.path.join(BOARDS_DIR, name, "board.py")
        with open(path) as fh:
            src = fh.read().replace("from micropython import const", "const = lambda x: x")
        ns = {}
        exec(compile(src, path, "exec"), ns)
        for k, v in ns.items():
            if k.isupper():
                setattr(self, k, v)


class _RecordingMotors:
    def __init__(self):
        self.last = None

    def command(self, cmd):
        self.last = cmd

    def stop(self, now_us):
        self.last = None


def tick_count(duration_s, imu_hz):
    """Whole IMU ticks at ``imu_hz`` in ``duration_s`` (s, rounded to whole microseconds first: 0.29 s at 100 Hz is
    29 ticks, though 0.29 * 100 is 28.999999999999996)."""
    return s_to_us(duration_s) // (1000000 // imu_hz)


def make_lines(config, rng_imu, rng_pose, board, samples=None):
    """-> list of per-tick lists of lines (bytes) for the host to send. ``samples``: None, or a list that
    gets ``(now_us, ImuSample, PoseSample or None, (north_m, east_m, yaw_rad) true)`` per tick."""
    imu_hz = board.IMU_RATE_HZ
    aid_every = imu_hz // board.AIDING_RATE_HZ
    dt_us = 1000000 // imu_hz
    dt = dt_us * 1e-6
    c = config["imu"]
    a = config["aiding"]
    n_ticks = tick_count(config["duration_s"], imu_hz)
    north = east = yaw = speed = 0.0
    ticks = []
    for k in range(n_ticks):
        t_s = k * dt
        accel = 0.3 if t_s < 2.0 else (-0.1 if t_s > 4.5 else 0.0)
        yaw_rate = 0.4 * math.sin(0.8 * t_s)
        now_us = (k + 1) * dt_us
        speed_mid = speed + 0.5 * accel * dt
        yaw_mid = yaw + 0.5 * yaw_rate * dt
        north += speed_mid * math.cos(yaw_mid) * dt
        east += speed_mid * math.sin(yaw_mid) * dt
        yaw += yaw_rate * dt
        speed += accel * dt
        dvel = (accel * dt + rng_imu.normal(0.0, c["accel_noise_mps2"]) * math.sqrt(dt), 0.0, 0.0)
        dang = (0.0, 0.0, (yaw_rate + c["gyro_bias_radps"]) * dt
                + rng_imu.normal(0.0, c["gyro_noise_radps"]) * math.sqrt(dt))
        imu = ImuSample(now_us, dt_us, dvel, dang)
        lines = [ll.encode("I", ll.imu_fields(imu))]
        pose = None
        if k % aid_every == 0:
            pose = PoseSample(now_us, (north + rng_pose.normal(0.0, a["pos_sigma_m"]),
                                       east + rng_pose.normal(0.0, a["pos_sigma_m"]), 0.0),
                              (0.0, 0.0, yaw + rng_pose.normal(0.0, a["yaw_sigma_rad"])))
            lines.append(ll.encode("P", ll.pose_fields(pose)))
        lines.append(ll.encode("T", [str(now_us)]))
        if samples is not None:
            samples.append((now_us, imu, pose, (north, east, yaw)))
        ticks.append(lines)
    return ticks


def run_cpython(board, ticks):
    runtime = GroundRobotRuntime(board.WAYPOINTS_NE_M, _RecordingMotors(), config=runtime_config(board))
    link = LinkRuntime(runtime)
    link.handle_line(ll.encode("H", ["lockstep"]))
    out = []
    t0 = time.perf_counter()
    for lines in ticks:
        for line in lines:
            for reply in link.handle_line(line):
                out.append(parse_state(ll.decode(reply)[1]))
    return out, (time.perf_counter() - t0) / max(1, len(ticks))


class _Serial:
    def __init__(self, port, timeout_s):
        import serial
        self.ser = serial.Serial(port, 115200, timeout=0.05)
        self.timeout_s = timeout_s
        self.buf = b""

    def write(self, data):
        self.ser.write(data)

    def readline(self, timeout_s=None):
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while b"\n" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no line from the board within %.1f s (got %r)"
                                   % (timeout_s or self.timeout_s, self.buf[-200:]))
            self.buf += self.ser.read(4096)
        line, self.buf = self.buf.split(b"\n", 1)
        return line + b"\n"

    def read_frame(self, tag):
        while True:
            line = self.readline()
            try:
                t, fields = ll.decode(line)
            except ll.LinkError:
                continue            # REPL noise before the runtime started
            if t == tag:
                return fields
            if t == "X":
                raise RuntimeError("board rejected a line: %s" % ",".join(fields))

    def close(self):
        self.ser.close()


def _signed(signer, line):
    """``line`` signed for the board's link, stamped with this host's clock in 10 us units (so the counters
    stay above the mark a real board kept from earlier runs; the stamps change no number the board computes)."""
    return ll.sign_line(signer, line, stamp=int(time.time() * 1e5))


def run_board(port, ticks, batch, signer, log_query=False, on_progress=None):
    """Lockstep over the serial link: ``batch`` ticks of lines at a time, one S-frame answer per tick, every line
    signed by ``signer`` (``onboard.comms.signed_frame.FrameSigner`` of the board's link key).
    on_progress: None, or called with the number of ticks answered so far."""
    from onboard.deploy.device import soft_reset_and_start
    ready = soft_reset_and_start(port, timeout_s=15.0)
    if ready is None:
        raise RuntimeError("board did not print READY after the soft reset")
    link = _Serial(port, 20.0)
    try:
        link.write(_signed(signer, ll.encode("H", ["lockstep"])))
        link.read_frame("H")
        out = []
        t0 = time.perf_counter()
        for i in range(0, len(ticks), batch):
            chunk = ticks[i:i + batch]
            link.write(b"".join(_signed(signer, line) for lines in chunk for line in lines))
            for _ in chunk:
                out.append(parse_state(link.read_frame("S")))
            if on_progress is not None:
                on_progress(len(out))
        wall_per_tick = (time.perf_counter() - t0) / max(1, len(ticks))
        link.write(b"STATS\n")
        stats = link.read_frame("STATS")
        link.write(_signed(signer, ll.encode("Q", [])))
        rep = link.read_frame("R")
        log = None
        if log_query:
            link.write(b"LOG\n")
            log = link.read_frame("LOG")
        link.write(b"EXIT\n")
    finally:
        link.close()
    n, total_us, max_us = (int(v) for v in stats)
    report = dict(zip(rep[0::2], (int(v) for v in rep[1::2])))
    info = {}
    if log is not None:
        info["board_log"] = {"records": int(log[0]), "bytes": int(log[1]), "wraps": int(log[2]),
                             "session": int(log[3]), "error": log[4]}
    return out, dict(info, **{"ready": ready.decode(errors="replace"), "wall_s_per_tick": wall_per_tick,
                 "board_step_mean_us": total_us / max(1, n), "board_step_max_us": max_us,
                 "board_report": report})


def _state_diff(a, b):
    """|a - b| of one state value: 0.0 for the same value (the same infinity, NaN on both sides: the board did
    what CPython did), infinity where only one side is NaN or the values are opposite infinities."""
    if a == b or (a != a and b != b):
        return 0.0
    d = abs(a - b)
    return d if d == d else math.inf


def compare(board_out, ref_out):
    """(largest |board - CPython| over every tick's STATE_KEYS, where it is): infinity where the tick counts or
    times differ or a value is NaN on one side only; (0.0, None) when every value agrees exactly."""
    if len(board_out) != len(ref_out):
        return math.inf, "tick count differs: board %d, CPython %d" % (len(board_out), len(ref_out))
    worst = 0.0
    where = None
    for (tb, vb), (tr, vr) in zip(board_out, ref_out):
        if tb != tr:
            return math.inf, "tick time differs at %d vs %d" % (tb, tr)
        for key in STATE_KEYS:
            d = _state_diff(vb[key], vr[key])
            if d > worst:
                worst = d
                where = "%s at %d us (board %r, CPython %r)" % (key, tb, vb[key], vr[key]) if d == math.inf \
                    else "%s at %d us" % (key, tb)
    return worst, where


def _finite_or_none(value):
    """A metric value: ``value``, or None for an infinity or NaN (metrics.json holds finite JSON only)."""
    return value if value is not None and math.isfinite(value) else None


def comparison_metrics(worst, where, tolerance):
    """The lockstep comparison's metrics: ``success`` (every number within ``tolerance``), ``max_abs_diff``
    (null where it is infinite: ticks or NaN that differ, said in ``worst_at``), ``worst_at``."""
    return {"success": worst <= tolerance, "max_abs_diff": _finite_or_none(worst), "worst_at": where}


# value ranges of the settings (harness.config rules); ``port`` empty: a virtual board
SETTING_RANGES = {"board": one_of(*list_boards()),
                  "port": ("a serial port path, or empty", lambda v: isinstance(v, str)),
                  "mpy": BOOLEAN, "duration_s": POSITIVE, "tolerance": NON_NEGATIVE, "batch_ticks": int_at_least(1),
                  "deploy_timeout_s": POSITIVE,
                  "pull_log": ("an .mcap path, or empty", lambda v: isinstance(v, str)),
                  "link_key": ("a key file path, or empty", lambda v: isinstance(v, str)),
                  "imu.gyro_noise_radps": NON_NEGATIVE, "imu.accel_noise_mps2": NON_NEGATIVE,
                  "imu.gyro_bias_radps": ANY_NUMBER, "aiding.pos_sigma_m": NON_NEGATIVE,
                  "aiding.yaw_sigma_rad": NON_NEGATIVE}


def _log_samples(ctx, samples, board_out):
    """Every sample sent, the true pose and the board's answer of every tick into the run's log."""
    mcap = ctx.mcap
    if mcap is None:
        return
    mcap.log_frames("/viz/tf_static", 0)
    for (now_us, imu, pose, (north, east, yaw)) in samples:
        mcap.log("/mp_board/imu", now_us, imu)
        if pose is not None:
            mcap.log("/mp_board/aiding/pose", now_us, pose)
        mcap.log("/mp_board/truth", now_us, {"time_us": now_us, "north_m": north, "east_m": east, "yaw_rad": yaw})
        mcap.log_pose("/viz/truth/pose", now_us, (north, east, 0.0), yaw_rad=yaw)
    for t_us, v in board_out:
        mcap.log("/mp_board/board/state", t_us, dict({"time_us": t_us}, **{k: v[k] for k in STATE_KEYS}))
        mcap.log_pose("/viz/estimate/pose", t_us, (v["north_m"], v["east_m"], 0.0), yaw_rad=v["yaw_rad"])


# the ticks' lines are made whole before the run (make_lines): bound them (10000 s at 100 Hz)
MAX_TICKS = 1000000


def check_settings(config):
    """A ``duration_s`` shorter than one of the board's IMU ticks (nothing would be compared) or longer than
    MAX_TICKS of them, a ``link_key``
    file that cannot be read or holds no key, or a ``pull_log`` path that cannot be written (a folder, or in a
    folder that is missing or read-only): one line (the key is never shown)."""
    imu_hz = _Board(config["board"]).IMU_RATE_HZ
    if not 1 <= tick_count(config["duration_s"], imu_hz) <= MAX_TICKS:
        raise ConfigError("setting config.duration_s must last 1..%d IMU ticks of board %s (%g..%g s), got %r"
                          % (MAX_TICKS, config["board"], 1.0 / imu_hz, MAX_TICKS / imu_hz, config["duration_s"]))
    if config["link_key"]:
        from onboard.deploy.deployer import BadLinkKey, read_link_key
        try:
            read_link_key(config["link_key"])
        except BadLinkKey as exc:
            raise ConfigError("setting config.link_key: %s" % exc)
    if config["pull_log"]:
        _check_pull_log_path(config["pull_log"])


def _check_pull_log_path(path):
    """ConfigError unless ``path`` is an OUT.mcap path (the pulled log) and it and the raw copy beside it (OUT.bin,
    ``onboard.deploy.pull_log.raw_log_path``) can be written: checked before the deploy and the lockstep run,
    which the log is pulled after."""
    folder = os.path.dirname(os.path.abspath(path))
    raw = raw_log_path(path)
    if os.path.isdir(path):
        raise ConfigError("setting config.pull_log: %s is a folder, not an .mcap file path" % path)
    if os.path.splitext(path)[1] != ".mcap":
        # the raw copy is OUT.bin beside OUT.mcap: another extension (OUT.bin itself) would put both in one file
        raise ConfigError("setting config.pull_log: %s is not an .mcap file path (the board's raw log goes beside "
                          "it to %s)" % (path, raw))
    if os.path.isdir(raw):
        raise ConfigError("setting config.pull_log: %s: the board's raw log goes beside it to %s, which is a folder"
                          % (path, raw))
    if not os.path.isdir(folder):
        raise ConfigError("setting config.pull_log: %s: there is no folder %s" % (path, folder))
    if not os.access(folder, os.W_OK | os.X_OK) or any(os.path.exists(p) and not os.access(p, os.W_OK)
                                                       for p in (path, raw)):
        raise ConfigError("setting config.pull_log: %s cannot be written (no write permission)" % path)


def _link_key(config, ctx):
    """The link key: from the file ``link_key`` names, else 16 bytes made for this run."""
    if config["link_key"]:
        from onboard.deploy.deployer import read_link_key
        return read_link_key(config["link_key"])
    return bytes(int(b) for b in ctx.random.stream("link-key").integers(0, 256, 16))


def run(config, ctx):
    from onboard.comms.signed_frame import FrameSigner
    from onboard.deploy.deployer import deploy
    board = _Board(config["board"])
    samples = []
    ticks = make_lines(config, ctx.random.stream("imu"), ctx.random.stream("aiding"), board, samples)
    ref_out, cpython_s_per_tick = run_cpython(board, ticks)
    progress = ctx.progress(len(ticks) / board.IMU_RATE_HZ, "mp-board: deploying")
    vb = None
    port = config["port"]
    if not port:
        from harness.sim.virtual_board import VirtualBoard
        vb = VirtualBoard().start()
        port = vb.port
    try:
        t0 = time.monotonic()
        key = _link_key(config, ctx)
        result = deploy(config["board"], port, mpy=config["mpy"], timeout_s=config["deploy_timeout_s"],
                        log=lambda m: None, link_key=key)
        deploy_s = time.monotonic() - t0
        progress.stage("mp-board: lockstep")
        board_out, info = run_board(port, ticks, config["batch_ticks"], FrameSigner(key),
                                    log_query=bool(config["pull_log"]),
                                    on_progress=lambda n: progress.update_to(n / board.IMU_RATE_HZ))
        log_metrics = pull_and_replay(config, port, info) if config["pull_log"] else {}
    finally:
        progress.close()
        if vb is not None:
            vb.stop()
    worst, where = compare(board_out, ref_out)
    _log_samples(ctx, samples, board_out)
    if ctx.report is not None and board_out:
        _plots(ctx.report, samples, board_out, ref_out, board.IMU_RATE_HZ)
    ctx.timing(deploy_s=deploy_s, board_step_mean_us=info["board_step_mean_us"],
               board_step_max_us=info["board_step_max_us"], cpython_step_mean_us=cpython_s_per_tick * 1e6,
               link_wall_s_per_tick=info["wall_s_per_tick"])
    return dict(log_metrics, **comparison_metrics(worst, where, config["tolerance"]), **{
            "ticks": len(ticks), "files_deployed": result["files"], "bytes_deployed": result["bytes"],
            "uploaded": result["uploaded"], "board_report": info["board_report"], "ready": info["ready"],
            "final_north_m": _finite_or_none(board_out[-1][1]["north_m"]) if board_out else None})


def _plots(report, samples, board_out, ref_out, imu_hz):
    """The path (truth, the board's estimate, CPython's at every half second) and the board's wheel
    commands over time."""
    fig, (ax, bx) = figure(1, 2, title="mp-board: the runtime on the MicroPython board vs CPython",
                           size_in=(12, 4.8))
    ax.plot([s[3][1] for s in samples], [s[3][0] for s in samples], "k", lw=2.5, alpha=0.35, label="truth")
    ax.plot([v["east_m"] for _t, v in board_out], [v["north_m"] for _t, v in board_out], "C0", lw=1,
            label="estimate on the board")
    every = max(1, imu_hz // 2)
    ax.plot([v["east_m"] for _t, v in ref_out[::every]], [v["north_m"] for _t, v in ref_out[::every]], "x",
            color="C3", label="estimate on CPython (every 0.5 s)")
    ax.set_aspect("equal", adjustable="datalim")
    label(ax, "path", "east (m)", "north (m)")
    t_s = [t * 1e-6 for t, _v in board_out]
    bx.plot(t_s, [v["left_radps"] for _t, v in board_out], "C0", label="left wheel")
    bx.plot(t_s, [v["right_radps"] for _t, v in board_out], "C1", ls="--", label="right wheel")
    label(bx, "wheel commands from the board", "time (s)", "wheel speed command (rad/s)")
    report.save_figure(fig, "board_vs_cpython")


def pull_and_replay(config, port, info):
    """Pull the board's ring log to ``config["pull_log"]`` (mpremote), replay it on CPython -> log_* metrics:
    records and bytes the board wrote (its ``LOG`` counters), bytes per record, records dropped, the
    replay's ticks, largest output difference and whether every output topic has the logged count."""
    from harness.replay import read_recording, replay_events
    board_log = info.get("board_log") or {}
    pulled = pull_log(config["board"], port, config["pull_log"], timeout_s=config["deploy_timeout_s"],
                      log=lambda m: None)
    events, damage = read_recording(config["pull_log"])
    return replay_log_metrics(board_log, pulled, replay_events(events), damage)


def replay_log_metrics(board_log, pulled, rep, damage):
    """The log_* metrics of a pulled ring log: ``board_log`` the board's ``LOG`` counters (records, bytes,
    wraps, error), ``pulled`` what :func:`onboard.deploy.pull_log.pull_log` returned, ``rep`` the replay's
    report (:func:`harness.replay.replay_events`), ``damage`` where the file stopped being readable (None).
    ``log_replay_max_abs_diff`` is null where it is infinite (outputs that differ in shape or in something
    that is no number; metrics.json holds finite JSON only)."""
    topics = rep["topics"].values()
    records = board_log.get("records", 0)
    return {"log_records": records, "log_bytes": board_log.get("bytes", 0),
            "log_bytes_per_record": board_log.get("bytes", 0) / records if records else None,
            "log_wraps": board_log.get("wraps"), "log_error": board_log.get("error"),
            "log_dropped": pulled["dropped"], "log_torn": pulled["torn"], "log_summary": pulled["summary"],
            "log_replay_ticks": rep["ticks"], "log_replay_inputs": rep["inputs"],
            "log_replay_max_abs_diff": _finite_or_none(max([t["max_abs_diff"] for t in topics] or [0.0])),
            "log_replay_counts_match": all(t["logged"] == t["replayed"] for t in topics),
            "log_replay_damage": damage}
