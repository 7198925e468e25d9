"""The Raspberry Pi ground-robot application: runtime + VESC motors + IMU + pose source.

One scheduler, driven by whatever clock it is given (the Pi's monotonic clock in
the service, the harness's SimClock in scenarios), runs in each base tick:

- ``imu`` (imu_rate_hz): read the IMU driver -> ``runtime.on_imu``
- ``pose`` (pose_poll_hz): read the pose source, if any -> ``runtime.on_pose``
- ``runtime`` (the runtime's base rate): ``GroundRobotRuntime.step`` (estimator,
  watchdog, way-point control -> ``motors.command`` / ``motors.stop``)
- ``motors`` (telemetry_rate_hz): VESC telemetry, keep-alive, reconnects; the
  driver's faults engage the runtime's failsafe (reason ``motors:<fault>``) so the
  robot is stopped, and clear it when they clear (a link that comes back).

``shutdown(now_us)`` releases the motors, logs ``/shutdown`` and closes the log.
"""
import json
import socket

from onboard.core.samples import PoseSample, SampleError
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.scheduler import Scheduler

FAULT_PREFIX = "motors:"


class UdpPoseSource:
    """External pose (mocap, UWB, GNSS bridge) as JSON datagrams on UDP, stamped on receipt.

    Datagram: ``{"pos_ned_m": [n, e, d], "euler_rad": [roll, pitch, yaw],
    "cov_pos_m2": [..3], "cov_att_rad2": [..3]}`` (covariances optional). Malformed
    datagrams (bad JSON, wrong shapes, NaN/inf) are counted in ``rejected`` and dropped.
    """

    def __init__(self, port, host="0.0.0.0"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.received = 0
        self.rejected = 0

    def poll(self, now_us):
        out = []
        for _ in range(64):
            try:
                data = self.sock.recv(4096)
            except (BlockingIOError, InterruptedError):
                break
            try:
                msg = json.loads(data.decode("utf-8"))
                s = PoseSample(now_us, msg["pos_ned_m"], msg["euler_rad"], msg.get("cov_pos_m2"),
                               msg.get("cov_att_rad2"))
            except (ValueError, KeyError, TypeError, AttributeError, SampleError):
                self.rejected += 1
                continue
            if not s.is_finite():
                self.rejected += 1
                continue
            self.received += 1
            out.append(s)
        return out

    def close(self):
        self.sock.close()


class RpiGroundRobot:
    def __init__(self, waypoints_ne_m, motors, imu=None, pose_source=None, runtime_config=None,
                 follower_config=None, log=None, telemetry_rate_hz=50, pose_poll_hz=50, start_us=0):
        self.log = log
        self.motors = motors
        self.imu = imu
        self.pose_source = pose_source
        self.runtime = GroundRobotRuntime(waypoints_ne_m, motors, runtime_config,
                                          follower_config=follower_config, log=log, start_us=start_us)
        base_hz = self.runtime.scheduler.base_rate_hz
        groups = []
        if imu is not None:
            groups.append(("imu", self.runtime.cfg["imu_rate_hz"], self._imu))
        if pose_source is not None:
            groups.append(("pose", pose_poll_hz, self._pose))
        groups.append(("runtime", base_hz, self.runtime.step))
        groups.append(("motors", telemetry_rate_hz, self._motors))
        self.scheduler = Scheduler(groups)
        self._fault_reasons = set()
        self.fault_events = []            # (time_us, "engaged"/"cleared", reason)
        self.imu_errors = 0
        self.shut_down = False

    # ------------------------------------------------------------ rate groups
    def _imu(self, now_us):
        s = self.imu.read(now_us)
        if s is None:
            self.imu_errors += 1
            return
        self.runtime.on_imu(s)
        if self.log is not None:
            self.log("/imu", now_us, s)

    def _pose(self, now_us):
        for s in self.pose_source.poll(now_us):
            self.runtime.on_pose(s)
            if self.log is not None:
                self.log("/aiding/pose", now_us, s)

    def _motors(self, now_us):
        self.motors.poll(now_us)
        self.sync_faults(now_us)

    def sync_faults(self, now_us):
        """Mirror the motor driver's faults into the runtime's failsafe."""
        now = set(FAULT_PREFIX + f for f in self.motors.faults())
        failsafe = self.runtime.failsafe
        for reason in sorted(now - self._fault_reasons):
            failsafe.engage(reason, now_us)
            self.fault_events.append((now_us, "engaged", reason))
            if self.log is not None:
                self.log("/faults", now_us, {"time_us": now_us, "event": "engaged", "reason": reason})
        for reason in sorted(self._fault_reasons - now):
            failsafe.clear(reason)
            self.fault_events.append((now_us, "cleared", reason))
            if self.log is not None:
                self.log("/faults", now_us, {"time_us": now_us, "event": "cleared", "reason": reason})
        self._fault_reasons = now

    # ------------------------------------------------------------ running
    def start(self, now_us):
        self.motors.start(now_us)
        if self.imu is not None and not getattr(self.imu, "initialized", True):
            self.imu.init()

    def step(self, now_us):
        """Run the groups due at this tick; returns the next deadline (us)."""
        return self.scheduler.step(now_us)

    def run(self, clock, until_us):
        return self.scheduler.run(clock, until_us)

    def shutdown(self, now_us, reason="shutdown"):
        """Motors released (SetCurrent 0), last words logged, log closed by the caller's closer."""
        if self.shut_down:
            return
        reached = self.motors.shutdown(now_us)
        self.shut_down = True
        if self.log is not None:
            self.log("/shutdown", now_us, {"time_us": now_us, "reason": reason,
                                           "motors_released": reached,
                                           "report": json.dumps(self.report(), default=str)})

    def report(self):
        return {"runtime": self.runtime.report(), "motors": self.motors.report(),
                "imu_errors": self.imu_errors,
                "fault_events": [list(e) for e in self.fault_events]}
