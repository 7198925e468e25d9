"""The WAM-V boat app (RobotX AAVS paper, section III): a recipe of parts on one ``onboard.runtime.node.Node``.

Parts and rate groups (``boards.wamv.board`` rates):

- ``gnss`` (io, GNSS_POLL_HZ): NMEA GGA over serial (``onboard.comms.nmea``) -> local NED fixes
  (``PositionSample``) -> entry ``gnss``;
- entries ``heading`` (``HeadingSample``: magnetometer / INS yaw) and ``yaw_rate`` (``YawRateSample``:
  the IMU's gyro z), called by their drivers (or the harness's simulated sensors);
- ``estimation`` (BASE_RATE_HZ): the boat EKF (``onboard.estimators.boat_ekf``) predicting with the
  thrusts the app's thrust map gives for its own commands (output ``thrust``: the ThrustSample held over
  the tick, ``onboard.vessel.log_topics``), fusing the entries' samples; bad samples counted;
- ``control`` (CONTROL_RATE_HZ): outboard telemetry (``VescOutboards.poll`` -> entry ``outboard``) and the
  heading/speed controller (``onboard.control.heading_speed``) following the legs of ``plan``
  (``[[duration_s, heading_deg, speed_mps], ...]``, repeated) -> ``VescOutboards.command``;
- ``safety`` (BASE_RATE_HZ): while the failsafe is engaged, both outboards are stopped (SetCurrent 0)
  at once and then at every control period;
- ``arbiter`` (only with an ``arbiter`` setting, "damn" | "potential_field"): the control group's reference
  comes from ``onboard.vessel.arbiters_part.ArbiterPart`` (entries ``destination``, ``obstacles`` unless the
  perception part's confirmed buoys supply them) instead of ``plan``; ``arbiter_config``: the arbiter's
  settings plus the part's (``arrive_radius_m``, ``obstacle_tolerance_m``, ``destination_tolerance_m``:
  the obstacles and destination are replaced, and DAMN's cost-to-go grid computed again, only when they
  move by more than these);
- ``perception`` (only with a ``perception`` setting, a dict of ``onboard.vessel.buoy_perception`` settings;
  group at ``perception_rate_hz``): entry ``lidar`` (``LidarFrame``: a stamped sweep, body frame) held with
  the EKF's estimated pose at its arrival, then clustered into the buoy map
  (``onboard.vessel.buoy_perception.PerceptionPart``; output ``buoys`` while recording);
- ``mission`` (only with a ``mission`` setting, which needs ``perception`` and ``arbiter``: the task list,
  the start, the planner's settings, the hydrophones' body positions and the pinger locator's settings as
  plain data, ``onboard.vessel.mission_part.settings``): entry ``ping`` (``PingSample``: a ping's time
  differences) held with the EKF's pose; the rate group ``mission`` labels the perceived buoys, locates the
  pinger, runs the mission planner and gives the arbiter the confirmed buoys and its destination
  (``onboard.vessel.mission_part.MissionPart``; output ``mission`` while recording). With ``perception``,
  ``arbiter`` and ``mission`` set the app alone runs the RobotX mission (scenario ``robotx-course``);
- ``views`` (only with a ``view(topic, time_us, schema_name, msg)`` callable, e.g. ``McapLog.log_view``, and the
  ``views`` setting on, its default; group at ``view_rate_hz``): "what the vehicle was thinking" (RobotX AAVS
  fig. 11) as Foxglove views under ``/viz/boat/``: the estimate, the last LIDAR sweep as placed by perception,
  the buoy map, DAMN's vote grid or the potential field, the destination and the commands
  (``onboard.vessel.boat_views``). They only read the app's state: the outputs are the same without them.

Watched inputs (the node's watchdog, checked every base tick): ``gnss``, ``imu`` (yaw rate), ``heading``
(the compass / INS yaw), ``outboard_left``, ``outboard_right`` (telemetry replies): a stale one engages the
failsafe, so both thrusters are stopped within one base period of the timeout (the run scenario ``boat-hil-lag`` measures
the time from a cut link to both thrusters at zero).

Recording (``record``): ``/app/in/gnss``, ``/app/in/heading``, ``/app/in/yaw_rate``, ``/app/out/thrust``
as ``onboard.vessel.log_topics`` names them (what ``python -m harness boat-fit`` reads), plus
``/app/in/outboard``, ``/app/out/command`` and ``/app/out/estimate``.
"""
import math

