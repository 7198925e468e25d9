"""The loader's soil-mapping app: blind mapping of the blade-swept soil and per-cut property estimates, a
recipe of two parts on a ``onboard.runtime.node.Node`` (CPython host side: the estimator needs NumPy and
SciPy; the blind map itself is pure).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader": Alg. 1 (per sweep: blind mapping, FEE geometry, then the
estimator), section 3 (60 Hz observations), section 4 (force from the drive or the hydraulic pressure);
reading aid ``shared/papers/notes/soil.md`` (section 5.2, "runtime wiring").

Entry point ``on_machine(sample)`` (:class:`MachineSample`, 60 Hz on the loader: the blade pose from the
kinematics, the force sensors, the operator's phase and lane) feeds the watched input "machine"; entry point
"finish" (``BlindMapping.on_finish``, a :class:`MissionEnd`: what ``BlindMapping.finish`` sends) ends the
mission. Recorded at its boundary (``Node.record``, recipe :data:`APP`: :func:`recipe_config` holds what
:func:`app_from_recipe` rebuilds it from), its outputs are ``sweep`` (every sweep's summary), ``cut_estimate``
and ``layer_update`` (each layers window). Parts:

- :class:`BlindMapping`, group "map" (``map_rate_hz``): the queued samples go, in order, through the
  ``onboard.soil.blind_map.BlindMapper`` on the app's grid map. A new lane or pass (the machine was moved)
  ends the pass (the mapper is flushed and reset); the end of the operator's cut phase closes the cut: its
  samples and the sweeps over them go to the estimation part. Every sweep is logged on ``/soil/sweep``.
- :class:`CutEstimation`, group "estimate" (``estimate_rate_hz``): each closed cut becomes one
  ``onboard.soil.cut_estimator.CutWindow`` per sensor path (the samples where the machine moved at least
  ``min_speed_mps``; at least ``min_samples`` of them) and one ``CutEstimate``, output as
  ``cut_estimate`` (and logged on ``/soil/cut_estimate``); the part keeps them in ``estimates``.

With ``layers.enabled``, :class:`CutEstimation` also fuses the soil into the grid map's property layers
(``onboard.soil.soil_layers``: Alg. 4 and the FEE index of section 3.2): each closed cut is split into windows
of ``layers.window_m`` of blade travel, each window estimated on sensor path ``layers.path`` by the estimator
``layers.estimator`` (``"classical"``: the per-cut NLS estimator, ``onboard.soil.cut_estimator``;
``"learned"``: the physics-informed network, ``onboard.soil.learned_estimator``, the committed model or the
folder ``layers.learned_model``) and fused over the failure wedges of its sweeps, the FEE index refreshed on
the cells fused; every window is logged on ``/soil/layer_update``, and after each cut the layers go to the
``view`` callable as one ``foxglove.Grid`` on ``/soil/grid`` (``onboard.soil.soil_layers_grid``;
``layers.log_grid``).

With ``lidar.enabled`` (``onboard.soil.lidar_map``: the front and rear single-beam LIDARs), :class:`BlindMapping`
also declares the entry point ``lidar`` (:class:`LidarScan`): its queued scans are fused into the elevation map
in time order with the machine's samples (a scan after the sample of the same time, whose measured blade pose
is the self-filter's), where the beams see; blind mapping keeps the cells the blade occludes. Bad returns and
scans are counted (``report()["mapping"]["lidar"]``) and dropped.

Sensor paths: ``"force"`` (the blade force sensor, F_x and F_z), ``"drive+pressure"`` (F_x from the drive
torque, F_z from the lift-cylinder pressure given that F_x: ``onboard.soil.machine_forces``),
``"drive"`` (F_x only); the drive and pressure paths need the machine's constants (``machine``).

The learned estimator reads the operator's commands (its action history) besides the machine's samples:
with ``layers.estimator`` "learned" the estimation part declares the entry point ``on_command``
(:class:`OperatorCommand`, the commands in force from ``time_us`` on), which the loader's operator feeds.
With ``layers.learned_model`` the controller model (``models/soil/estimator_controller``: no force input) the
commands must also carry ``drive_cmd_n``, the track speed loop's commanded tractive effort [N]; a command
without it is kept and counted (``report()["commands_without_drive_cmd"]``), and a window over which it is
in force is skipped with the reason on ``/soil/layer_update``.
"""
import math

