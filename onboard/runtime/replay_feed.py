"""Feeding a recording back into a rebuilt app (pure; runs on MicroPython).

A recording (:meth:`onboard.runtime.node.Node.record`) is a sequence of events
``(topic, schema, time_us, data)`` in the order they happened: ``/app/config`` first, then
``/app/in/<entry>`` (a sample entering that entry point; ``schema`` names its
``onboard.core.samples`` type, ``data`` its fields), ``/app/step`` (``{"time_us", "tick"}``) and
``/app/out/<name>`` (what the app output). :func:`feed` hands the inputs to the rebuilt app's
entry points and runs its ticks at the recorded times with the recorded tick indexes; the rebuilt
app's own recording then holds what it output, to compare with the recorded outputs.

:func:`ground_robot_from_config` rebuilds the ground robot's recipe from its recorded settings
(``GroundRobotRuntime.recipe_config``), the estimator included.
"""
from onboard.comms.line_link import f64_hex, hex_f64
from onboard.core import samples as sample_types
from onboard.runtime.node import CONFIG_TOPIC, IN_PREFIX, OUT_PREFIX, STEP_TOPIC  # noqa: F401 - re-exported

NAN = float("nan")
FLOAT_TAG = "f:"            # a double carried as the 16 hex digits of its bits (exact across interpreters)


class ReplayFeedError(ValueError):
    """A recorded event the rebuilt app cannot take (unknown sample type or entry point)."""


def _vessel_sample_type(schema):
    """A surface vessel's sample type named ``schema``: ``onboard.vessel.samples``, the outboards' telemetry,
    the arbiter's ``DestinationSample`` / ``ObstaclesSample`` (``onboard.vessel.arbiters_part``), the
    hydrophones' ``PingSample`` (``onboard.vessel.mission_part``) or the LIDAR's ``LidarFrame``
    (``onboard.vessel.buoy_perception``: numpy, so CPython only; its points come back as the recorded nested
    lists, every double exact)."""
    if schema == "OutboardTelemetry":
        from onboard.vessel.outboards import OutboardTelemetry
        return OutboardTelemetry
    if schema in ("DestinationSample", "ObstaclesSample"):
        from onboard.vessel import arbiters_part
        return getattr(arbiters_part, schema)
    if schema == "LidarFrame":
        from onboard.vessel.buoy_perception import LidarFrame
        return LidarFrame
    if schema == "PingSample":
        from onboard.vessel.mission_part import PingSample
        return PingSample
    from onboard.vessel import samples as vessel_samples
    return getattr(vessel_samples, schema, None)


SOIL_SAMPLES = ("MachineSample", "OperatorCommand", "MissionEnd", "LidarScan")


def _soil_sample_type(schema):
    """The soil loader app's sample type named ``schema`` (``onboard.soil.loader_app``), or None."""
    if schema in SOIL_SAMPLES:
        from onboard.soil import loader_app
        return getattr(loader_app, schema)
    return None


def decode_sample(schema, data):
    """A recorded sample back into its ``onboard.core.samples`` type (or a vessel's: :func:`_vessel_sample_type`).
    The MCAP log writes a non-finite number as null: in a list (nested lists too) it comes back as NaN; a
    single null field is passed as None (an optional field) and, where the type refuses None, as NaN (a
    refused non-finite input)."""
    cls = getattr(sample_types, schema, None) or _soil_sample_type(schema) or _vessel_sample_type(schema)
    if cls is not None and not hasattr(cls, "FIELDS") and hasattr(cls, "from_dict"):
        return cls.from_dict(data)          # a nested sample (its own table form), e.g. the loader's MachineSample
    if cls is None or not hasattr(cls, "FIELDS"):
        raise ReplayFeedError("recorded input of unknown sample type %r" % (schema,))
    args = {}
    nulls = []
    for name in cls.FIELDS:
        v = data.get(name)
        if isinstance(v, list):
            v = sample_types.nan_for_null(v)
        elif v is None:
            nulls.append(name)
        args[name] = v
    try:
        return cls(**args)
    except (TypeError, ValueError):
        if not nulls:
            raise
    for name in nulls:
        args[name] = NAN
    return cls(**args)