from onboard.comms import nmea
from onboard.control.heading_speed import HeadingSpeedController
from onboard.core.settings import ConfigError, closest, is_number
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import EAST, NORTH, SURGE, YAW, YAW_RATE, BoatEkf
from onboard.runtime.node import Node
from onboard.vessel import log_topics as lt
from onboard.vessel.samples import PositionSample, ThrustSample
from onboard.vessel.thrust_map import ThrustMap

from boards.wamv import board

APP = "wamv_boat"
DEFAULTS = {
    "plan": [[20.0, 0.0, 1.5], [20.0, 90.0, 1.5]],
    "origin_deg": [board.ORIGIN_LAT_DEG, board.ORIGIN_LON_DEG],
    "gnss_sigma_m": board.GNSS_SIGMA_M,
    "base_rate_hz": board.BASE_RATE_HZ,
    "control_rate_hz": board.CONTROL_RATE_HZ,
    "gnss_poll_hz": board.GNSS_POLL_HZ,
    "gnss_timeout_us": board.GNSS_TIMEOUT_US,
    "imu_timeout_us": board.IMU_TIMEOUT_US,
    "heading_timeout_us": board.HEADING_TIMEOUT_US,
    "outboard_timeout_us": board.OUTBOARD_TIMEOUT_US,
    "ekf": {},
    "controller": {},
    "thrust_map": {},
    "perception": None,              # None: no LIDAR part; a dict: buoy_perception settings overrides
    "perception_rate_hz": 10,
    "arbiter": None,                 # None: follow ``plan``; "damn" | "potential_field": steer to the destination
    "arbiter_config": {},            # the arbiter's settings (onboard.vessel.arbiters)
    "destination": None,             # [north_m, east_m] to start with (entry ``destination`` changes it)
    "mission": None,                 # None: no mission part; a dict: onboard.vessel.mission_part settings
    "views": True,                   # with a ``view`` callable: Foxglove views of what the app thinks
    "view_rate_hz": 2,               # their rate group (a whole-number fraction of base_rate_hz)
}


class GnssNmea:
    """io part: bytes of an NMEA receiver on ``transport`` -> ``PositionSample`` in the local frame -> ``entry``."""

    def __init__(self, transport, frame, entry, rate_hz, sigma_m):
        self.transport, self.frame, self.entry, self.rate_hz = transport, frame, entry, rate_hz
        self.var_m2 = sigma_m * sigma_m
        self.reader = nmea.NmeaReader(("GGA",))

    def attach(self, node):
        node.every("gnss", self.rate_hz, self.poll, io=True)

    def poll(self, now_us):
        for fix in self.reader.feed(self.transport.read(4096, 0.0)):
            self.entry(PositionSample(now_us, self.frame.to_ne(fix.lat_deg, fix.lon_deg), self.var_m2))

    def report(self):
        return self.reader.report()


