"""The MicroPython board app (boards/mp_common/mp_app.py) on CPython, in its run mode, for the fault matrix.

Built by the board app's own ``build_app(board, machine)`` (the ground robot's parts, the PWM motor
driver ``mp_drivers.DiffDrivePwm`` on the virtual board's simulated ``machine`` pins, the board's io part
``BoardIo`` and the signed line link ``LinkRuntime`` with the verifier of ``link_auth``: key and counter
mark in files, as on the board's flash). Run mode as on the board: the node ticks on the board's clock,
its io part reads the IMU (a simulated chip at the driver interface: ``read()`` and the SI values; a
failing chip raises OSError there, as the real driver's I2C read does) and the waiting serial lines each
tick; the host sends signed ``P`` lines at 10 Hz. The robot stands on blocks: pose at the origin,
way-point 2 m ahead. Motors "driven" = a PWM duty register above 0.
"""
import importlib.util
import os
import sys
import types

from onboard.comms import line_link as ll
from onboard.comms.signed_frame import FrameSigner
from onboard.core.samples import PoseSample
from onboard.runtime import ground_robot

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = bytes(range(1, 17))
WRONG_KEY = bytes(range(101, 117))
TICK_US = 10000                     # the board's base tick (IMU_RATE_HZ 100)
POSE_PERIOD_US = 100000
CLOCK_JUMP_US = 5000000
REPLAY_FRAMES = 10                 # a replay attacker's recording: the last 10 genuine frames


def _source_module(name, path, replace=()):
    with open(path) as fh:
        src = fh.read()
    for a, b in replace:
        src = src.replace(a, b)
    mod = types.ModuleType(name)
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


CONST = ("from micropython import const", "const = lambda x: x")


def _load():
    """(board constants, machine shim, mp_drivers, mp_app) as CPython modules (``const`` is the identity)."""
    board = _source_module("pico_board", os.path.join(REPO, "boards", "pico_rp2040", "board.py"), [CONST])
    machine = _source_module("vboard_machine", os.path.join(REPO, "harness", "sim", "virtual_board", "frozen",
                                                            "machine.py"))
    drivers = _source_module("mp_drivers", os.path.join(REPO, "boards", "mp_common", "mp_drivers.py"), [CONST])
    spec = importlib.util.spec_from_file_location("faults_mp_app", os.path.join(REPO, "boards", "mp_common",
                                                                               "mp_app.py"))
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    return board, machine, drivers, app


class LineQueue:
    """The board's USB serial as BoardIo sees it: ``readline()`` and a poller's ``poll(0)``."""

    def __init__(self):
        self.lines = []

    def readline(self):
        return self.lines.pop(0) if self.lines else b""

    def poll(self, timeout_ms):
        return len(self.lines) > 0


class SimImu:
    """The board's IMU at its driver interface (what ``mp_drivers.Lsm6dsox`` gives BoardIo): standing still.
    ``failing``: the I2C read raises OSError, as the real driver's does when the chip stops answering."""

    def __init__(self):
        self.accel_frd_mps2 = [0.0, 0.0, -9.80665]
        self.gyro_frd_radps = [0.0, 0.0, 0.0]
        self.failing = False
        self.reads = 0

    def read(self):
        if self.failing:
            raise OSError(5, "I2C bus error (simulated)")
        self.reads += 1


