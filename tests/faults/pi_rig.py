"""The Pi ground robot (boards.rpi.app.RpiGroundRobot) on simulated hardware, for the fault matrix.

Real parts: the VESC driver (boards.rpi.vesc_motors) over pyserial on two simulated VESCs' ptys
(harness.sim.vesc), the MPU-6050 driver on a register-level simulated chip (harness.sim.i2c), the
UDP pose input (UdpPoseSource, loopback) behind a FrameVerifier (onboard.comms.signed_frame) whose
counter mark is persisted across a reboot. The robot stands on blocks: the pose says it stays at the
origin, the way-point is 10 m ahead, so it keeps driving until a fault stops it.
Lockstep at 1 kHz: VESC UART service and motor physics every 1 ms, the app's node at its deadlines.
"""
import json
import socket

from boards.rpi import board as C
from boards.rpi.app import RpiGroundRobot, UdpPoseSource
from boards.rpi.imu_mpu6050 import Mpu6050
from boards.rpi.vesc_motors import VescDiffDrive
from harness.sim.i2c import SimI2cBus, SimMpu6050
from harness.sim.vesc import MODE_BRAKE, MODE_NONE, SimVesc, SimVescPort
from onboard.comms.signed_frame import FrameSigner, FrameVerifier
from onboard.comms.transport import SerialTransport
from onboard.runtime import ground_robot

KEY = bytes(range(1, 17))
WRONG_KEY = bytes(range(101, 117))
STEP_US = 1000
TICK_US = 10000                     # the app node's base tick (IMU rate 100 Hz)
POSE_PERIOD_US = 100000
CLOCK_JUMP_US = 5000000
REPLAY_FRAMES = 10                 # a replay attacker's recording: the last 10 genuine frames
RUNTIME = {"imu_rate_hz": 100, "aiding_rate_hz": 10, "control_rate_hz": 50}