def floats_to_hex(value):
    """``value`` (nested lists, tuples, dicts) with every float as ``FLOAT_TAG`` + its 16 hex digits, so
    a JSON hand-over between CPython and MicroPython keeps every bit. A text that starts with ``FLOAT_TAG``
    gets one more ``FLOAT_TAG`` in front (16 hex digits hold no ``:``), so it comes back as the same text."""
    if isinstance(value, float):
        return FLOAT_TAG + f64_hex(value)
    if isinstance(value, str):
        return FLOAT_TAG + value if value.startswith(FLOAT_TAG) else value
    if isinstance(value, (list, tuple)):
        return [floats_to_hex(v) for v in value]
    if isinstance(value, dict):
        return {k: floats_to_hex(value[k]) for k in value}
    return value


def floats_from_hex(value):
    """The inverse of :func:`floats_to_hex` (tuples come back as lists)."""
    if isinstance(value, str) and value.startswith(FLOAT_TAG):
        rest = value[len(FLOAT_TAG):]
        return rest if rest.startswith(FLOAT_TAG) else hex_f64(rest)
    if isinstance(value, list):
        return [floats_from_hex(v) for v in value]
    if isinstance(value, dict):
        return {k: floats_from_hex(value[k]) for k in value}
    return value


def before_last_tick(events):
    """``events`` (each starting with its topic) up to, not including, the last ``/app/step``: what a
    log cut short holds for sure (the last tick's outputs may be lost with the rest)."""
    for i in range(len(events) - 1, -1, -1):
        if events[i][0] == STEP_TOPIC:
            return events[:i]
    return events


def feed(node, events):
    """Feed ``events`` (after the config) to ``node``: inputs to its entry points, ticks to its
    scheduler; recorded outputs are skipped. Returns (inputs fed, ticks run). ReplayFeedError for an input
    without an entry point or a tick whose index is not a whole number >= 0."""
    inputs = 0
    ticks = 0
    entries = node.entries
    scheduler = node.start()
    for topic, schema, time_us, data in events:
        if topic.startswith(IN_PREFIX):
            entry = entries.get(topic[len(IN_PREFIX):])
            if entry is None:
                raise ReplayFeedError("recorded input %s has no entry point in the rebuilt app" % topic)
            entry(decode_sample(schema, data))
            inputs += 1
        elif topic == STEP_TOPIC:
            tick = data["tick"]
            if not (isinstance(tick, int) and not isinstance(tick, bool) and tick >= 0):
                # a tick index of 2.5 would run no group of that tick (2.5 % 1 != 0): a replay differing silently
                raise ReplayFeedError("recorded tick index %r is not a whole number >= 0" % (tick,))
            scheduler.tick_index = tick
            node.step(data["time_us"])
            ticks += 1
    return inputs, ticks


def estimator_from_config(est):
    """The estimator a ground robot recorded (``GroundRobotRuntime.estimator_config``): the planar EKF,
    or the ES-EKF behind :class:`onboard.estimators.eskf_pose.EskfPoseEstimator` with its settings,
    consider sigma and implementation."""
    kind = est["kind"]
    if kind == "planar":
        from onboard.estimators.planar_ekf import PlanarEkf
        return PlanarEkf(est["config"])
    if kind == "eskf":
        from onboard.estimators.eskf_pose import EskfPoseEstimator
        return EskfPoseEstimator(est["config"], est["impl"], consider_sigma=est["consider_sigma"])
    raise ReplayFeedError("an app with a %r estimator cannot be rebuilt yet" % (kind,))


def ground_robot_from_config(config, motors):
    """The ground robot's recipe (``onboard.runtime.ground_robot``) rebuilt from its recorded settings."""
    from onboard.runtime.ground_robot import GroundRobotRuntime
    return GroundRobotRuntime(config["waypoints_ne_m"], motors, config["runtime"],
                              follower_config=config["follower"], estimator=estimator_from_config(config["estimator"]))
