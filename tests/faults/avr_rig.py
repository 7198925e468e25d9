"""The AVR ground robot (boards.arduino.app.AvrGroundRobot + the real firmware in simavr), for the fault matrix.

The rig of tests/firmware (``harness.sim.avr_bridge.FilRig``: the Uno firmware ELF in simavr on a pty,
the host driver ``AvrRobotLink``, motors, encoders and the MPU-6050 emulated around the firmware) with
the host app on top, in lockstep at 1 ms: the firmware's telemetry feeds the app's IMU input, the
robot's true pose its aiding input (10 Hz), the app's wheel commands go over the link (through a
switch that can cut or corrupt them on the wire). "Driven" = a PWM compare register the firmware
writes is non-zero (read back from the simulated pins).
"""
import os

from boards.arduino import board as AVR
from boards.arduino.app import AvrGroundRobot
from harness.sim.avr_bridge import FilRig
from onboard.core.samples import PoseSample
from onboard.runtime import ground_robot

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POSE_PERIOD_US = 100000
CLOCK_JUMP_US = 5000000
REPLAY_FRAMES = 10                 # a replay attacker's recording: the last 10 genuine frames
CONTROL_RATE_HZ = 50
# what a command takes to reach the firmware and be acted on (tests/firmware/test_avr_fil.py): 10 bytes at
# 115200 baud (~0.9 ms), the lockstep window (1 ms), the firmware's check period (1.024 ms) + a step
WIRE_US = 1000 + 1100 + 1000


def signing_landed():
    return os.path.exists(os.path.join(REPO, "onboard", "comms", "siphash.py"))


class _Wire:
    """The app's motors: the AVR link, with the host->board wire cut (``mode`` "cut"), corrupted
    ("garbage": every frame replaced by bytes that are not a frame), forged ("forged": commands signed
    with a wrong key) or replayed ("replayed": a recording of genuine command frames sent again).
    ``tap``: the bytes of the genuine frames written (what a replay attacker records)."""

    def __init__(self, link, serial):
        self.link = link
        self.mode = "ok"
        self.dropped = 0
        self.n = 0
        self.tap = []
        self.forger = None
        write = serial.write

        def tapped(data):
            if self.mode == "ok":
                self.tap.append(bytes(data))
            return write(data)
        serial.write = tapped

    def _pass(self):
        if self.mode == "ok":
            return True
        self.dropped += 1
        self.n += 1
        if self.mode == "garbage":
            self.link.send_raw(bytes((7 * self.n + k) % 255 + 1 for k in range(11)) + b"\x00")
        elif self.mode == "replayed":
            self.link.send_raw(self.tap[len(self.tap) - REPLAY_FRAMES + self.n % REPLAY_FRAMES])
        return self.mode == "forged"

    def forge(self, on):
        """Swap the driver's signer for one with a wrong key (and back)."""
        if on:
            from boards.arduino.link_key import CommandSigner
            self.genuine = self.link.signer
            self.link.signer = CommandSigner(bytes(range(101, 117)), self.genuine.key_id,
                                             stamp_base=self.genuine.stamp_base, counter=self.genuine.counter)
            self.mode = "forged"
        elif self.mode == "forged":
            self.link.signer = self.genuine

    def command(self, wheel_cmd):
        return self.link.command(wheel_cmd) if self._pass() else None

    def stop(self, now_us):
        return self.link.stop(now_us) if self._pass() else None