from onboard.core.settings import (BOOLEAN, ConfigError, NON_NEGATIVE, checked, int_at_least, non_empty_list,
                                   one_of, under)
from onboard.core.linalg import is_finite
from onboard.core.samples import nan_for_null
from onboard.runtime.node import Node
from onboard.soil import blind_map, cut_estimator, lidar_map, soil_layers
from onboard.soil.blind_map import BladePose, BlindMapper
from onboard.soil.lidar_map import LidarFusion, LidarScan  # noqa: F401 - LidarScan: a recorded input's type

SENSOR_PATHS = ("force", "drive+pressure", "drive")
SAMPLE_RATE_HZ = 60
SWEEP_TOPIC = "/soil/sweep"
ESTIMATE_TOPIC = "/soil/cut_estimate"
LAYER_TOPIC = "/soil/layer_update"
GRID_TOPIC = "/soil/grid"
ESTIMATORS = ("classical", "learned")   # the sources of the estimates fused into the layers

DEFAULTS = {
    "map_rate_hz": 20,
    "estimate_rate_hz": 2,
    "machine_timeout_us": 500000,       # the watched input goes stale after this silence
    "estimation": True,                 # False: blind mapping only (no estimation part)
    "sensor_paths": ["force"],
    "cut_estimates": True,              # False: no whole-cut estimates (the layers' windows only)
    "min_speed_mps": 0.05,              # window samples: the machine moving at least this fast
    "min_samples": 60,                  # fewer window samples: the cut is not estimated
    "blind_map": dict(blind_map.DEFAULTS),
    "lidar": dict(lidar_map.DEFAULTS),
    "estimator": dict(cut_estimator.DEFAULTS),
    "layers": dict({"enabled": False, "estimator": "classical", "learned_model": None, "path": "force",
                    "window_m": 1.0, "min_samples": 20, "log_grid": True}, **soil_layers.DEFAULTS),
}
SETTING_RANGES = dict(
    {"map_rate_hz": int_at_least(1), "estimate_rate_hz": int_at_least(1), "machine_timeout_us": int_at_least(1),
     "estimation": BOOLEAN, "sensor_paths": non_empty_list(one_of(*SENSOR_PATHS)), "min_speed_mps": NON_NEGATIVE,
     "min_samples": int_at_least(10), "cut_estimates": BOOLEAN, "layers.enabled": BOOLEAN,
     "layers.estimator": one_of(*ESTIMATORS),
     "layers.learned_model": ("null or a model folder path", lambda v: v is None or (isinstance(v, str) and v != "")),
     "layers.path": one_of(*SENSOR_PATHS), "layers.window_m": NON_NEGATIVE, "layers.min_samples": int_at_least(10),
     "layers.log_grid": BOOLEAN},
    **under("blind_map", blind_map.SETTING_RANGES), **under("estimator", cut_estimator.SETTING_RANGES),
    **under("layers", soil_layers.SETTING_RANGES))
SETTING_RANGES.update(under("lidar", lidar_map.SETTING_RANGES))     # a rule over two settings: not a keyword