class Estimation:
    """The boat EKF on the node: entries gnss / heading / yaw_rate, predict every base tick."""

    def __init__(self, ekf, thrust_map, base_rate_hz, gnss_timeout_us, imu_timeout_us, heading_timeout_us):
        self.ekf, self.thrust_map, self.rate_hz = ekf, thrust_map, base_rate_hz
        self.gnss_timeout_us, self.imu_timeout_us = gnss_timeout_us, imu_timeout_us
        self.heading_timeout_us = heading_timeout_us
        self.commands = (0.0, 0.0)          # throttles the controller sent, held
        self.thrust_n = (0.0, 0.0)
        self.bad_samples = 0
        self.node = None

    def attach(self, node):
        self.node = node
        node.watch("gnss", self.gnss_timeout_us)
        node.watch("imu", self.imu_timeout_us)
        node.watch("heading", self.heading_timeout_us)
        self.on_gnss = node.entry(lt.GNSS_ENTRY, self._on_gnss)
        self.on_heading = node.entry(lt.HEADING_ENTRY, self._on_heading)
        self.on_yaw_rate = node.entry(lt.YAW_RATE_ENTRY, self._on_yaw_rate)
        node.every("estimation", self.rate_hz, self._predict)

    def _fuse(self, fn, sample):
        try:
            fn(sample)
        except (EstimatorInputError, ValueError):
            self.bad_samples += 1
            return False
        return True

    def _on_gnss(self, s):
        if self._fuse(self.ekf.update_position, s):
            self.node.feed("gnss", s.time_us)

    def _on_heading(self, s):
        if self._fuse(self.ekf.update_heading, s):
            self.node.feed("heading", s.time_us)

    def _on_yaw_rate(self, s):
        if self._fuse(self.ekf.update_yaw_rate, s):
            self.node.feed("imu", s.time_us)

    def _predict(self, now_us):
        held = self.thrust_n
        sample = ThrustSample(now_us, held[0], held[1])
        self.node.output(lt.THRUST_OUTPUT, now_us, sample)
        ekf = self.ekf
        if ekf.initialized and now_us > ekf.time_us:
            self._fuse(ekf.predict, sample)
        self.thrust_n = self.thrust_map.step(self.commands[0], self.commands[1], 1.0 / self.rate_hz)
        # the thrusts the model holds from now on (measurements before the next tick propagate with them)
        ekf.thrust_n = [self.thrust_n[0], self.thrust_n[1]]
        if ekf.initialized and self.node.recording:
            x = ekf.x
            self.node.output("estimate", now_us, {"time_us": now_us, "state": list(x)})

    def report(self):
        return dict(self.ekf.counters(), bad_samples=self.bad_samples)


def _checked_plan(plan):
    """[(duration_us, heading_rad, speed_mps), ...] of the ``plan`` setting ([[duration_s, heading_deg,
    speed_mps], ...]); ValueError (one line) unless it is a non-empty list of three finite numbers per leg with
    each duration at least 1 us once rounded to whole microseconds."""
    try:
        legs = list(plan)
        ok = len(legs) > 0 and all(len(leg) == 3 and all(is_number(v) for v in leg) for leg in legs)
    except TypeError:
        ok = False
    out = [(int(round(leg[0] * 1e6)), math.radians(leg[1]), leg[2]) for leg in legs] if ok else []
    if not ok or any(d < 1 for d, _h, _u in out):
        raise ValueError("wamv app: plan must be a non-empty list of [duration_s >= 1e-06, heading_deg, speed_mps] "
                         "legs, got %r" % (plan,))
    return out


