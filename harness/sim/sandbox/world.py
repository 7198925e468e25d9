"""One Sandbox experiment (Cook thesis 5.1.4): one tracked robot on one tileable terrain, stepped frame by
frame; a frame is ``substeps`` robot substeps (contact, traction, sinkage, bulldozing) of
``frame_dt_us / substeps`` each, then erosion of the whole terrain to the angle of repose. With the terrain's
default contact test ("mesh", :mod:`harness.sim.sandbox.terrain`) every substep also ray-casts every cell of
the map against each track, as the thesis's SCM did at every step, so a frame's cost grows with the map.

Commands are the thesis's desired linear speed l and yaw rate (NED: positive turns right), mapped to
sprocket speeds by the skid-steer kinematics of thesis 5.1.2 (:func:`onboard.control.diffdrive.wheel_speeds`,
saturating together at the vehicle's ``max_sprocket_radps``). A command holding NaN or inf is rejected: the
frame runs on the sprocket commands held, and the robot counts it (``robot.rejected_commands``).

Wrap-around: a robot whose centre leaves the tile is teleported to the opposite side (position modulo the
tile); the frame is flagged ``teleport`` (its absolute position jumps; the pose deltas, taken from the motion
itself, do not).
"""
import math

from harness.sim.sandbox.terrain import wrap_into_tile
from harness.sim.sandbox.tracked_robot import MAX_SUBSTEP_US, TrackedRobot
from onboard.control.diffdrive import wheel_speeds


def wrap_angle(a):
    return math.atan2(math.sin(a), math.cos(a))


class SandboxWorld:
    """``terrain`` a :class:`harness.sim.sandbox.terrain.TileTerrain`; start pose (north, east in m, yaw in
    rad); ``vehicle``/``soil`` settings of :class:`TrackedRobot`. ``now_us`` the simulated time."""

    def __init__(self, terrain, north_m, east_m, yaw_rad, vehicle=None, soil=None, frame_dt_us=10000, substeps=10,
                 erosion_iterations=None):
        if frame_dt_us <= 0 or substeps < 1 or frame_dt_us % substeps:
            raise ValueError("frame_dt_us (%r) must be a positive multiple of substeps (%r)" % (frame_dt_us, substeps))
        if frame_dt_us > MAX_SUBSTEP_US * substeps:
            raise ValueError("frame_dt_us / substeps (%r / %r) must be at most %d us: the robot's integration is not "
                             "stable at longer substeps (tracked_robot)" % (frame_dt_us, substeps, MAX_SUBSTEP_US))
        if not all(math.isfinite(float(v)) for v in (north_m, east_m, yaw_rad)):
            raise ValueError("the start pose must be finite, got north %r m, east %r m, yaw %r rad"
                             % (north_m, east_m, yaw_rad))
        self.terrain = terrain
        size_n, size_e = terrain.size_ne_m
        self.robot = TrackedRobot(terrain, wrap_into_tile(north_m, size_n), wrap_into_tile(east_m, size_e), yaw_rad,
                                  vehicle, soil)
        self.frame_dt_us = int(frame_dt_us)
        self.substeps = int(substeps)
        self.erosion_iterations = erosion_iterations
        self.now_us = 0
        self.frames = 0
        self.teleports = 0
        self.moved_m3 = 0.0

    def frame(self, speed_mps, yaw_rate_radps):
        """Advance one frame under the command (l in m/s, yaw rate in rad/s, NED); returns the frame's record:
        ``dx_body_m``, ``dy_body_m`` (displacement forward/right in the robot frame at the frame's start),
        ``dyaw_rad``, ``dnorth_m``, ``deast_m`` (world frame), the sprocket speeds commanded and reached
        (rad/s), pitch, roll (rad), slip per track, sinkage (m), ``teleport``."""
        r = self.robot
        cfg = r.cfg
        left_cmd, right_cmd = wheel_speeds(speed_mps, yaw_rate_radps, cfg["track_gauge_m"], cfg["sprocket_radius_m"],
                                           cfg["max_sprocket_radps"])
        r.command(left_cmd, right_cmd)
        n0, e0, yaw0 = r.north_m, r.east_m, r.yaw_rad
        dt_s = self.frame_dt_us * 1e-6 / self.substeps
        for _ in range(self.substeps):
            self.moved_m3 += r.step(dt_s)
        self.terrain.erode(self.erosion_iterations)
        dn, de = r.north_m - n0, r.east_m - e0
        size_n, size_e = self.terrain.size_ne_m
        teleport = not (0.0 <= r.north_m < size_n and 0.0 <= r.east_m < size_e)
        if teleport:
            r.north_m = wrap_into_tile(r.north_m, size_n)
            r.east_m = wrap_into_tile(r.east_m, size_e)
            self.teleports += 1
        c, s = math.cos(yaw0), math.sin(yaw0)
        self.now_us += self.frame_dt_us
        self.frames += 1
        return {
            "dx_body_m": c * dn + s * de, "dy_body_m": -s * dn + c * de, "dyaw_rad": wrap_angle(r.yaw_rad - yaw0),
            "dnorth_m": dn, "deast_m": de,
            "left_cmd_radps": r.cmd_left_radps, "right_cmd_radps": r.cmd_right_radps,
            "left_radps": r.left_mps / r.radius_m, "right_radps": r.right_mps / r.radius_m,
            "pitch_rad": r.pitch_rad, "roll_rad": r.roll_rad,
            "slip_left": r.slip[0], "slip_right": r.slip[1], "sinkage_m": r.sinkage_m, "teleport": teleport,
        }