class MachineSample:
    """What the loader's sensors read at ``time_us`` (SI units): ``blade_pose`` (``BladePose``: the cutting
    edge's centre, NED, and the blade's Euler angles, from the kinematics), ``blade_force_n`` (fx, fz: the
    blade force sensor; fx positive against travel, fz positive down), ``drive_torque_nm`` (sprocket torque of
    both tracks), ``lift_pressure_pa`` (lift cylinders), ``lift_m`` (lift actuator), ``speed_mps`` (ground
    speed along the heading), ``pitch_rad`` (chassis pitch), and the operator's ``phase`` ("cut" while the
    blade works a lane, else "lift") and ``lane`` ((lane, pass) indices). Logged through :meth:`as_dict`
    (the pose as a nested table): it declares no ``FIELDS``, the logs' flat-sample form whose values are
    written as they are, which a ``BladePose`` is not."""

    def __init__(self, time_us, blade_pose, blade_force_n, drive_torque_nm, lift_pressure_pa, lift_m, speed_mps,
                 pitch_rad, phase, lane):
        self.time_us = int(time_us)
        self.blade_pose = blade_pose
        self.blade_force_n = (float(blade_force_n[0]), float(blade_force_n[1]))
        self.drive_torque_nm = float(drive_torque_nm)
        self.lift_pressure_pa = float(lift_pressure_pa)
        self.lift_m = float(lift_m)
        self.speed_mps = float(speed_mps)
        self.pitch_rad = float(pitch_rad)
        self.phase = phase
        self.lane = (int(lane[0]), int(lane[1]))

    def is_finite(self):
        for v in self.blade_force_n + (self.drive_torque_nm, self.lift_pressure_pa, self.lift_m, self.speed_mps,
                                       self.pitch_rad):
            if not (v - v == 0):
                return False
        return isinstance(self.blade_pose, BladePose)

    def as_dict(self):
        p = self.blade_pose
        return {"time_us": self.time_us,
                "blade_pose": {"ned_m": [p.north_m, p.east_m, p.down_m],
                               "euler_rad": [p.roll_rad, p.pitch_rad, p.yaw_rad]},
                "blade_force_n": list(self.blade_force_n), "drive_torque_nm": self.drive_torque_nm,
                "lift_pressure_pa": self.lift_pressure_pa, "lift_m": self.lift_m, "speed_mps": self.speed_mps,
                "pitch_rad": self.pitch_rad, "phase": self.phase, "lane": list(self.lane)}

    @classmethod
    def from_dict(cls, data):
        """The sample of :meth:`as_dict`'s table ``data`` (a recording's ``/app/in/machine``); a null number (the
        log writes NaN as null) comes back as NaN, so a sample refused when recorded is refused again."""
        pose = data["blade_pose"]
        ned, euler = nan_for_null(pose["ned_m"]), nan_for_null(pose["euler_rad"])
        return cls(data["time_us"], BladePose(data["time_us"], ned[0], ned[1], ned[2], euler[0], euler[1], euler[2]),
                   nan_for_null(data["blade_force_n"]), *(nan_for_null([data[k] for k in _MACHINE_NUMBERS])
                                                           + [data["phase"], data["lane"]]))


_MACHINE_NUMBERS = ("drive_torque_nm", "lift_pressure_pa", "lift_m", "speed_mps", "pitch_rad")


class MissionEnd:
    """The end of the mission at ``time_us`` (the app's entry point ``finish``): the last sweep and the last
    cut are closed. ``FIELDS``: the logs' flat-sample form."""
    FIELDS = ("time_us",)

    def __init__(self, time_us):
        self.time_us = int(time_us)

    def as_dict(self):
        return {"time_us": self.time_us}


class OperatorCommand:
    """The commands in force from ``time_us`` on (SI units): the operator's ``speed_mps`` (ground speed),
    ``lift_m`` (lift actuator), ``tilt_rad`` and ``roll_rad`` (blade), ``depth_m`` (cutting depth below the
    surface), and ``drive_cmd_n``, the track speed loop's commanded tractive effort [N] (both tracks: the
    cascaded controller's inner command, one of the soil paper's "actions", section 2.1; the controller model
    of ``onboard.soil.learned_estimator`` reads it). ``drive_cmd_n`` is optional: None or a non-finite value
    means "not given" and is held as NaN (a command entry or a log that does not carry it), so a command is
    refused (:meth:`is_finite`) only for a non-finite operator setpoint. ``FIELDS``: the logs' flat-sample
    form (the constructor's arguments; a log without ``drive_cmd_n`` decodes to NaN)."""
    COMMANDS = ("speed_mps", "lift_m", "tilt_rad", "roll_rad", "depth_m")
    FIELDS = ("time_us",) + COMMANDS + ("drive_cmd_n",)

    def __init__(self, time_us, speed_mps, lift_m, tilt_rad, roll_rad, depth_m, drive_cmd_n=None):
        self.time_us = int(time_us)
        self.speed_mps = float(speed_mps)
        self.lift_m = float(lift_m)
        self.tilt_rad = float(tilt_rad)
        self.roll_rad = float(roll_rad)
        self.depth_m = float(depth_m)
        d = math.nan if drive_cmd_n is None else float(drive_cmd_n)
        self.drive_cmd_n = d if d - d == 0 else math.nan

    @classmethod
    def from_dict(cls, time_us, msg):
        """From a command message {"speed_mps", "lift_m", "tilt_rad", "roll_rad", "depth_m"[, "drive_cmd_n"],
        ...} (the loader's ``/loader/cmd``)."""
        return cls(time_us, *(msg[k] for k in cls.COMMANDS), drive_cmd_n=msg.get("drive_cmd_n"))

    def is_finite(self):
        """True when the operator's setpoints are finite (``drive_cmd_n`` may be absent: :meth:`has_drive_cmd`)."""
        return is_finite([getattr(self, k) for k in self.COMMANDS])

    def has_drive_cmd(self):
        """True when the command carries the track speed loop's command ``drive_cmd_n`` (finite)."""
        return self.drive_cmd_n - self.drive_cmd_n == 0

    def as_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}


