"""Board application shared by the MicroPython boards (imported by each board's main.py).

``run_board(board)`` builds the board's app (:func:`build_app`: the ground robot's parts, the
PWM motor driver and the board's io part on one node, from the board's constants), then either

- *lockstep* (hardware-in-the-loop): the host says ``H,lockstep`` on the serial
  link within ``board.HIL_WAIT_MS`` after ``READY``; every line is handled by
  :class:`onboard.runtime.link_runtime.LinkRuntime` (host-driven time), or
- *run*: the app's node runs against the board clock
  (:class:`onboard.runtime.clock.MonotonicClock`, ``time.ticks_us``); its io part feeds the
  IMU driver's samples to ``on_imu`` each tick and aiding poses arrive as ``P`` lines.

``EXIT`` on the link (or Ctrl-C) returns to the REPL.

Signed link: every line the host sends the runtime must be a signed line under the board's link key
(:func:`link_auth`, ``board.LINK_SIGNING``; provisioned by ``python -m onboard.deploy BOARD --link-key
FILE``): unsigned, forged, replayed or reordered lines are answered ``X`` and counted
(``auth_rejected`` in the ``R`` report). ``STATS``, ``LOG`` and ``EXIT`` stay unsigned: they read
counters or stop the app (motors off), and never move the robot.

Flight recorder: with ``board.LOG_BYTES`` > 0 the node records the app at its boundary
(:meth:`onboard.runtime.node.Node.record`: config, every input, tick and output) into a ring log of
``LOG_BYTES`` bytes at ``board.LOG_PATH`` (:class:`onboard.runtime.ring_log.RingLogSink`; each boot
starts a new session in the same preallocated file), as app ``mp_ground_robot`` with the ground
robot's recipe settings, so ``python -m onboard.deploy BOARD --port PORT --pull-log OUT.mcap`` and
``python -m harness replay OUT.mcap`` re-run it on the host. Recording starts after ``READY``, is
closed (flushed) when the app returns or is interrupted, and answers ``LOG`` in lockstep with
``LOG,records,bytes,wraps,session,error`` (outside the link's own line counts).
"""
import gc
import sys

from onboard.comms import line_link as ll
from onboard.comms.signed_frame import FrameVerifier, SigningError, key_from_hex
from onboard.core.samples import ImuSample
from onboard.runtime.clock import MonotonicClock
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.link_runtime import LinkRuntime, runtime_config

try:
    import select
except ImportError:      # pragma: no cover
    select = None


APP_NAME = "mp_ground_robot"     # the recipe name ``harness replay`` rebuilds this app by


def _write(line):
    sys.stdout.write(line.decode())


class BoardIo:
    """io part (run mode): the IMU driver -> ``on_imu`` and waiting serial lines -> the link, each
    base tick. Idle until :meth:`enable` (lockstep mode never enables it: the host feeds the samples).

    A read that fails on the bus (``OSError`` from the driver: the chip stopped answering) gives no
    sample that tick: it is counted (``imu_errors``; ``imu_outages`` counts the runs of failed reads, each
    reported once on the link as an ``X`` line), the runtime's watched IMU input goes stale and its
    failsafe stops the motors; the next read that answers feeds the IMU again and the robot drives on."""

    def __init__(self, rate_hz, runtime, link):
        self.rate_hz = rate_hz
        self.dt_us = 1000000 // rate_hz
        self.runtime = runtime
        self.link = link
        self.imu = None
        self.stdin = None
        self.poller = None
        self.imu_errors = 0
        self.imu_outages = 0
        self.imu_failing = False
        self.imu_last_error = ""

    def attach(self, node):
        node.every("io", self.rate_hz, self._io, io=True)

    def enable(self, imu, stdin, poller):
        self.imu = imu
        self.stdin = stdin
        self.poller = poller

    def _io(self, now_us):
        if self.imu is None:
            return
        imu = self.imu
        try:
            imu.read()
        except OSError as exc:
            self.imu_errors += 1
            self.imu_last_error = str(exc)
            if not self.imu_failing:
                self.imu_failing = True
                self.imu_outages += 1
                _write(ll.encode("X", [("imu read failed: " + self.imu_last_error).replace(",", ";")]))
        else:
            self.imu_failing = False
            a = imu.accel_frd_mps2
            g = imu.gyro_frd_radps
            dt = self.dt_us * 1e-6
            self.runtime.on_imu(ImuSample(now_us, self.dt_us, (a[0] * dt, a[1] * dt, a[2] * dt),
                                          (g[0] * dt, g[1] * dt, g[2] * dt)))
        while self.poller.poll(0):
            line = self.stdin.readline()
            if not line or line.strip() == b"EXIT":
                raise KeyboardInterrupt
            for reply in self.link.handle_line(line):
                _write(reply)

    def report(self):
        """The IMU's failed reads (``imu_errors``), their runs (``imu_outages``) and the last error."""
        return {"imu_errors": self.imu_errors, "imu_outages": self.imu_outages, "imu_failing": self.imu_failing,
                "imu_last_error": self.imu_last_error}