class Helm:
    """Heading/speed control along the plan, outboard telemetry, and the stop while the failsafe is engaged."""

    def __init__(self, outboards, estimation, controller, plan, control_rate_hz, base_rate_hz, outboard_timeout_us):
        self.outboards, self.est, self.ctl = outboards, estimation, controller
        self.plan = _checked_plan(plan)
        self.plan_us = sum(p[0] for p in self.plan)
        self.control_rate_hz, self.base_rate_hz = control_rate_hz, base_rate_hz
        self.outboard_timeout_us = outboard_timeout_us
        self.control_period_us = int(round(1e6 / control_rate_hz))
        self.start_us = None
        self.arbiter = None         # an onboard.vessel.arbiters_part.ArbiterPart: it gives the reference
        self.last_stop_us = None
        self.stop_events = 0
        self.reference = (0.0, 0.0)
        self.telemetry = {}
        self.now_us = None          # the control tick's time (a reply fed at the entry counts from it)
        self.node = None

    def attach(self, node):
        self.node = node
        for side in ("left", "right"):
            node.watch("outboard_" + side, self.outboard_timeout_us)
        self.on_outboard = node.entry("outboard", self._on_outboard)
        node.every("control", self.control_rate_hz, self._control)
        node.every("safety", self.base_rate_hz, self._safety)

    def _on_outboard(self, s):
        self.telemetry[s.side] = s
        self.node.feed("outboard_" + s.side, self.now_us)        # the link answered by this control tick

    def reference_at(self, now_us):
        """(heading_rad, speed_mps) of the plan's leg at ``now_us`` (the plan repeats)."""
        t = (now_us - self.start_us) % self.plan_us
        for d, h, u in self.plan:
            if t < d:
                return (h, u)
            t -= d
        return self.plan[-1][1:]

    def _control(self, now_us):
        if self.start_us is None:
            self.start_us = now_us
            self.outboards.start(now_us)
        self.now_us = now_us
        for s in self.outboards.poll(now_us):
            self.on_outboard(s)
        if self.node.failsafe.engaged:
            return
        ekf = self.est.ekf
        if not ekf.initialized:
            cmd = (0.0, 0.0)
        else:
            if self.arbiter is None:
                self.reference = self.reference_at(now_us)
            else:
                x = ekf.x
                self.reference = self.arbiter.reference(x[NORTH], x[EAST], x[YAW], x[SURGE], now_us)
            x = ekf.x
            cmd = self.ctl.step(self.reference[0], self.reference[1], x[YAW], x[YAW_RATE], x[SURGE], now_us)
        self.outboards.command(cmd[0], cmd[1], now_us)
        self.est.commands = cmd
        self.node.output("command", now_us, {"time_us": now_us, "throttle_left": cmd[0], "throttle_right": cmd[1],
                                             "heading_ref_rad": self.reference[0], "speed_ref_mps": self.reference[1]})
        self.last_stop_us = None

    def _safety(self, now_us):
        if not self.node.failsafe.engaged:
            return
        if self.last_stop_us is None or now_us - self.last_stop_us >= self.control_period_us:
            if self.last_stop_us is None:
                self.stop_events += 1
                self.ctl.reset()
            self.last_stop_us = now_us
            self.outboards.stop(now_us)
            self.est.commands = (0.0, 0.0)
            self.node.output("command", now_us, {"time_us": now_us, "throttle_left": 0.0, "throttle_right": 0.0,
                                                 "heading_ref_rad": self.reference[0], "speed_ref_mps": 0.0})

    def report(self):
        return {"stop_events": self.stop_events, "controller_steps": self.ctl.steps,
                "outboards": self.outboards.report()}


