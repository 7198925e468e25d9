"""The hill-sensing leveler's onboard app: a recipe of two parts on a :class:`onboard.runtime.node.Node`
(pure, MicroPython).

- ``tilt`` (:class:`TiltPart`): entry point ``on_imu(ImuSample)`` (recorded on ``/app/in/imu`` while the
  node records), watched input ``imu``; rate group ``tilt`` (``imu_rate_hz``) runs the queued samples
  through :class:`onboard.estimators.tilt.TiltEstimator` (accelerometer gravity vector + gyro);
- ``hill`` (:class:`HillDrive`, the AVR leveler's drive too): rate group ``control`` (``control_rate_hz``):
  the estimated pitch goes to :class:`onboard.leveling.hill_sensing.HillSensing` (Cook thesis Alg. 6 or its
  spin-at-peak variant), whose twist becomes track speeds by the thesis's skid-steer mapping (section 5.1.2,
  :func:`onboard.control.diffdrive.wheel_speeds`), handed to ``motors(WheelCmd)`` and output as
  ``/app/out/wheels``. While the failsafe is engaged (the IMU went stale) or before the first tilt estimate,
  the motors get a stop (a zero ``WheelCmd``);
- ``draws`` (``onboard.runtime.draws_state.DrawsState``): io group ``random_state`` at ``control_rate_hz``
  (before ``control`` in the same tick): while the node records, the state of ``rand`` through the entry
  point ``random_state``, so that a replay draws the same random walk.

The pitch the behaviour sees is the estimator's, never the truth. ``rand`` (anything with ``random()`` in
[0, 1); with ``get_state()`` / ``set_state(state)`` too, e.g.
``onboard.estimators.particle_filter_numpy.NumpyDraws``, its draws are recorded) draws the random walk.

:meth:`HillLevelerApp.record` records the app at its boundary (app ``hill_leveler``; see
``onboard.runtime.node``): ``python -m harness replay LOG`` rebuilds it from its recorded settings.
"""
from onboard.control.diffdrive import wheel_speeds
from onboard.core.samples import WheelCmd
from onboard.core.settings import POSITIVE, RATE_HZ, checked, int_at_least, under
from onboard.estimators import tilt
from onboard.estimators.tilt import TiltEstimator
from onboard.leveling import hill_sensing
from onboard.leveling.hill_sensing import HillSensing
from onboard.runtime.draws_state import DrawsState
from onboard.runtime.node import Node
from onboard.runtime.scheduler import GROUP_RATES

IMU_INPUT = "imu"
WHEELS_OUTPUT = "wheels"

DEFAULTS = {
    "imu_rate_hz": 100,
    "control_rate_hz": 20,
    "imu_timeout_us": 100000,
    "queue_limit": 32,
    "track_gauge_m": 0.19,            # B: distance between the track centre lines (Dagu Rover 5 class)
    "sprocket_radius_m": 0.03,        # r: drive sprocket radius (not in the thesis: a setting)
    "max_sprocket_radps": 9.0,        # 0.27 m/s track speed: the Rover 5's 0.25 m/s top speed with margin
    "tilt": dict(tilt.DEFAULTS),
    "behaviour": dict(hill_sensing.DEFAULTS),
}
SETTING_RANGES = dict(
    {"imu_rate_hz": RATE_HZ, "control_rate_hz": RATE_HZ, "imu_timeout_us": int_at_least(1),
     "queue_limit": int_at_least(1), "track_gauge_m": POSITIVE, "sprocket_radius_m": POSITIVE,
     "max_sprocket_radps": POSITIVE, ("imu_rate_hz", "control_rate_hz"): GROUP_RATES},
    **under("tilt", tilt.SETTING_RANGES), **under("behaviour", hill_sensing.SETTING_RANGES))


class TiltPart:
    """Part: the tilt estimator fed from the IMU entry point (module docstring)."""

    def __init__(self, config):
        self.estimator = TiltEstimator(config["tilt"])
        self.rate_hz = config["imu_rate_hz"]
        self.timeout_us = config["imu_timeout_us"]
        self.queue_limit = config["queue_limit"]
        self.queue = []
        self.dropped = 0
        self.rejected = 0
        self.node = None
        self.on_imu = self._on_imu

    def attach(self, node):
        self.node = node
        self.on_imu = node.entry(IMU_INPUT, self._on_imu)
        node.watch(IMU_INPUT, self.timeout_us)
        node.every("tilt", self.rate_hz, self._fuse)

    def _on_imu(self, sample):
        if not hasattr(sample, "is_finite") or not sample.is_finite():
            self.rejected += 1                # never fused, never feeds the watchdog
            return
        if len(self.queue) >= self.queue_limit:
            self.queue.pop(0)
            self.dropped += 1
        self.queue.append(sample)
        self.node.feed(IMU_INPUT, sample.time_us)

    def _fuse(self, now_us):
        queue, self.queue = self.queue, []
        for s in queue:
            self.estimator.predict(s)

    @property
    def pitch_rad(self):
        """The estimated pitch (rad, positive nose up), None before the first sample."""
        return self.estimator.pitch_rad if self.estimator.initialized else None

    def report(self):
        out = self.estimator.counters()
        out.update(dropped=self.dropped, rejected_at_entry=self.rejected)
        return out