class PiRig:
    def __init__(self, tmp_path):
        self.sims = {"left": SimVesc({"controller_id": 1}), "right": SimVesc({"controller_id": 2})}
        self.ports = {"l": SimVescPort(self.sims["left"], link_path=str(tmp_path / "vesc_l")),
                      "r": SimVescPort(self.sims["right"], link_path=str(tmp_path / "vesc_r"))}
        self.motor_cfg = [{"name": "left", "link": "l", "controller_id": 1, "direction": 1},
                          {"name": "right", "link": "r", "controller_id": 2, "direction": -1}]
        self.bus = SimI2cBus()
        self.chip = self.bus.attach(C.MPU6050_I2C_ADDR, SimMpu6050())
        self.chip.set_motion((0.0, 0.0, -9.80665), (0.0, 0.0, 0.0))
        self.signer = FrameSigner(KEY)
        self.forger = FrameSigner(WRONG_KEY)
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.mark = 0                       # the verifier's persisted counter mark (survives a reboot)
        self.sent = []                      # every genuine datagram sent (what a replay attacker recorded)
        self.pose_mode = "good"
        self.clock_offset_us = 0            # the node's clock minus simulated time
        self.sender_offset_us = 0           # the pose sender's clock minus simulated time
        self.t_us = 0
        self.app = None
        self.pose = None
        self.records = []
        self.sessions = []                  # (app, pose source, records, ticks) per boot
        self._boot()

    # ------------------------------------------------------------ the app
    def _persist(self, mark):
        self.mark = mark

    def _boot(self):
        links = {name: (lambda p=p: SerialTransport(p.path).open()) for name, p in self.ports.items()}
        drv = VescDiffDrive(links, self.motor_cfg)
        self.verifier = FrameVerifier({0: KEY}, floor=self.mark, persist=self._persist)
        self.pose = UdpPoseSource(0, verifier=self.verifier)
        self.records = []
        self.ticks = [0]
        self.app = RpiGroundRobot([(10.0, 0.0)], drv, imu=Mpu6050(self.bus, C.MPU6050_I2C_ADDR, rate_hz=100),
                                  pose_source=self.pose, runtime_config=RUNTIME, start_us=self.now_us())
        self.app.record(lambda topic, t, msg: self.records.append(topic), time_us=self.now_us())
        self.app.start(self.now_us())
        self.next_us = self.now_us()
        self.sessions.append((self.app, self.pose, self.records, self.ticks))

    def _crash(self):
        """The Pi loses power: its process and sockets vanish, nothing is sent any more."""
        for link in self.app.motors.links.values():
            link.close()
        self.pose.close()
        self.app = None

    def now_us(self):
        return self.t_us + self.clock_offset_us

    def close(self):
        if self.app is not None:
            self._crash()
        for p in self.ports.values():
            p.close()
        self.tx.close()

    # ------------------------------------------------------------ inputs
    def _send_pose(self):
        msg = {"pos_ned_m": [0.0, 0.0, 0.0], "euler_rad": [0.0, 0.0, 0.0]}
        stamp = (self.t_us + self.sender_offset_us) // 10     # the sender's clock in 10 us units
        mode = self.pose_mode
        if mode == "off":
            return
        if mode == "replayed":
            data = self.sent[len(self.sent) - REPLAY_FRAMES + (self.t_us // POSE_PERIOD_US) % REPLAY_FRAMES]
        elif mode == "forged":
            data = self.forger.frame(json.dumps(msg).encode(), stamp)
        elif mode == "nan":
            bad = ('{"pos_ned_m": [NaN, 0.0, 0.0], "euler_rad": [0.0, 0.0, 0.0]}' if self.t_us % 200000
                   else "\x00garbage{[")
            data = self.signer.frame(bad.encode(), stamp)
        else:
            data = self.signer.frame(json.dumps(msg).encode(), stamp)
            self.sent.append(data)
        self.tx.sendto(data, ("127.0.0.1", self.pose.port))

    # ------------------------------------------------------------ running
    def advance(self, until_us, watch=None):
        while self.t_us < until_us:
            self.t_us += STEP_US
            for p in self.ports.values():
                p.service(self.t_us)
            for s in self.sims.values():
                s.step(STEP_US * 1e-6, self.t_us)
            if self.app is not None:
                if self.t_us % POSE_PERIOD_US == 0:
                    self._send_pose()
                now = self.now_us()
                if now >= self.next_us:
                    self.next_us = self.app.step(now)
                    self.ticks[0] += 1
            if watch is not None:
                watch(self.t_us)

    def driven(self):
        """A motor is driven: its VESC runs a speed/duty/current set-point (not released, not braking)."""
        for s in self.sims.values():
            if s.mode not in (MODE_NONE, MODE_BRAKE) and s.setpoint != 0.0:
                return True
        return False

    # ------------------------------------------------------------ faults
    def bound_us(self, fault):
        cfg = ground_robot.DEFAULTS
        # a stale input is seen at the first tick after its timeout, the drive stops at the next control
        # tick, the stop reaches the VESC at its next UART service
        extra = TICK_US + 1000000 // RUNTIME["control_rate_hz"] + STEP_US
        what = " + 1 tick + 1 control period + 1 UART service"
        if fault in ("link loss", "NaN/garbage input", "forged command", "replayed command"):
            return cfg["aiding_timeout_us"] + extra, "aiding_timeout_us" + what
        if fault == "sensor stale":
            return cfg["imu_timeout_us"] + extra, "imu_timeout_us" + what
        if fault == "clock jump":       # the pose is lost one pose period after the jump
            return (cfg["aiding_timeout_us"] + extra + POSE_PERIOD_US,
                    "aiding_timeout_us" + what + " + 1 pose period")
        if fault == "port vanishes and returns":
            return C.VESC_FW_TIMEOUT_US + STEP_US, "the unplugged VESC's own timeout (VESC_FW_TIMEOUT_US)"
        if fault == "power cycle/reboot":
            return C.VESC_FW_TIMEOUT_US + STEP_US, "VESC_FW_TIMEOUT_US (no keep-alive from a dead Pi)"
        raise KeyError(fault)

    def inject(self, fault, t_us):
        if fault == "link loss":
            self.pose_mode = "off"
        elif fault == "sensor stale":
            self.bus.fail_next = 1 << 40
        elif fault == "NaN/garbage input":
            self.pose_mode = "nan"
        elif fault == "forged command":
            self.pose_mode = "forged"
        elif fault == "replayed command":
            self.pose_mode = "replayed"
        elif fault == "port vanishes and returns":
            self.ports["l"].unplug()
        elif fault == "power cycle/reboot":
            self._crash()
        elif fault == "clock jump":
            # the pose sender's clock (its frames' counters) steps 5 s ahead, then the pose input is lost
            self.sender_offset_us += CLOCK_JUMP_US
            self.advance(t_us + POSE_PERIOD_US)
            self.pose_mode = "off"

    def clear(self, fault, t_us):
        self.pose_mode = "good"
        self.bus.fail_next = 0
        if fault == "port vanishes and returns":
            self.ports["l"].plug()
        elif fault == "power cycle/reboot":
            self._boot()
            # a recording of genuine frames from before the reboot, sent to the new boot: all refused
            for data in self.sent[-REPLAY_FRAMES:]:
                self.tx.sendto(data, ("127.0.0.1", self.pose.port))

    def log_complete(self):
        """Every boot's recording holds a /app/step per tick run, every accepted pose on /app/in/aiding,
        and a /app/out/wheels per drive output (command or stop)."""
        for app, pose, records, ticks in self.sessions:
            drive = app.runtime.drive
            wheels = records.count("/app/out/wheels")
            if records.count("/app/step") != ticks[0]:
                return False, "ticks"
            if records.count("/app/in/aiding") != pose.received:
                return False, "poses"
            if wheels == 0 or wheels < drive.stop_commands:
                return False, "wheel outputs"
        return True, "ticks, poses, wheel outputs"

    def extra(self, fault):
        c = self.verifier.counts
        return "pose accepted %d, bad_tag %d, replayed %d, malformed %d, rejected %d; failsafe %d" % (
            c["accepted"], c["bad_tag"], c["replayed"], c["malformed"], self.pose.rejected,
            self.app.node.failsafe.engage_count)