class Cut:
    """One cut: the operator's cut phase of one lane and pass (``lane``), its ``samples`` (MachineSample)
    and the ``records`` (SweepRecord) of the sweeps over them."""

    def __init__(self, lane):
        self.lane = lane
        self.samples = []
        self.records = []


class BlindMapping:
    """Part: the blind map on ``grid`` (module docstring); ``config`` the app's settings (:data:`DEFAULTS`),
    ``erode_fn`` the erosion kernel (``blind_map.erode`` or ``blind_map_numpy.erode``), ``estimation`` the
    :class:`CutEstimation` part closed cuts go to (None: none)."""

    def __init__(self, grid, config, estimation=None, erode_fn=None):
        self.config = config
        self.mapper = BlindMapper(grid, config["blind_map"], erode_fn=erode_fn)
        self.estimation = estimation
        self.lidar = None               # the LIDAR fusion (setting lidar.enabled)
        if config["lidar"]["enabled"]:
            bm = config["blind_map"]
            self.lidar = LidarFusion(grid, config["lidar"], bm["blade_width_m"], bm["blade_height_m"])
        self.scans = []
        self.blade_pose = None          # the last sample's measured blade pose (the LIDAR self-filter's)
        self.on_lidar = None
        self.queue = []
        self.lane = None
        self.cut = None
        self.cuts = 0
        self.rejected = 0
        self.node = None
        self.on_machine = None
        self.on_finish = None
        self.last_time_us = 0
        self._last_pose_us = None       # the last accepted sample's blade pose time (None: no sample yet)

    def attach(self, node):
        self.node = node
        self.on_machine = node.entry("machine", self._on_machine)
        self.on_finish = node.entry("finish", self._on_finish)
        if self.lidar is not None:
            self.on_lidar = node.entry("lidar", self._on_lidar)
        node.watch("machine", self.config["machine_timeout_us"])
        node.every("map", self.config["map_rate_hz"], self._map)

    def _on_machine(self, sample):
        if not isinstance(sample, MachineSample) or not sample.is_finite():
            self.rejected += 1
            return
        last = self._last_pose_us
        if last is not None and (sample.time_us < self.last_time_us or sample.blade_pose.time_us < last):
            # stamped before the last sample: the blind map cannot step back (it raised out of the map
            # group, losing the rest of the period's queue); refused and counted like any bad sample
            self.rejected += 1
            return
        self.node.feed("machine", sample.time_us)
        self.last_time_us = sample.time_us
        self._last_pose_us = sample.blade_pose.time_us
        self.queue.append(sample)

    def _on_lidar(self, scan):
        if not isinstance(scan, LidarScan) or not scan.pose_is_finite():
            self.lidar.rejected_scans += 1
            return
        self.scans.append(scan)

    def _fuse_scans(self, until_us):
        """Fuse the queued scans taken before ``until_us`` (all of them for None), in time order."""
        scans = self.scans
        k = 0
        pile_m = self.pile_length_m()
        while k < len(scans) and (until_us is None or scans[k].time_us < until_us):
            self.lidar.fuse(scans[k], self.blade_pose, pile_m)
            k += 1
        if k:
            self.scans = scans[k:]

    def pile_length_m(self):
        """Length [m] of the wedge the blind map's carried pile makes ahead of the blade (0: none): face height
        sqrt(2 (V / w) tan r) over tan r (``blind_map.pile_face_height``, the pile's repose r)."""
        bm = self.config["blind_map"]
        carried = self.mapper.carried_m3
        if carried <= 0.0:
            return 0.0
        r = blind_map.pile_repose_rad(bm)
        return blind_map.pile_face_height(carried, bm["blade_width_m"], r) / math.tan(r)

    def _map(self, now_us):
        queue, self.queue = self.queue, []
        for s in queue:
            if self.scans:
                self._fuse_scans(s.time_us)
            if s.lane != self.lane:
                self._flush()
                self._close()
                self.mapper.reset()
                self.lane = s.lane
            if s.phase != "cut" and self.cut is not None:
                self._flush()
                self._close()
            if s.phase == "cut" and self.cut is None:
                self.cut = Cut(s.lane)
            if self.cut is not None:
                self.cut.samples.append(s)
            self._keep(self.mapper.on_blade_pose(s.blade_pose))
            self.blade_pose = s.blade_pose
        if self.scans and queue:
            self._fuse_scans(queue[-1].time_us + 1)

    def finish(self, time_us=None):
        """End of the mission at ``time_us`` (None: the last sample's time): the last sweep, the last cut
        closed; through the entry point ``finish`` (:class:`MissionEnd`), so that a recording holds it."""
        self.on_finish(MissionEnd(self.last_time_us if time_us is None else time_us))

    def _on_finish(self, end):
        self._flush()
        self._close()
        if self.scans:
            self._fuse_scans(None)

    def _flush(self):
        self._keep(self.mapper.flush())

    def _keep(self, rec):
        if rec is None:
            return
        if self.cut is not None:
            self.cut.records.append(rec)
        if self.node.logging or self.node.recording:
            summary = sweep_summary(rec)
            self.node.output("sweep", rec.t1_us, summary)
            self.node.log(SWEEP_TOPIC, rec.t1_us, summary)

    def _close(self):
        if self.cut is None:
            return
        self.cuts += 1
        if self.estimation is not None:
            self.estimation.submit(self.cut)
        self.cut = None

    def report(self):
        out = {"sweeps": self.mapper.sweeps, "cuts": self.cuts, "rejected": self.rejected,
               "lost_m3": self.mapper.lost_m3}
        if self.lidar is not None:
            out["lidar"] = self.lidar.counters()
        return out