class HillDrive:
    """Part: Cook thesis Alg. 6 on a pitch -> twist -> track speeds (thesis 5.1.2) -> motors, at ``rate_hz``
    in rate group ``group``; the one hill-sensing drive of every leveler app (this module's, and the AVR
    leveler's host app ``boards.arduino.leveler_app``).

    behaviour_cfg: :class:`onboard.leveling.hill_sensing.HillSensing` settings (None: its defaults).
    pitch: anything with ``pitch_rad`` (rad, nose up positive; None before the first estimate).
    motors: ``command(WheelCmd)`` (sprocket speeds, rad/s) and ``stop(now_us)``.
    track: (gauge_m, sprocket_radius_m, max_radps) of the skid-steer mapping.
    output: the name the commands are output under; a stop is output as a zero ``WheelCmd``.
    on_mode: None or ``on_mode(mode, now_us)`` after each behaviour step (the AVR leveler's phase).
    While the node's failsafe is engaged, or before the first pitch, the motors get a stop."""

    def __init__(self, behaviour_cfg, pitch, motors, rand, rate_hz, track, group="control", output=WHEELS_OUTPUT,
                 on_mode=None):
        self.behaviour = HillSensing(behaviour_cfg)
        self.pitch = pitch
        self.motors = motors
        self.rand = rand
        self.rate_hz = rate_hz
        self.gauge_m, self.radius_m, self.max_radps = (float(v) for v in track)
        self.group = group
        self.output = output
        self.on_mode = on_mode
        self.commands = 0
        self.stops = 0
        self.node = None

    def attach(self, node):
        self.node = node
        node.every(self.group, self.rate_hz, self._control)

    def _control(self, now_us):
        pitch = self.pitch.pitch_rad
        stop = self.node.failsafe.engaged or pitch is None
        if stop:
            self.stops += 1
            cmd = WheelCmd(now_us, 0.0, 0.0)
            self.motors.stop(now_us)
        else:
            twist = self.behaviour.step(pitch, now_us, self.rand)
            left, right = wheel_speeds(twist.speed_body_mps, twist.yaw_rate_radps, self.gauge_m, self.radius_m,
                                       self.max_radps)
            cmd = WheelCmd(now_us, left, right)
            self.commands += 1
            self.motors.command(cmd)
        self.node.output(self.output, now_us, cmd)
        if not stop and self.on_mode is not None:
            self.on_mode(self.behaviour.mode, now_us)

    def report(self):
        b = self.behaviour
        return {"steps": b.steps, "climbs": b.climbs, "spins": b.spins, "draws": b.draws,
                "bad_inputs": b.bad_inputs, "commands": self.commands, "stops": self.stops, "mode": b.mode_name}


class CallMotors:
    """The motors interface (``command(WheelCmd)``, ``stop(now_us)``) over one function that takes a
    ``WheelCmd``: a stop is a zero command."""

    def __init__(self, fn):
        self.command = fn

    def stop(self, now_us):
        self.command(WheelCmd(now_us, 0.0, 0.0))


class HillLevelerApp:
    """The recipe: ``Node(name)`` + ``tilt`` + ``hill``. ``motors(WheelCmd)`` receives the track speeds
    (rad/s of the sprockets); ``rand`` draws the random walk; ``config`` as :data:`DEFAULTS`."""

    APP = "hill_leveler"

    def __init__(self, motors, rand, config=None, name="hill_leveler", log=None, start_us=0):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "HillLevelerApp")
        self.cfg = cfg
        self.node = Node(name, start_us=start_us, log=log)
        self.tilt = self.node.add("tilt", TiltPart(cfg))
        track = (cfg["track_gauge_m"], cfg["sprocket_radius_m"], cfg["max_sprocket_radps"])
        self.hill = self.node.add("hill", HillDrive(cfg["behaviour"], self.tilt, CallMotors(motors), rand,
                                                    cfg["control_rate_hz"], track))
        self.draws = self.node.add("draws", DrawsState(rand, cfg["control_rate_hz"]))
        self.start_us = int(start_us)
        self.on_imu = self.tilt.on_imu
        self.step = self.node.step
        self.run = self.node.run

    def recipe_config(self):
        """What rebuilds this app (before its first input): its settings, node name and start time."""
        return {"config": self.cfg, "name": self.node.name, "start_us": self.start_us}

    def record(self, sink, code_version="", time_us=0):
        """Record the app at its boundary into ``sink(topic, time_us, msg)`` (app ``hill_leveler``;
        ``onboard.runtime.node.Node.record``); call it before the first input."""
        self.node.record(sink, self.APP, self.recipe_config(), code_version, time_us)

    @property
    def mode_name(self):
        return self.hill.behaviour.mode_name

    def report(self):
        return self.node.report()