class AvrRig:
    def __init__(self, tmp_path=None):
        self.rig = FilRig("uno", plant={"imu_model": "truth"})
        self.link = self.rig.link
        self.wire = _Wire(self.link, self.rig.serial)
        cfg = ground_robot.runtime_config({"control_rate_hz": CONTROL_RATE_HZ},
                                          1000000 // AVR.TELEMETRY_PERIOD_US, 1000000 // POSE_PERIOD_US,
                                          self.rig.robot.cfg, AVR.MAX_WHEEL_RADPS)
        self.records = []
        self.ticks = 0
        self.app = AvrGroundRobot([(20.0, 0.0)], self.link, cfg, motors=self.wire)
        self.app.record(lambda topic, t, msg: self.records.append(topic))
        self.next_us = 0
        self.pose_on = True
        self.pose_offset_us = 0
        self.poses = 0

    @property
    def t_us(self):
        return self.rig.t_us

    def close(self):
        self.rig.close()

    def advance(self, until_us, watch=None):
        rig = self.rig
        while rig.t_us < until_us:
            rig.step()
            t = rig.t_us
            if self.pose_on and t % POSE_PERIOD_US == 0:
                r = rig.robot
                self.poses += 1
                self.app.runtime.on_pose(PoseSample(t + self.pose_offset_us, (r.north_m, r.east_m, 0.0),
                                                    (0.0, 0.0, r.yaw_rad)))
            if t >= self.next_us:
                self.next_us = self.app.step(t)
                self.ticks += 1
            if watch is not None:
                watch(t)

    def driven(self):
        last = self.rig.bridge.last
        return last is not None and (last.ocr_left != 0 or last.ocr_right != 0)

    def bound_us(self, fault):
        cfg = ground_robot.DEFAULTS
        ctl = 1000000 // CONTROL_RATE_HZ
        if fault in ("link loss", "NaN/garbage input", "forged command", "replayed command"):
            return AVR.LINK_TIMEOUT_US + ctl + WIRE_US, "firmware LINK_TIMEOUT_US + 1 control period + wire"
        if fault == "sensor stale":
            return (cfg["imu_timeout_us"] + AVR.TELEMETRY_PERIOD_US + ctl + WIRE_US,
                    "imu_timeout_us + 1 tick + 1 control period + wire")
        if fault == "power cycle/reboot":
            return ctl + WIRE_US, "reset: motors off from boot until a command (1 control period + wire)"
        if fault == "clock jump":
            return (cfg["aiding_timeout_us"] + AVR.TELEMETRY_PERIOD_US + ctl + WIRE_US + POSE_PERIOD_US,
                    "aiding_timeout_us + 1 tick + 1 control period + wire + 1 pose period")
        raise KeyError(fault)

    def inject(self, fault, t_us):
        if fault == "link loss":
            self.wire.mode = "cut"
        elif fault == "NaN/garbage input":
            self.wire.mode = "garbage"
        elif fault == "forged command":
            self.wire.forge(True)
        elif fault == "replayed command":
            self.wire.mode = "replayed"
        elif fault == "sensor stale":
            self.rig.bridge.set_imu_present(False)
        elif fault == "power cycle/reboot":
            self.boots_before = self.link.boots
            self.link.reset_board(t_us)
        elif fault == "clock jump":
            # the pose source's clock steps 5 s ahead of the host's node, then the pose input is lost
            self.pose_offset_us += CLOCK_JUMP_US
            self.advance(t_us + POSE_PERIOD_US)
            self.pose_on = False

    def clear(self, fault, t_us):
        self.wire.forge(False)
        self.wire.mode = "ok"
        self.pose_on = True
        if fault == "sensor stale":
            self.rig.bridge.set_imu_present(True)

    def log_complete(self):
        """The host app's recording holds a /app/step per tick run, every pose on /app/in/aiding and a
        /app/out/wheels per drive output (command or stop)."""
        if self.records.count("/app/step") != self.ticks:
            return False, "ticks"
        if self.records.count("/app/in/aiding") != self.poses:
            return False, "poses"
        if self.records.count("/app/out/wheels") < self.app.runtime.stop_commands:
            return False, "wheel outputs"
        return True, "ticks, poses, wheel outputs"

    def firmware_status(self):
        """The firmware's STATUS (its own counters), asked for now (bounded wait of 30 ms)."""
        self.link.status = None
        self.link.request_status(self.t_us)
        end = self.t_us + 30000
        while self.link.status is None and self.t_us < end:
            self.advance(self.t_us + 1000)
        return self.link.status

    def extra(self, fault):
        st = self.firmware_status()
        c = self.link.counters()
        keys = ("rejected_commands", "transport_errors", "signed_commands")
        out = ", ".join("%s %s" % (k, c[k]) for k in keys if k in c)
        out += "; commands cut/corrupted %d; host failsafe %d; firmware boots %d" % (
            self.wire.dropped, self.app.node.failsafe.engage_count, self.link.boots)
        if st is not None and "sig_bad_tag" in st.fields:
            out += "; firmware refused: bad tag %d, replayed %d, unsigned %d" % (
                st.fields["sig_bad_tag"], st.fields["sig_replayed"], st.fields["sig_unsigned"])
        return out