def build_app(board, machine):
    """The board's recipe: the ground robot's parts and the board's io part on one node.
    Returns (runtime, link, io)."""
    from mp_drivers import DiffDrivePwm
    pwm_l = machine.PWM(machine.Pin(board.PIN_PWM_LEFT), freq=board.PWM_FREQ_HZ)
    pwm_r = machine.PWM(machine.Pin(board.PIN_PWM_RIGHT), freq=board.PWM_FREQ_HZ)
    dir_l = machine.Pin(board.PIN_DIR_LEFT, machine.Pin.OUT)
    dir_r = machine.Pin(board.PIN_DIR_RIGHT, machine.Pin.OUT)
    motors = DiffDrivePwm(pwm_l, pwm_r, dir_l, dir_r, board.MAX_WHEEL_RADPS)
    runtime = GroundRobotRuntime(board.WAYPOINTS_NE_M, motors, config=runtime_config(board))
    verifier, require_signed = link_auth(board)
    link = LinkRuntime(runtime, verifier, require_signed=require_signed)
    io = runtime.node.add("io", BoardIo(board.IMU_RATE_HZ, runtime, link))
    return runtime, link, io


def link_auth(board):
    """(verifier or None, require_signed) of the board's command link: ``board.LINK_SIGNING`` "off" takes
    unsigned lines; else the key at ``board.LINK_KEY_PATH`` (hex) with the counter mark kept in
    ``board.LINK_MARK_PATH`` (written to a temporary file and renamed, so a power cut leaves the old mark or
    the new one). No key, a malformed key or an unreadable mark: (None, True), every line refused."""
    if getattr(board, "LINK_SIGNING", "required") == "off":
        return None, False
    mark_path = board.LINK_MARK_PATH
    try:
        with open(board.LINK_KEY_PATH) as fh:
            key = key_from_hex(fh.read())
    except (OSError, SigningError):
        return None, True
    floor = 0
    try:
        with open(mark_path) as fh:
            floor = int(fh.read().strip())
    except OSError:
        floor = 0                       # no mark yet: a key deployed since the last accepted line
    except ValueError:
        return None, True

    def persist(mark):
        import os
        with open(mark_path + ".tmp", "w") as fh:
            fh.write("%d\n" % mark)
        os.rename(mark_path + ".tmp", mark_path)
    return FrameVerifier({0: key}, floor=floor, persist=persist), True


def start_log(board, runtime):
    """Record the app into the board's ring log (``board.LOG_PATH``, ``board.LOG_BYTES`` bytes of flash,
    flushed every ``board.LOG_FLUSH_RECORDS`` records). -> (sink or None, error line or None);
    ``LOG_BYTES`` 0 or absent: no log. A log that cannot be opened leaves the app running unrecorded."""
    size_bytes = getattr(board, "LOG_BYTES", 0)
    if not size_bytes:
        return None, None
    from onboard.runtime.ring_log import RingLogSink
    sink = None
    try:
        sink = RingLogSink(board.LOG_PATH, size_bytes, flush_records=getattr(board, "LOG_FLUSH_RECORDS", 0))
        runtime.node.record(sink, APP_NAME, runtime.recipe_config(), "%s/%s" % (board.NAME, board.VERSION), 0)
    except (OSError, ValueError) as exc:
        if sink is not None:
            sink.close()
        return None, "log disabled: %s" % (exc,)
    return sink, None