class WamvApp:
    """The recipe. ``outboards``: a ``onboard.vessel.outboards.VescOutboards``; ``gnss_transport``: the
    receiver's opened transport (``SerialTransport(board.GNSS_PORT, board.GNSS_BAUD)`` on the boat);
    ``config``: DEFAULTS overrides (``ekf``, ``controller``, ``thrust_map``: their modules' settings);
    ``view``: ``view(topic, time_us, schema_name, msg)`` for the Foxglove views (module docstring), or None.
    A ``config`` key that is not one of DEFAULTS raises ``onboard.core.settings.ConfigError`` (one line, the
    closest known key), as the vessel components' settings do."""

    def __init__(self, outboards, gnss_transport, config=None, log=None, start_us=0, view=None):
        cfg = dict(DEFAULTS)
        for key in (config or {}):
            if key not in DEFAULTS:         # a misspelled key would silently leave its part out (or its default)
                near = closest(key, DEFAULTS) if isinstance(key, str) else None
                raise ConfigError("unknown wamv app setting %r%s" % (key, " (did you mean %r?)" % near if near else
                                                                     " (known: %s)" % ", ".join(sorted(DEFAULTS))))
        cfg.update(config or {})
        self.config = cfg
        self.node = node = Node(APP, start_us=start_us, log=log)
        self.frame = nmea.LocalFrame(*cfg["origin_deg"])
        ekf_cfg = dict({"gnss_sigma_m": cfg["gnss_sigma_m"]}, **cfg["ekf"])
        self.estimation = Estimation(BoatEkf(ekf_cfg), ThrustMap(cfg["thrust_map"]), cfg["base_rate_hz"],
                                     cfg["gnss_timeout_us"], cfg["imu_timeout_us"], cfg["heading_timeout_us"])
        node.add("estimation", self.estimation)
        self.gnss = node.add("gnss", GnssNmea(gnss_transport, self.frame, self.estimation.on_gnss,
                                              cfg["gnss_poll_hz"], cfg["gnss_sigma_m"]))
        ctl = HeadingSpeedController(ThrustMap(cfg["thrust_map"]), cfg["controller"])
        self.helm = node.add("helm", Helm(outboards, self.estimation, ctl, cfg["plan"], cfg["control_rate_hz"],
                                          cfg["base_rate_hz"], cfg["outboard_timeout_us"]))
        self.on_heading = self.estimation.on_heading
        self.on_yaw_rate = self.estimation.on_yaw_rate
        self.perception = None
        if cfg["perception"] is not None:
            from onboard.vessel.buoy_perception import PerceptionPart     # numpy: only for the LIDAR part
            self.perception = node.add("perception", PerceptionPart(self.estimated_pose, cfg["perception"],
                                                                    cfg["perception_rate_hz"]))
            self.on_lidar = self.perception.on_lidar
        if cfg["arbiter"] is not None:
            from onboard.vessel.arbiters_part import ArbiterPart
            # the perceived buoys, unless a mission part hands them over with the destination
            perceived = None if self.perception is None or cfg["mission"] is not None else (
                lambda: [(t.north_m, t.east_m, t.radius_m) for t in self.perception.map.confirmed()])
            self.helm.arbiter = node.add("arbiter", ArbiterPart(cfg["arbiter"], cfg["arbiter_config"],
                                                                cfg["destination"], perceived))
            self.on_destination = self.helm.arbiter.on_destination
            self.on_obstacles = self.helm.arbiter.on_obstacles
        self.mission = None
        if cfg["mission"] is not None:
            if self.perception is None or self.helm.arbiter is None:
                raise ValueError("wamv app: the mission setting needs the perception and arbiter settings")
            from onboard.vessel.mission_part import MissionPart    # numpy (the pinger locator)
            self.mission = node.add("mission", MissionPart(self.estimated_pose, self.perception, self.helm.arbiter,
                                                           cfg["mission"]))
            self.on_ping = self.mission.on_ping
        self.views = None
        if view is not None and cfg["views"]:
            from onboard.vessel.boat_views import BoatViews     # numpy, base64: a CPython host's views
            self.views = node.add("views", BoatViews(self, view, cfg["view_rate_hz"]))
        self.run = node.run
        self.step = node.step

    @property
    def ekf(self):
        return self.estimation.ekf

    def estimated_pose(self):
        """(north_m, east_m, yaw_rad) of the EKF, or None before it is initialised."""
        ekf = self.estimation.ekf
        if not ekf.initialized:
            return None
        x = ekf.x
        return (x[NORTH], x[EAST], x[YAW])

    @property
    def failsafe(self):
        return self.node.failsafe

    def record(self, sink, code_version="", time_us=0):
        """Record at the boundary (``onboard.runtime.node``), the topics ``onboard.vessel.log_topics`` names."""
        self.node.record(sink, APP, self.config, code_version, time_us)

    def report(self):
        return self.node.report()