class MpRig:
    def __init__(self, tmp_path):
        self.board_mod, self.machine, self.drivers, self.mp_app = _load()
        self.key_path = str(tmp_path / "link.key")
        with open(self.key_path, "w") as fh:
            fh.write(KEY.hex())
        self.mark_path = str(tmp_path / "link.ctr")
        self.signer = FrameSigner(KEY)
        self.forger = FrameSigner(WRONG_KEY)
        self.sent = []
        self.pose_mode = "good"
        self.host_offset_us = 0          # the host's clock (stamps of P lines) minus the board's
        self.t_us = 0
        self.imu = SimImu()
        self.sessions = []
        self._boot()

    def _board(self):
        b = types.SimpleNamespace(**{k: getattr(self.board_mod, k) for k in dir(self.board_mod) if k.isupper()})
        b.LINK_KEY_PATH = self.key_path
        b.LINK_MARK_PATH = self.mark_path
        return b

    def _boot(self):
        saved = sys.modules.get("mp_drivers")
        sys.modules["mp_drivers"] = self.drivers     # build_app imports it by its board-side name
        try:
            self.runtime, self.link, self.io = self.mp_app.build_app(self._board(), self.machine)
        finally:
            if saved is None:
                del sys.modules["mp_drivers"]
            else:
                sys.modules["mp_drivers"] = saved
        self.stdin = LineQueue()
        self.io.enable(self.imu, self.stdin, self.stdin)
        self.records = []
        self.ticks = [0]
        self.runtime.node.record(lambda topic, t, msg: self.records.append(topic), self.mp_app.APP_NAME,
                                 self.runtime.recipe_config(), "faults", self.t_us)
        self.replies = []
        self.alive = True
        self.exit_reason = None
        self.sessions.append((self.runtime, self.link, self.records, self.ticks))

    def close(self):
        pass

    # ------------------------------------------------------------ the host's lines
    def _pose_line(self):
        t = self.t_us + self.host_offset_us
        mode = self.pose_mode
        if mode == "off":
            return None
        if mode == "replayed":
            return self.sent[len(self.sent) - REPLAY_FRAMES + (self.t_us // POSE_PERIOD_US) % REPLAY_FRAMES]
        line = ll.encode("P", ll.pose_fields(PoseSample(t, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))))
        if mode == "nan":
            if self.t_us % 200000:
                line = ll.encode("P", ll.pose_fields(PoseSample(t, (float("nan"), 0.0, 0.0), (0.0, 0.0, 0.0))))
            else:
                line = b"\x00garbage,,*12\n"
        signer = self.forger if mode == "forged" else self.signer
        out = ll.sign_line(signer, line, stamp=t // 10)
        if mode == "good":
            self.sent.append(out)
        return out

    # ------------------------------------------------------------ running
    def advance(self, until_us, watch=None):
        while self.t_us < until_us:
            self.t_us += TICK_US
            if self.alive:
                if self.t_us % POSE_PERIOD_US == 0:
                    line = self._pose_line()
                    if line is not None:
                        self.stdin.lines.append(line)
                self._tick()
            if watch is not None:
                watch(self.t_us)

    def _tick(self):
        replies = []
        self.mp_app._write = replies.append          # BoardIo writes its replies to the serial link
        try:
            self.runtime.step(self.t_us)
            self.ticks[0] += 1
        except (OSError, KeyboardInterrupt) as exc:
            # run_realtime's ``finally``: the motors are stopped and the app returns to the REPL
            self.runtime.motors.stop(self.t_us)
            self.alive = False
            self.exit_reason = "%s: %s" % (type(exc).__name__, exc)
        self.replies.extend(replies)

    def driven(self):
        m = self.runtime.motors
        return m.pwm_left.duty_u16() > 0 or m.pwm_right.duty_u16() > 0

    # ------------------------------------------------------------ faults
    def bound_us(self, fault):
        cfg = ground_robot.DEFAULTS
        b = self.board_mod
        extra = TICK_US + 1000000 // b.CONTROL_RATE_HZ
        what = " + 1 tick + 1 control period"
        if fault == "clock jump":       # the link is lost one pose period after the jump
            return cfg["aiding_timeout_us"] + extra + POSE_PERIOD_US, "aiding_timeout_us" + what + " + 1 pose period"
        if fault in ("link loss", "NaN/garbage input", "forged command", "replayed command",
                     "port vanishes and returns"):
            return cfg["aiding_timeout_us"] + extra, "aiding_timeout_us" + what
        if fault == "sensor stale":
            return cfg["imu_timeout_us"] + extra, "imu_timeout_us" + what
        if fault == "power cycle/reboot":
            return TICK_US, "power cut: the PWM outputs go low with the board; seen at the next tick"
        raise KeyError(fault)

    def inject(self, fault, t_us):
        if fault in ("link loss", "port vanishes and returns"):
            self.pose_mode = "off"
        elif fault == "sensor stale":
            self.imu.failing = True
        elif fault == "NaN/garbage input":
            self.pose_mode = "nan"
        elif fault == "forged command":
            self.pose_mode = "forged"
        elif fault == "replayed command":
            self.pose_mode = "replayed"
        elif fault == "power cycle/reboot":
            self.runtime.motors.pwm_left.deinit()     # power cut: the PWM outputs go low with the board
            self.runtime.motors.pwm_right.deinit()
            self.alive = False
        elif fault == "clock jump":
            # the host's clock steps 5 s ahead (its P lines carry its time), then the link is lost
            self.host_offset_us += CLOCK_JUMP_US
            self.advance(t_us + POSE_PERIOD_US)
            self.pose_mode = "off"

    def clear(self, fault, t_us):
        self.pose_mode = "good"
        self.imu.failing = False
        if fault == "power cycle/reboot":
            self._boot()
            for line in self.sent[-REPLAY_FRAMES:]:              # a recording from before the reboot: all refused
                self.stdin.lines.append(line)

    def log_complete(self):
        """Every boot's recording holds a /app/step per tick run, every accepted P line on /app/in/aiding
        and a /app/out/wheels per drive output (command or stop)."""
        for runtime, link, records, ticks in self.sessions:
            if records.count("/app/step") != ticks[0]:
                return False, "ticks"
            accepted = link.verifier.counts["accepted"] - link.bad_lines
            if records.count("/app/in/aiding") < accepted - runtime.rejected_samples:
                return False, "poses"
            if records.count("/app/out/wheels") < runtime.stop_commands:
                return False, "wheel outputs"
        return True, "ticks, poses, wheel outputs"

    def extra(self, fault):
        c = self.link.verifier.counts
        out = "lines accepted %d, bad_tag %d, replayed %d, bad lines %d, rejected samples %d; failsafe %d" % (
            c["accepted"], c["bad_tag"], c["replayed"], self.link.bad_lines, self.runtime.rejected_samples,
            self.runtime.node.failsafe.engage_count)
        io = self.io.report()
        if io["imu_errors"]:
            reported = sum(1 for r in self.replies if r.startswith(b"X,imu read failed"))
            out += "; IMU read errors %d in %d outage(s), %d reported on the link" % (
                io["imu_errors"], io["imu_outages"], reported)
        if self.exit_reason:
            out += "; app exited (%s)" % self.exit_reason
        return out