def log_fields(log):
    """``LOG`` reply fields of ``log`` = (sink or None, error or None): records, bytes, wraps, session, error."""
    sink, error = log
    if sink is None:
        return ["0", "0", "0", "0", (error or "no log").replace(",", ";")]
    return [str(sink.records), str(sink.bytes_written), str(sink.wraps), str(sink.session),
            (sink.error or "").replace(",", ";")]


def lockstep(link, stdin, log=(None, None)):
    """Host-driven time. Also answers ``STATS`` with the board's own timing of the tick lines that ran a tick
    (``T`` lines, signed or not; count, total us, max us on time.ticks_us): the runtime step cost on this board
    (recording included), and ``LOG`` with the ring log's counters (:func:`log_fields`)."""
    import time
    n = 0
    total_us = 0
    max_us = 0
    while True:
        line = stdin.readline()
        if not line:
            return
        cmd = line.strip()
        if cmd == b"EXIT":
            return
        if cmd == b"STATS":
            _write(ll.encode("STATS", [str(n), str(total_us), str(max_us)]))
            continue
        if cmd == b"LOG":
            if log[0] is not None:
                log[0].flush()
            _write(ll.encode("LOG", log_fields(log)))
            continue
        ticks = link.ticks
        t0 = time.ticks_us()
        replies = link.handle_line(line)
        if link.ticks != ticks:                 # a tick ran (signed or not); a refused line is no tick
            dt = time.ticks_diff(time.ticks_us(), t0)
            n += 1
            total_us += dt
            if dt > max_us:
                max_us = dt
        for reply in replies:
            _write(reply)


def run_realtime(board, machine, runtime, io, stdin):
    """Run mode: the node against MonotonicClock (time.ticks_us on MicroPython)."""
    from mp_drivers import Lsm6dsox
    i2c = machine.I2C(board.I2C_ID, scl=machine.Pin(board.PIN_I2C_SCL),
                      sda=machine.Pin(board.PIN_I2C_SDA), freq=board.I2C_FREQ_HZ)
    imu = Lsm6dsox(i2c, board.IMU_I2C_ADDR, board.IMU_AXES_FRD)
    poller = select.poll()
    poller.register(stdin, select.POLLIN)
    io.enable(imu, stdin, poller)
    clock = MonotonicClock()
    try:
        while True:
            runtime.run(clock, clock.now_us() + 1000000)
    finally:
        runtime.motors.stop(clock.now_us())


def run_board(board, machine=None):
    if machine is None:
        import machine
    gc.collect()
    runtime, link, io = build_app(board, machine)
    gc.collect()
    mem_free = gc.mem_free()
    _write(ll.encode("READY", [board.NAME, board.VERSION, str(mem_free)]))
    if mem_free < board.RAM_RESERVE_BYTES:
        _write(ll.encode("X", ["heap below reserve: %d < %d" % (mem_free, board.RAM_RESERVE_BYTES)]))
    log = start_log(board, runtime)
    try:
        serve(board, machine, runtime, link, io, log)
    finally:
        if log[0] is not None:
            log[0].close()


def serve(board, machine, runtime, link, io, log):
    """After ``READY``: lockstep when the host says so within ``board.HIL_WAIT_MS``, else run mode."""
    stdin = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
    first = None
    if select is not None and board.HIL_WAIT_MS > 0:
        p = select.poll()
        p.register(stdin, select.POLLIN)
        if p.poll(board.HIL_WAIT_MS):
            first = stdin.readline()
    if first is not None:
        if first.strip() == b"EXIT":
            return
        for reply in link.handle_line(first):
            _write(reply)
        if link.mode == "lockstep":
            lockstep(link, stdin, log)
            return
    if log[1]:
        _write(ll.encode("X", [log[1].replace(",", ";")]))
    from mp_drivers import ImuNotFound
    try:
        run_realtime(board, machine, runtime, io, stdin)
    except ImuNotFound as exc:
        # no IMU wired (or a simulated board): stay reachable for a hardware-in-the-loop host
        _write(ll.encode("X", [str(exc)]))
        lockstep(link, stdin, log)