def sweep_summary(rec):
    """A SweepRecord as a log message: its times, validity, FEE geometry and volumes."""
    return {"t0_us": rec.t0_us, "t1_us": rec.t1_us, "valid": rec.valid, "reason": rec.reason,
            "alpha_rad": rec.alpha_rad, "rho_rad": rec.rho_rad, "depth_m": rec.depth_m, "width_m": rec.width_m,
            "surcharge_m3": rec.surcharge_m3[-1] if rec.surcharge_m3 else 0.0, "cut_m3": rec.cut_m3,
            "bank_cut_m3": rec.bank_cut_m3, "gathered_m3": rec.gathered_m3, "spilled_m3": rec.spilled_m3,
            "cut_cells": rec.cut_cells}


class CutEstimation:
    """Part: per-cut property estimates (module docstring); ``config`` the app's settings, ``machine`` the
    machine's constants (``onboard.soil.machine_forces``; needed by the drive and pressure paths)."""

    def __init__(self, config, machine=None, grid=None, view=None):
        self.config = config
        self.machine = machine
        lc = config["layers"]
        paths = list(config["sensor_paths"]) + ([lc["path"]] if lc["enabled"] else [])
        if machine is None and any(p != "force" for p in paths):
            raise ConfigError("loader app: sensor paths %s need the machine's constants"
                              % ", ".join(sorted(set(p for p in paths if p != "force"))))
        self.estimator = cut_estimator.CutEstimator(config["estimator"])
        self.learned = None             # the learned estimator of the layers (layers.estimator "learned")
        self.commands = {}              # time_us -> {command}: the operator's commands (the learned one's input)
        self.rejected_commands = 0
        self.commands_without_drive_cmd = 0     # accepted commands lacking drive_cmd_n (the controller model's)
        self.on_command = None
        self.layers = None
        if lc["enabled"] and lc["estimator"] == "learned":
            from onboard.soil.learned_estimator import LearnedEstimator, LearnedModelError
            try:
                self.learned = LearnedEstimator(lc["learned_model"])
            except LearnedModelError as exc:
                raise ConfigError("loader app: layers.learned_model: %s" % exc)
        if lc["enabled"]:
            if grid is None:
                raise ConfigError("loader app: layers.enabled needs the grid map")
            self.layers = soil_layers.SoilLayers(grid, {k: lc[k] for k in soil_layers.DEFAULTS})
        self.grid = grid
        self.view = view
        self.layer_rows = []
        self.after_cut = []             # callables f(cut, rows, now_us) after a cut is fused (rows: its windows)
        self.pending = []
        self.estimates = []
        self.node = None

    def attach(self, node):
        self.node = node
        node.every("estimate", self.config["estimate_rate_hz"], self._estimate)
        if self.learned is not None:
            self.on_command = node.entry("command", self._on_command)

    def _on_command(self, command):
        if not isinstance(command, OperatorCommand) or not command.is_finite():
            self.rejected_commands += 1
            return
        if not command.has_drive_cmd() and self.learned.inputs == "controller":
            # kept (it supersedes the command before it); the windows it is in force over are skipped, with
            # the reason, by learned_estimator.controller_channels
            self.commands_without_drive_cmd += 1
        self.commands[command.time_us] = command.as_dict()

    def _drop_commands_before(self, time_us):
        """Forget the commands superseded before ``time_us`` (the one in force then is kept)."""
        old = sorted(t for t in self.commands if t <= time_us)
        for t in old[:-1]:
            del self.commands[t]

    def layer_estimate(self, sub, window, cut=None):
        """The ``CutEstimate`` of one layers window ``window`` of the cut part ``sub`` (of the closed cut
        ``cut``; None: ``sub`` itself) by ``layers.estimator`` (raises ``cut_estimator.CutEstimateError``).
        The controller model also reads the longitudinal acceleration (from all of the cut's samples, as its
        training computes it) and the track speed loop's command ``drive_cmd_n`` of the commands received
        (``learned_estimator.controller_channels``)."""
        if self.learned is None:
            return self.estimator.estimate(window)
        from onboard.soil import learned_estimator as le
        kin = le.kinematics_from_samples(sub.samples, window.time_us)
        act = le.actions_from_commands(self.commands, window.time_us)
        ctl = None
        if self.learned.inputs == "controller":
            ctl = le.controller_channels((sub if cut is None else cut).samples, self.commands, window.time_us)
        return self.learned.estimate(window, kin, act, ctl)

    def submit(self, cut):
        self.pending.append(cut)

    def _estimate(self, now_us):
        pending, self.pending = self.pending, []
        for cut in pending:
            for path in (self.config["sensor_paths"] if self.config["cut_estimates"] else ()):
                row = self.estimate(cut, path)
                self.estimates.append(row)
                self.node.output("cut_estimate", now_us, row)
                self.node.log(ESTIMATE_TOPIC, now_us, row)
            if self.layers is not None:
                self.fuse_cut(cut, now_us)

    def fuse_cut(self, cut, now_us):
        """Fuse a closed cut into the soil layers window by window (module docstring) and refresh the FEE
        index on the cells fused; the layers go to ``view`` as a ``foxglove.Grid`` afterwards."""
        from onboard.soil.soil_layers_grid import GRID, grid_message
        lc = self.config["layers"]
        first = len(self.layer_rows)
        for k, sub in enumerate(self.windows(cut, lc["window_m"])):
            window = self.window(sub, lc["path"])
            row = {"lane": list(cut.lane), "window": k, "path": lc["path"], "estimator": lc["estimator"],
                   "samples": len(window), "t0_us": sub.samples[0].time_us, "t1_us": sub.samples[-1].time_us,
                   "cells": 0}
            if len(window) < lc["min_samples"]:
                row["skipped"] = "too few samples (%d < %d)" % (len(window), lc["min_samples"])
            else:
                try:
                    est = self.layer_estimate(sub, window, cut)
                except cut_estimator.CutEstimateError as exc:
                    row["skipped"] = str(exc)
                else:
                    cells = self.layers.fuse_records([float(v) for v in est.theta], [float(v) for v in est.var],
                                                     sub.records)
                    self.layers.refresh_index(cells)
                    row.update(est.as_dict())
                    row["cells"] = len(cells)
                    row["cell_list"] = cells
            self.layer_rows.append(row)
            if self.node.logging or self.node.recording:
                logged = {k2: v for k2, v in row.items() if k2 != "cell_list"}
                self.node.output("layer_update", now_us, logged)
                self.node.log(LAYER_TOPIC, now_us, logged)
        if self.learned is not None and cut.samples:
            self._drop_commands_before(cut.samples[-1].time_us)
        for fn in self.after_cut:
            fn(cut, self.layer_rows[first:], now_us)
        if self.view is not None and lc["log_grid"]:
            self.view(GRID_TOPIC, now_us, GRID, grid_message(self.grid, now_us))

    @staticmethod
    def windows(cut, window_m):
        """The cut split into :class:`Cut` s of ``window_m`` of blade-edge travel each (the last one, when
        shorter than half of that, joined to the one before; ``window_m`` 0: the whole cut), each with its
        samples and the sweeps that began among them."""
        samples = cut.samples
        if not samples:
            return []
        index = []
        dist = 0.0
        prev = samples[0].blade_pose
        for s in samples:
            p = s.blade_pose
            dist += ((p.north_m - prev.north_m) ** 2 + (p.east_m - prev.east_m) ** 2) ** 0.5
            prev = p
            index.append(int(dist // window_m) if window_m > 0.0 else 0)
        last = index[-1]
        if last > 0 and window_m > 0.0 and dist - last * window_m < 0.5 * window_m:
            # joined to the window before it, which is not last - 1 when samples are missing over a
            # window's length of travel (a gap in the cut skips window numbers)
            before = max(k for k in index if k < last)
            index = [before if k == last else k for k in index]
        subs = {}
        of_time = {}
        for s, k in zip(samples, index):
            if k not in subs:
                subs[k] = Cut(cut.lane)
            subs[k].samples.append(s)
            of_time[s.time_us] = k
        for rec in cut.records:
            k = of_time.get(rec.t0_us)
            if k is None:
                k = index[0] if rec.t0_us < samples[0].time_us else index[-1]
            if k in subs:
                subs[k].records.append(rec)
        return [subs[k] for k in sorted(subs)]

    def estimate(self, cut, path):
        """{"lane", "path", "sweeps", "valid_sweeps", "samples", "t0_us", "t1_us"} and the estimate
        (``CutEstimate.as_dict``) of one cut on one sensor path, or "skipped" with the reason."""
        window = self.window(cut, path)
        row = {"lane": list(cut.lane), "path": path, "sweeps": len(cut.records),
               "valid_sweeps": sum(1 for r in cut.records if r.valid), "samples": len(window),
               "t0_us": cut.samples[0].time_us if cut.samples else 0,
               "t1_us": cut.samples[-1].time_us if cut.samples else 0}
        if len(window) < self.config["min_samples"]:
            row["skipped"] = "too few samples (%d < %d)" % (len(window), self.config["min_samples"])
            return row
        try:
            est = self.estimator.estimate(window)
        except cut_estimator.CutEstimateError as exc:
            row["skipped"] = str(exc)
            return row
        row.update(est.as_dict())
        return row

    def window(self, cut, path):
        """The cut's CutWindow on sensor path ``path``: its valid sweeps' geometry and the force measured on
        that path, at the samples where the machine moved at least ``min_speed_mps``."""
        import numpy as np
        from onboard.soil.machine_forces import fx_from_drive, fz_from_pressure
        samples = cut.samples
        if path == "force":
            forces = {s.time_us: s.blade_force_n for s in samples}
            comps = ("fx", "fz")
        else:
            dt = 1.0 / SAMPLE_RATE_HZ
            fx = fx_from_drive(self.machine, [s.drive_torque_nm for s in samples], [s.speed_mps for s in samples],
                               [s.pitch_rad for s in samples], dt, time_us=[s.time_us for s in samples])
            fz = fz_from_pressure(self.machine, [s.lift_pressure_pa for s in samples], [s.lift_m for s in samples],
                                  fx)
            forces = {s.time_us: (float(a), float(b)) for s, a, b in zip(samples, fx, fz)}
            comps = ("fx", "fz") if path == "drive+pressure" else ("fx",)
        window = cut_estimator.window_from_sweeps(cut.records, forces, comps)
        if len(window) == 0:
            return window
        speed = {s.time_us: s.speed_mps for s in samples}
        moving = np.array([speed.get(int(t), 0.0) >= self.config["min_speed_mps"] for t in window.time_us])
        return window.select(moving)

    def report(self):
        done = sum(1 for r in self.estimates if "theta" in r)
        out = {"estimates": done, "skipped": len(self.estimates) - done, "pending": len(self.pending)}
        if self.learned is not None:
            out["rejected_commands"] = self.rejected_commands
            if self.learned.inputs == "controller":
                out["commands_without_drive_cmd"] = self.commands_without_drive_cmd
        if self.layers is not None:
            out["layers"] = self.layers.counters()
        return out


def checked_config(config=None):
    """The app's settings (:data:`DEFAULTS` with ``config`` merged in), every rule checked (ConfigError)."""
    return checked(DEFAULTS, SETTING_RANGES, config, "loader app")


APP = "soil_loader"                         # the recipe's name in a recording (``harness replay``)
EROSION_KERNELS = ("pure", "numpy")          # blind_map.erode, blind_map_numpy.erode


def erode_kernel(name):
    """The erosion kernel named ``name`` (:data:`EROSION_KERNELS`; None: the blind map's default)."""
    if name is None:
        return None
    if name == "pure":
        return blind_map.erode
    if name == "numpy":
        from onboard.soil import blind_map_numpy
        return blind_map_numpy.erode
    raise ConfigError("loader app: erosion kernel %r is not one of %s" % (name, ", ".join(EROSION_KERNELS)))


def recipe_config(grid, config=None, machine=None, erosion=None):
    """What rebuilds the app (:func:`app_from_recipe`), plain data for a recording's ``/app/config``: the app's
    settings (checked), the machine's constants, the erosion kernel's name and the surface the machine starts on
    (the grid map's settings, its shape and its elevation [m, up] and loose-thickness [m] layers, row-major).
    Take it before the first sample: the map changes as the blade cuts."""
    from onboard.soil.grid_map import ELEVATION, LOOSE
    erode_kernel(erosion)
    return {"app": checked_config(config), "machine": machine, "erosion": erosion,
            "grid": {"config": grid.config, "shape": [grid.n_north, grid.n_east],
                     "elevation_m": list(grid.layers[ELEVATION]), "loose_m": list(grid.layers[LOOSE])}}


def app_from_recipe(recipe, log=None, view=None):
    """The app of :func:`recipe_config`'s ``recipe`` rebuilt: the Node, on a new grid map holding the recorded
    starting surface (ConfigError for a recipe that does not fit)."""
    from array import array
    from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap
    try:
        g = recipe["grid"]
        grid = GridMap(g["config"])
        if list(g["shape"]) != [grid.n_north, grid.n_east]:
            raise ConfigError("loader app recipe: grid shape %r, its settings give %r"
                              % (g["shape"], [grid.n_north, grid.n_east]))
        for name, key in ((ELEVATION, "elevation_m"), (LOOSE, "loose_m")):
            if len(g[key]) != grid.size:
                raise ConfigError("loader app recipe: %s holds %d cells, the grid %d" % (key, len(g[key]), grid.size))
            grid.layers[name] = array("d", nan_for_null(g[key]))
        return loader_app(grid, recipe["app"], recipe["machine"], erode_kernel(recipe["erosion"]), log=log, view=view)
    except (KeyError, TypeError) as exc:
        raise ConfigError("loader app recipe: missing or malformed %s" % (exc,))


def loader_app(grid, config=None, machine=None, erode_fn=None, log=None, view=None):
    """The recipe: a Node "loader" with :class:`CutEstimation` ("estimation", unless the setting
    ``estimation`` is false) and :class:`BlindMapping` ("mapping") on ``grid`` (a
    ``onboard.soil.grid_map.GridMap`` holding the surface the machine starts on).
    ``config``: :data:`DEFAULTS` overrides; ``machine``: the machine's constants; ``erode_fn``: the erosion
    kernel; ``log``: ``log(topic, time_us, msg)``; ``view``: ``view(topic, time_us, schema_name, msg)`` for
    Foxglove views (``onboard.runtime.mcap_log.McapLog.log_view``; the layers' ``foxglove.Grid``)."""
    cfg = checked_config(config)
    node = Node("loader", log=log)
    estimation = node.add("estimation", CutEstimation(cfg, machine, grid, view)) if cfg["estimation"] else None
    node.add("mapping", BlindMapping(grid, cfg, estimation, erode_fn))
    return node

