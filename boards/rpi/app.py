"""The Raspberry Pi ground-robot application: a recipe of parts on one Node.

The node runs on whatever clock it is given (the Pi's monotonic clock in the service,
the harness's SimClock in scenarios). Its parts:

- ``imu`` (io, imu_rate_hz): read the IMU driver -> the estimation's ``on_imu``
- ``pose`` (io, pose_poll_hz): read the pose source, if any -> ``on_pose``
- the ground robot's parts (:mod:`onboard.runtime.ground_robot`): ``estimation``
  (``predict``, ``aiding``), ``drive`` (``control`` -> ``motors.command`` / ``motors.stop``)
- ``motors`` (telemetry_rate_hz): VESC telemetry, keep-alive, reconnects; the driver's
  fault set enters through the entry point ``motor_faults`` whenever it changes
  (:class:`onboard.runtime.fault_monitor.FaultMonitor`): faults engage the node's failsafe
  (reason ``motors:<fault>``) so the robot is stopped, and clear it when they clear (a link
  that comes back).

Everything that enters the app from outside passes an entry point (IMU and pose samples the
estimation's ``imu`` / ``aiding``, fault sets ``motor_faults``, mission commands ``mission``), so
:meth:`RpiGroundRobot.record` (app ``"rpi_ground_robot"``) records what ``python -m harness replay``
needs to re-run it exactly.

``shutdown(now_us)`` releases the motors, logs ``/shutdown`` and closes the log.
"""
import ipaddress
import json
import socket

from onboard.core.samples import PoseSample, SampleError
from onboard.core.settings import checked
from onboard.runtime.fault_monitor import FaultMonitor
from onboard.runtime import ground_robot
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.node import Node
from onboard.runtime.polling import ImuPoll, PosePoll

FAULT_PREFIX = "motors:"


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(host):
    """Whether ``host`` names this machine only: ``localhost``, or an address (not a host name, which could
    resolve anywhere) in 127.0.0.0/8 (dotted, also the short forms such as ``127.1``) or ``::1``."""
    if not isinstance(host, str):
        return False
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if host and all(c.isdigit() or c == "." for c in host) and host.isascii():
        try:
            return socket.inet_aton(host)[0] == 127          # 127.1 and the other forms bind() takes
        except OSError:
            return False
    return False


class UnsafeInputError(ValueError):
    """A network input that would let anyone on the robot's network steer it (one line)."""


class UdpPoseSource:
    """External pose (mocap, UWB, GNSS bridge) as JSON datagrams on UDP, stamped on receipt.

    Datagram: ``{"pos_ned_m": [n, e, d], "euler_rad": [roll, pitch, yaw],
    "cov_pos_m2": [..3], "cov_att_rad2": [..3]}`` (covariances optional), inside a signed frame
    (:mod:`onboard.comms.signed_frame`) when ``verifier`` is given: unsigned, forged, replayed or
    reordered datagrams are then dropped and counted by the verifier (``verifier.counts``); a frame whose
    counter mark cannot be saved (``persist`` raises OSError: disk full) is dropped and counted in
    ``rejected`` and ``mark_errors``.
    Malformed datagrams (bad JSON, wrong shapes, NaN/inf) are counted in ``rejected`` and dropped.
    Binds loopback unless ``host`` says otherwise, and a non-loopback ``host`` needs a verifier
    (UnsafeInputError): an unsigned pose input is for a bridge on the robot itself.
    """

    def __init__(self, port, host="127.0.0.1", verifier=None):
        if verifier is None and not is_loopback(host):
            raise UnsafeInputError("refusing an unsigned pose input on %s: anyone on that network could steer the "
                                   "robot; give it a key (pose.key_file) or bind 127.0.0.1" % (host,))
        self.verifier = verifier
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.received = 0
        self.rejected = 0
        self.mark_errors = 0                    # signed frames dropped because the counter mark was not saved
        self.last_mark_error = ""

    def poll(self, now_us):
        out = []
        for _ in range(64):
            try:
                data = self.sock.recv(4096)
            except (BlockingIOError, InterruptedError):
                break
            if self.verifier is not None:
                try:
                    data = self.verifier.open(data)
                except OSError as exc:
                    # the counter mark could not be saved (disk full or failing): the frame is not accepted
                    # and the verifier is unchanged (signed_frame.FrameVerifier.open); the service runs on
                    self.rejected += 1
                    self.mark_errors += 1
                    self.last_mark_error = str(exc)
                    continue
                if data is None:                # counted by the verifier
                    self.rejected += 1
                    continue
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
                 follower_config=None, log=None, telemetry_rate_hz=50, pose_poll_hz=50, start_us=0,
                 estimator=None):
        self.log = log
        self.motors = motors
        self.imu = imu
        self.pose_source = pose_source
        cfg = checked(ground_robot.DEFAULTS, ground_robot.SETTING_RANGES, runtime_config, "RpiGroundRobot runtime")
        self.node = Node("rpi_ground_robot", latching_failsafe=cfg["latching_failsafe"], start_us=start_us, log=log)
        self.runtime = GroundRobotRuntime(waypoints_ne_m, motors, cfg, follower_config=follower_config,
                                          estimator=estimator, node=self.node)
        self.telemetry_rate_hz = telemetry_rate_hz
        self.pose_poll_hz = pose_poll_hz
        self.start_us = start_us
        self.imu_poll = None
        if imu is not None:
            self.imu_poll = self.node.add("imu", ImuPoll(imu, cfg["imu_rate_hz"], self.runtime.on_imu))
        if pose_source is not None:
            self.node.add("pose", PosePoll(pose_source, pose_poll_hz, self.runtime.on_pose))
        self.faults = self.node.add("motors", FaultMonitor(motors, telemetry_rate_hz, prefix=FAULT_PREFIX))
        self.sync_faults = self.faults.sync_faults
        self.step = self.node.step
        self.run = self.node.run
        self.shut_down = False

    @property
    def scheduler(self):
        return self.node.start()

    @property
    def fault_events(self):
        return self.faults.fault_events

    @property
    def imu_errors(self):
        return self.imu_poll.imu_errors if self.imu_poll is not None else 0

    # ------------------------------------------------------------ recording at the boundary
    APP = "rpi_ground_robot"

    def recipe_config(self):
        """What rebuilds this app (``harness replay``): the ground robot's recipe
        (:meth:`GroundRobotRuntime.recipe_config`: way-points, runtime, follower, estimator) plus the
        Pi app's own settings: ``telemetry_rate_hz``, ``pose_poll_hz`` (Hz), ``start_us`` and whether
        it polls an IMU (``has_imu``) and a pose source (``has_pose_source``)."""
        out = self.runtime.recipe_config()
        out["rpi"] = {"telemetry_rate_hz": self.telemetry_rate_hz, "pose_poll_hz": self.pose_poll_hz,
                      "start_us": self.start_us, "has_imu": self.imu is not None,
                      "has_pose_source": self.pose_source is not None}
        return out

    def record(self, sink, code_version="", time_us=0):
        """Record the app at its boundary into ``sink(topic, time_us, msg)``
        (:meth:`onboard.runtime.node.Node.record`)."""
        self.node.record(sink, self.APP, self.recipe_config(), code_version, time_us)

    # ------------------------------------------------------------ running
    def start(self, now_us):
        self.motors.start(now_us)
        if self.imu is not None and not getattr(self.imu, "initialized", True):
            self.imu.init()

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
