"""``python -m harness replay LOG.mcap``: re-run an app recorded at its boundary and compare its outputs.

A Node that records (``onboard.runtime.node.Node.record``) writes its recipe and settings
(``/app/config``), every sample entering an entry point (``/app/in/<name>``), every tick
(``/app/step``: time and tick index) and every output (``/app/out/<name>``), in the order they
happened. Replay rebuilds the app from ``/app/config`` (the recipes in ``APPS``), feeds the inputs
and ticks in that order through the same entry points, records what the rebuilt app outputs, and
compares it with the log, topic by topic: counts, the largest absolute difference of any number,
and the time of the first difference.

Exit status: 0 identical, 3 diverged, 2 for a file that is not a readable recording or whose end
is cut or corrupt (the readable prefix is replayed and reported first). Writes ``DIR/replay.json`` (standard
JSON: a topic's ``max_abs_diff`` is null where its outputs differ in shape or in something that is no number)
and ``DIR/replay.png`` (logged vs replayed estimate).

A tick's ``/app/step`` is recorded after its io groups ran (the drivers an app polls itself, e.g.
the Pi app's IMU and pose), so what they read that tick is recorded before it; every group of a
tick gets the tick's time. Replay feeds each input where it was recorded and then steps, and the
rebuilt app's stand-in drivers read nothing. ``--impl pure|cython|numpy`` rebuilds an ES-EKF
estimator with another implementation (default: the recorded one), or a swarm member's particle
filters on other kernels (a swarm member's random draws are recorded inputs: ``random_state``).
The hill leveler (``hill_leveler``) rebuilds from its settings; its random walk's draws are recorded
inputs too. The soil loader app (``soil_loader``) rebuilds from its settings, the machine's constants, the
erosion kernel and the starting surface; its inputs are the machine's samples, the operator's
commands (learned layers) and the end of the mission. ``--views OUT.mcap`` writes the rebuilt boat
app's Foxglove views ("what the vehicle was thinking", ``onboard.vessel.boat_views``) into a new log.
"""
import copy
import json
import math
import os
import sys

from mcap.records import Channel, DataEnd, Message, Schema
from mcap.stream_reader import StreamReader

from boards.rpi.app import RpiGroundRobot
from harness.config import ConfigError, non_negative_float
from harness.report.run_report import report_folder, write_whole
from onboard.impl import IMPLEMENTATIONS, ImplUnavailable
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.mcap_log import McapLog
from onboard.runtime.replay_feed import (CONFIG_TOPIC, OUT_PREFIX, STEP_TOPIC, ReplayFeedError, before_last_tick,
                                         estimator_from_config, feed, ground_robot_from_config)

EXIT_IDENTICAL = 0
EXIT_BAD_LOG = 2
EXIT_DIVERGED = 3


class ReplayError(ValueError):
    """The log holds no recording this tool can rebuild (one line for the user)."""


# ---------------------------------------------------------------------------------------------- reading
def read_recording(path):
    """-> (events, damage): events = [(topic, schema_name, time_us, data dict)] of the ``/app/`` topics in
    file (= recording) order; damage = None, or one line saying where the file stopped being readable. A file
    whose data section ends cleanly (its DataEnd record read, data CRC checked) and whose summary or footer is
    then cut or corrupt keeps every event; otherwise the events of a damaged file end before its last tick.
    ReplayError (one line) for a file that holds no readable app record."""
    events = []
    schemas = {}
    channels = {}
    damage = None
    records = 0                 # records read, the header's included
    data_complete = False       # the DataEnd record was read: every message of the file was read
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ReplayError("cannot read %s: %s" % (path, exc))
    try:
        for record in StreamReader(fh, validate_crcs=True).records:
            records += 1
            if isinstance(record, Schema):
                schemas[record.id] = record.name
            elif isinstance(record, Channel):
                channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
            elif isinstance(record, Message):
                topic, schema = channels.get(record.channel_id, ("", ""))
                if topic.startswith("/app/"):
                    events.append((topic, schema, record.log_time // 1000, json.loads(record.data)))
            elif isinstance(record, DataEnd):
                data_complete = True
    except Exception as exc:        # noqa: BLE001 - a damaged file breaks the reader (mcap, zstd, json, struct) anywhere
        kind = type(exc).__name__
        if kind == "error":         # struct.error (a record shorter than its fields), zlib.error: say whose
            kind = "%s.error" % type(exc).__module__
        why = "%s%s" % (kind, (": %s" % exc) if str(exc) else "")
        if not events:
            if data_complete:
                raise ReplayError("no app recording in %s (its data holds no /app/ record; its end is cut or "
                                  "corrupt: %s)" % (path, why))
            if records:
                raise ReplayError("%s is cut or corrupt before its first app record (%s)" % (path, why))
            raise ReplayError("%s is not a readable MCAP recording (%s)" % (path, why))
        if data_complete:
            damage = "%s is cut or corrupt after its data section (%d app records, all read; %s)" % (
                path, len(events), why)
        else:
            damage = "%s is cut or corrupt after %d app records (%s)" % (path, len(events), why)
            # the last tick's outputs may be lost with the rest: the prefix ends before that tick
            events = before_last_tick(events)
    finally:
        fh.close()
    return events, damage


# ---------------------------------------------------------------------------------------------- apps
class _ReplayMotors:
    """Motors of a replayed app: commands go nowhere (the app's outputs are compared instead)."""

    def command(self, wheel_cmd):
        return True

    def stop(self, now_us):
        return True

    # the Pi app's motor driver interface: its polls deliver nothing, it reports no faults (the
    # recorded fault sets arrive at the app's ``motor_faults`` entry point)
    def start(self, now_us):
        pass

    def poll(self, now_us):
        return []

    def faults(self):
        return ()

    def shutdown(self, now_us):
        return 0

    def report(self):
        return {}


def _rebuilt(fn, *args):
    """``fn(*args)``, its rebuild errors (an implementation not built here, an estimator kind replay
    cannot rebuild) as one-line :class:`ReplayError`."""
    try:
        return fn(*args)
    except ImplUnavailable as exc:
        raise ReplayError("cannot rebuild the ESKF estimator: %s" % exc)
    except ReplayFeedError as exc:
        raise ReplayError(str(exc))


def _estimator(est):
    """The recorded estimator rebuilt (:func:`onboard.runtime.replay_feed.estimator_from_config`)."""
    return _rebuilt(estimator_from_config, est)


def _ground_robot(config):
    """The ground robot's recipe (:func:`onboard.runtime.replay_feed.ground_robot_from_config`) with
    stand-in motors."""
    return _rebuilt(ground_robot_from_config, config, _ReplayMotors())


class _ReplayImu:
    """IMU stand-in of a replayed Pi app: reads nothing (the recorded samples are fed at the entry)."""
    initialized = True

    def read(self, now_us):
        return None


class _ReplayPoseSource:
    """Pose-source stand-in of a replayed Pi app: receives nothing (the recorded poses are fed)."""
    port = None

    def poll(self, now_us):
        return []


def _rpi_ground_robot(config):
    """The Pi app (boards.rpi.app.RpiGroundRobot) with the same parts and rate groups; motors, IMU and
    pose source are stand-ins (the samples they delivered are recorded at the entry points)."""
    rpi = config["rpi"]
    return RpiGroundRobot(config["waypoints_ne_m"], _ReplayMotors(),
                          imu=_ReplayImu() if rpi["has_imu"] else None,
                          pose_source=_ReplayPoseSource() if rpi["has_pose_source"] else None,
                          runtime_config=config["runtime"], follower_config=config["follower"],
                          telemetry_rate_hz=rpi["telemetry_rate_hz"], pose_poll_hz=rpi["pose_poll_hz"],
                          start_us=rpi["start_us"], estimator=_estimator(config["estimator"]))


class _ReplayOutboards:
    """Outboards of a replayed boat app: commands go nowhere, polls deliver nothing (the recorded telemetry
    is fed at the app's ``outboard`` entry point)."""

    def start(self, now_us):
        pass

    def command(self, throttle_left, throttle_right, now_us):
        return True

    def stop(self, now_us):
        return True

    def poll(self, now_us):
        return []

    def report(self):
        return {}


class _ReplaySerial:
    """A replayed app's serial input: reads nothing (what its io part parsed is recorded at the entries)."""

    def read(self, max_bytes=4096, timeout_s=0.0):
        return b""


def _wamv_boat(config, view=None):
    """The WAM-V boat app (boards.wamv.app.WamvApp, also its service) with stand-in outboards and GNSS line;
    ``view``: where its Foxglove views go (``--views``), or None."""
    from boards.wamv.app import WamvApp
    return WamvApp(_ReplayOutboards(), _ReplaySerial(), config, view=view)


class _ReplayVelocityDriver:
    """Driver of a replayed swarm member: its commands go nowhere (the app's outputs are compared)."""

    def command(self, setpoint):
        return True

    def land(self, now_us):
        return True


SWARM_MODEL_KINDS = ("float", "int8", "int8-pure")


def _is_swarm_member(config):
    """Whether ``config`` is a swarm member's recorded settings (``SwarmMember.recipe_config``)."""
    return isinstance(config, dict) and isinstance(config.get("agent"), dict) and "member" in config


def _swarm_member(config):
    """The swarm member (onboard.swarm.member.SwarmMember) rebuilt from its recorded settings: the recorded
    models (policy / estimator kinds, folder relative to the repository), particle-filter kernels of the
    recorded (or ``--impl``'s) implementation, a stand-in driver, and stand-in draws whose state the
    recorded ``random_state`` inputs set before each decision."""
    from boards.crazyflie.cli import load_models
    from onboard.estimators import particle_filter as pf_mod
    from onboard.swarm.member import SwarmMember

    models = config.get("models") or {}
    for key in ("policy", "estimator"):
        if models.get(key) not in SWARM_MODEL_KINDS:
            raise ReplayError("the recording names no %s model this replay can load (got %r; known: %s)"
                              % (key, models.get(key), ", ".join(SWARM_MODEL_KINDS)))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    model_dir = os.path.join(repo, models.get("dir") or os.path.join("models", "swarm"))
    for need in ("bearing", "dqn"):
        if not os.path.isdir(os.path.join(model_dir, need)):
            raise ReplayError("the recorded models are not here: %s has no %s/ folder" % (model_dir, need))
    net, dqn = load_models(model_dir, models["policy"], models["estimator"])
    try:
        kernels = pf_mod.kernels_for(config.get("impl") or "pure")
    except ImplUnavailable as exc:
        raise ReplayError("cannot rebuild the particle filters: %s" % exc)
    return SwarmMember(dqn, net, _replay_draws(), config["peers"], _ReplayVelocityDriver(),
                       config["member"], config["agent"], kernels=kernels, start_us=config["start_us"],
                       name=config.get("name") or "swarm_member", models=models)


class _Rebuilt:
    """A rebuilt app that is its Node (``node``)."""

    def __init__(self, node):
        self.node = node


def _soil_loader(config):
    """The soil loader app (onboard.soil.loader_app: blind mapping, per-cut estimates, soil layers) rebuilt from
    its recipe (``loader_app.recipe_config``: settings, machine constants, erosion kernel, starting surface)."""
    from onboard.soil import loader_app
    try:
        return _Rebuilt(loader_app.app_from_recipe(config))
    except ValueError as exc:
        raise ReplayError("cannot rebuild the soil loader app: %s" % exc)


def _replay_draws():
    """Stand-in random draws of a rebuilt app: the recorded ``random_state`` inputs set their state before each
    use (``onboard.runtime.draws_state.DrawsState``); seeded, so that a recording without them replays the same
    way every time."""
    import numpy as np

    from onboard.estimators.particle_filter_numpy import NumpyDraws
    return NumpyDraws(np.random.default_rng(0))


def _hill_leveler(config):
    """The hill-sensing leveler (onboard.leveling.hill_app.HillLevelerApp) rebuilt from its recorded settings,
    with stand-in motors and stand-in draws whose state the recorded ``random_state`` inputs set before each
    control step."""
    from onboard.leveling.hill_app import HillLevelerApp
    return HillLevelerApp(lambda cmd: None, _replay_draws(), config["config"],
                          name=config.get("name") or HillLevelerApp.APP, start_us=config.get("start_us", 0))


class _ReplayLevelerLink:
    """Link stand-in of a replayed AVR leveler: polls nothing (the recorded pitches are fed at the entry point),
    takes the phase commands."""

    def poll(self, now_us):
        return None

    def set_phase(self, phase, now_us):
        pass


def _avr_leveler(config):
    """The AVR leveler's host app (boards.arduino.leveler_app.AvrLeveler) rebuilt from its recorded settings,
    with stand-in link and motors and stand-in draws whose state the recorded ``random_state`` inputs set."""
    from boards.arduino.leveler_app import AvrLeveler
    return AvrLeveler(_ReplayLevelerLink(), _replay_draws(), config["config"], config["hill"],
                      start_us=config.get("start_us", 0), motors=_ReplayMotors())


# recorded app name -> fn(config) -> the app (with ``node``), rebuilt as it was recorded:
# - ground_robot: onboard.runtime.ground_robot's recipe (the waypoints and grading scenarios);
# - avr_ground_robot: the AVR robot's host app (boards/arduino/app.py), the ground robot's parts plus the
#   link's poll, whose samples are recorded where they enter the estimation;
# - rpi_ground_robot: the Raspberry Pi app and service (boards/rpi; also the grading dozer on VESC motors);
# - mp_ground_robot: the MicroPython boards' app (boards/mp_common/mp_app.py), recorded into the board's
#   ring log (python -m onboard.deploy BOARD --pull-log OUT.mcap);
# - swarm_member: one member of a swarm flight (harness/scenarios/swarm/study.py: record_member), or any
#   SwarmMember.record;
# - wamv_boat: the WAM-V boat app and service (boards/wamv);
# - soil_loader: the track loader's soil-mapping app (onboard/soil/loader_app.py), recorded by a soil episode
#   given a log (harness/scenarios/soil/soil_episode.py; soil-strip with a report folder); its outputs are the
#   sweeps, the per-cut estimates and the soil layers' window updates;
# - hill_leveler: one robot of level-hill (harness/scenarios/leveling/level_hill.py: record.app_robot), or any
#   HillLevelerApp.record; its inputs are the IMU samples and the random walk's draws, its output the tracks'
#   commands;
# - avr_leveler: the AVR leveler's host app (boards/arduino/leveler_app.py, fil-leveler), the board's pitch
#   entering as PitchSample, the random walk's draws as inputs, the wheel and phase commands as outputs.
APPS = {GroundRobotRuntime.APP: _ground_robot, "avr_ground_robot": _ground_robot,
        RpiGroundRobot.APP: _rpi_ground_robot, "mp_ground_robot": _ground_robot, "swarm_member": _swarm_member,
        "wamv_boat": _wamv_boat, "soil_loader": _soil_loader, "hill_leveler": _hill_leveler,
        "avr_leveler": _avr_leveler}
# apps whose rebuild takes a ``view`` for its Foxglove views (``--views``)
VIEW_APPS = ("wamv_boat",)


# ---------------------------------------------------------------------------------------------- replay
def _as_data(msg):
    return msg.as_dict() if hasattr(msg, "as_dict") else dict(msg)


def _leaves(value, path=()):
    """(path, leaf) of every number, boolean, null and text in ``value`` (tables by sorted key, lists by index):
    the path tells a field's name and place, so outputs of another shape never compare as the same."""
    if isinstance(value, (list, tuple)) and value:
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, path + (i,))]
    if isinstance(value, dict) and value:
        return [leaf for k in sorted(value) for leaf in _leaves(value[k], path + (k,))]
    if isinstance(value, tuple):
        return [(path, [])]
    return [(path, value)]            # a number, boolean, null, text, or an empty list or table


def _difference(logged, replayed):
    """(largest absolute difference of the numbers, whether anything differs at all); infinite where the two
    differ in shape (a field's name, a list's length) or in something that is no number."""
    a, b = _leaves(logged), _leaves(replayed)
    if len(a) != len(b):
        return math.inf, True
    worst = 0.0
    differs = False
    for (path_x, x), (path_y, y) in zip(a, b):
        if path_x != path_y:
            return math.inf, True
        if isinstance(y, float) and not math.isfinite(y):
            y = None                        # the log writes NaN / inf as null
        if x == y and not (isinstance(x, float) and isinstance(y, float) and x == 0.0
                           and math.copysign(1.0, x) != math.copysign(1.0, y)):
            continue                        # equal, and -0.0 against 0.0 counts as a difference (other bits)
        differs = True
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            worst = max(worst, abs(x - y))
        else:
            worst = math.inf
    return worst, differs


def recorded_estimator(config):
    """The ``estimator`` table of a recorded app's settings; an empty table where there is none or it is no
    table (an app without one, a recording edited by hand: its rebuild says what is wrong)."""
    est = config.get("estimator")
    return est if isinstance(est, dict) else {}


def _with_impl(config, impl):
    """``config`` with its ES-EKF estimator's implementation (a swarm member: its particle filters'
    kernels) replaced by ``impl`` (None: as recorded)."""
    if impl is None:
        return config
    if impl not in IMPLEMENTATIONS:
        raise ReplayError("unknown implementation %r (choose from %s)" % (impl, ", ".join(IMPLEMENTATIONS)))
    if _is_swarm_member(config):
        config = copy.deepcopy(config)
        config["impl"] = impl
        return config
    est = config.get("estimator")
    kind = est.get("kind") if isinstance(est, dict) else None
    if kind != "eskf":
        raise ReplayError("--impl picks the ESKF's implementation, but this recording's estimator is %r" % (kind,))
    config = copy.deepcopy(config)
    config["estimator"]["impl"] = impl
    return config


def outputs_of(events):
    """The recorded outputs: ``{"/app/out/<name>": [(time_us, data), ...]}``."""
    logged = {}
    for topic, _schema, time_us, data in events:
        if topic.startswith(OUT_PREFIX):
            logged.setdefault(topic, []).append((time_us, data))
    return logged


def compare_outputs(logged, replayed, tolerance=0.0):
    """Per output topic (name without the prefix): counts, the largest absolute difference of any
    number, and the time of the first difference beyond ``tolerance`` (None: none)."""
    topics = {}
    for topic in sorted(set(logged) | set(replayed)):
        a, b = logged.get(topic, []), replayed.get(topic, [])
        worst, first = 0.0, None
        for (t_a, d_a), (t_b, d_b) in zip(a, b):
            diff, differs = _difference(d_a, d_b)
            if tolerance and diff <= tolerance:
                differs = False
            if t_a != t_b:
                differs = True
                diff = max(diff, abs(t_a - t_b) * 1e-6)
            worst = max(worst, diff)
            if differs and first is None:
                first = t_a
        if len(a) != len(b) and first is None:
            first = (a[len(b)][0] if len(a) > len(b) else b[len(a)][0])
        topics[topic[len(OUT_PREFIX):]] = {"logged": len(a), "replayed": len(b), "max_abs_diff": worst,
                                           "first_divergence_us": first}
    return topics


def json_ready(value):
    """``value`` (tables, lists, numbers) with every NaN or infinite float as None, for a report file in standard
    JSON (``max_abs_diff`` is infinite where outputs differ in shape or in something that is no number)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def _reason(exc):
    """Why a recorded setting or record was refused, in words: a missing key's name, else the exception's text."""
    if isinstance(exc, KeyError) and exc.args:
        return "no %r" % (exc.args[0],)
    return str(exc) or type(exc).__name__


def recorded_header(events):
    """The recording's ``/app/config`` record (its first ``/app/`` record): a table naming the ``app`` and its
    ``config`` table; ReplayError (one line) when there is none or it was edited into something else."""
    if not events or events[0][0] != CONFIG_TOPIC:
        raise ReplayError("no app recording in this log (its first /app/ record must be %s)" % CONFIG_TOPIC)
    header = events[0][3]
    if not isinstance(header, dict) or not isinstance(header.get("app"), str):
        raise ReplayError("the recording's %s names no app (got %.80r)" % (CONFIG_TOPIC, header))
    if not isinstance(header.get("config"), dict):
        raise ReplayError("the recording's %s holds no config table for app %r (got %.80r)"
                          % (CONFIG_TOPIC, header["app"], header.get("config")))
    return header


def replay_events(events, impl=None, tolerance=0.0, view=None):
    """Rebuild the recorded app, feed it the recorded inputs and ticks; -> per-topic comparison.
    ``impl``: the ES-EKF implementation for the rebuilt app (pure | cython | numpy; None: as recorded).
    ``tolerance``: numbers differing by at most this much count as the same (0: bit exact; e.g. 1e-12
    for a MicroPython board's log); times and counts are always compared exactly. ``view``: a
    ``view(topic, time_us, schema_name, msg)`` for the rebuilt app's Foxglove views (the boat app's,
    ``VIEW_APPS``; e.g. a log recorded on the boat without them)."""
    header = recorded_header(events)
    build = APPS.get(header["app"])
    if build is None:
        raise ReplayError("recorded app %r is not one replay can rebuild (known: %s)"
                          % (header["app"], ", ".join(sorted(APPS))))
    config = _with_impl(header["config"], impl)
    if view is not None and header["app"] not in VIEW_APPS:
        raise ReplayError("recorded app %r writes no views (--views is for: %s)"
                          % (header["app"], ", ".join(sorted(VIEW_APPS))))
    try:
        app = build(config) if view is None else build(dict(config, views=True), view)
    except ReplayError:
        raise
    except (KeyError, TypeError, ValueError) as exc:     # settings edited by hand: a key gone, a wrong type
        raise ReplayError("cannot rebuild the recorded app %r from its settings: %s" % (header["app"], _reason(exc)))
    if view is not None:
        config = dict(config, views=True)
    node = app.node
    replayed = {}

    def sink(topic, time_us, msg):
        if topic.startswith(OUT_PREFIX):
            replayed.setdefault(topic, []).append((time_us, json.loads(json.dumps(_as_data(msg)))))

    node.record(sink, header["app"], config)
    logged = outputs_of(events)
    fed = [None]

    def tracked():              # which record the rebuilt app refused, for the message
        for event in events[1:]:
            fed[0] = event
            yield event
    try:
        inputs, _ticks = feed(node, tracked())
    except ReplayFeedError as exc:
        raise ReplayError(str(exc))
    except (KeyError, TypeError, ValueError) as exc:     # a record edited by hand
        raise ReplayError("the recorded %s at %d us cannot be fed to the rebuilt app: %s"
                          % (fed[0][0], fed[0][2], _reason(exc)))
    topics = compare_outputs(logged, replayed, tolerance)
    est = recorded_estimator(config)
    if _is_swarm_member(config):            # its particle filters' kernels
        est = {"kind": "particle_filter", "impl": config.get("impl")}
        recorded_impl = header["config"].get("impl")
    else:
        recorded_impl = recorded_estimator(header["config"]).get("impl")
    return {"app": header["app"], "code_version": header.get("code_version", ""), "inputs": inputs,
            "estimator": est.get("kind"), "impl": est.get("impl"),
            "recorded_impl": recorded_impl,
            "ticks": sum(1 for e in events if e[0] == STEP_TOPIC),
            "identical": all(t["first_divergence_us"] is None for t in topics.values()), "topics": topics,
            "tolerance": tolerance,
            "estimates": (logged.get(OUT_PREFIX + "estimate", []), replayed.get(OUT_PREFIX + "estimate", []))}


def _north_east(estimate):
    """(north_m, east_m) of a recorded estimate: ``pos_ned_m``, or a boat's ``state`` (yaw, yaw rate, north,
    east, surge, sway); None for one that holds neither (a record edited by hand)."""
    try:
        if "pos_ned_m" in estimate:
            north, east = estimate["pos_ned_m"][0], estimate["pos_ned_m"][1]
        else:
            north, east = estimate["state"][2], estimate["state"][3]
    except (KeyError, IndexError, TypeError):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (north, east)):
        return None
    return north, east


def _plot(estimates, path):
    """The logged and the replayed position estimates (north over east, m): the logged one wide and pale
    under the replayed one, so that both stay visible where they agree; estimates that hold no position are
    left out. The PNG is written whole (:func:`harness.report.run_report.write_whole`)."""
    import io

    import matplotlib.pyplot as plt

    from harness.report.plots import figure, label
    fig, ax = figure(size_in=(6, 5))
    for records, style, lw, alpha, name in ((estimates[0], "C0", 4, 0.35, "logged"),
                                            (estimates[1], "C1--", 1, 1.0, "replayed")):
        points = [p for p in (_north_east(d) for _, d in records) if p is not None]
        ax.plot([p[1] for p in points], [p[0] for p in points], style, lw=lw, alpha=alpha, label=name)
    ax.axis("equal")
    label(ax, "estimated position: logged vs replayed", "east (m)", "north (m)")
    buf = io.BytesIO()
    fig.savefig(buf, dpi=100, format="png")
    plt.close(fig)
    write_whole(path, buf.getvalue())


def cmd_replay(args):
    views_path = getattr(args, "views", None)
    views_log = None
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(args.log)), "replay")
    try:
        events, damage = read_recording(args.log)
        report_folder(out_dir)
        if views_path:
            # checked before the views log is opened (which empties the file there): the recording itself, or
            # any file, is never emptied or removed for a replay that cannot write views
            if os.path.exists(views_path) and os.path.samefile(views_path, args.log):
                raise ReplayError("--views %s names the log being replayed: name a new file" % views_path)
            app = recorded_header(events)["app"]
            if app not in VIEW_APPS:
                raise ReplayError("recorded app %r writes no views (--views is for: %s)"
                                  % (app, ", ".join(sorted(VIEW_APPS))))
            try:
                views_log = McapLog(views_path)
            except OSError as exc:
                raise ReplayError("cannot write %s: %s" % (views_path, exc))
        result = replay_events(events, impl=getattr(args, "impl", None),
                               tolerance=getattr(args, "tolerance", 0.0),
                               view=None if views_log is None else views_log.log_view)
    except (ReplayError, ConfigError) as exc:
        if views_log is not None:           # no views log left behind for a replay that did not run
            views_log.close()
            os.remove(views_path)
            views_log = None
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_BAD_LOG
    finally:
        if views_log is not None:
            views_log.close()
    estimates = result.pop("estimates")
    result["damage"] = damage
    write_whole(os.path.join(out_dir, "replay.json"), json.dumps(json_ready(result), indent=2, sort_keys=True))
    if estimates[0] or estimates[1]:
        _plot(estimates, os.path.join(out_dir, "replay.png"))
    for name, t in sorted(result["topics"].items()):
        print("%-10s logged %6d  replayed %6d  max |diff| %-10.3g first divergence %s"
              % (name, t["logged"], t["replayed"], t["max_abs_diff"],
                 "-" if t["first_divergence_us"] is None else "%.6f s" % (t["first_divergence_us"] * 1e-6)))
    if result["impl"]:
        print("estimator %s, implementation %s (recorded: %s)" % (result["estimator"], result["impl"],
                                                                  result["recorded_impl"]))
    if result["tolerance"]:
        print("numbers compared within --tolerance %g" % result["tolerance"])
    print("%s: %d inputs, %d ticks replayed; %s (report: %s)"
          % (result["app"], result["inputs"], result["ticks"],
             "identical" if result["identical"] else "DIVERGED", out_dir))
    if damage:
        print("error: %s; the readable prefix was replayed" % damage, file=sys.stderr)
        return EXIT_BAD_LOG
    return EXIT_IDENTICAL if result["identical"] else EXIT_DIVERGED


def run_subcommand(add, name, argv):
    """``python -m harness NAME ARGV...`` of the subcommand that ``add(subparsers)`` declares, parsed and
    run (for tests and scripts); returns its exit status."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m harness")
    add(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([name] + list(argv or []))
    return args.func(args)


def main_replay(argv=None):
    """``python -m harness replay`` with ``argv``; returns the exit status."""
    return run_subcommand(add_parser, "replay", argv)


def add_parser(sub):
    p = sub.add_parser("replay", help="re-run an app recorded at its boundary and compare its outputs",
                       description=__doc__.split("\n\n")[0] + " Exit status: 0 identical, 3 diverged, "
                       "2 not a readable recording or a cut/corrupt one (its readable prefix is replayed).")
    p.add_argument("log", help="an MCAP log with an app recording (e.g. reports/waypoints/log.mcap)")
    p.add_argument("--out", help="report folder (default: replay/ beside the log)")
    p.add_argument("--impl", choices=IMPLEMENTATIONS, default=None,
                   help="ES-EKF implementation of the rebuilt app, or a swarm member's particle-filter "
                        "kernels (default: the recorded one)")
    p.add_argument("--views", metavar="OUT.mcap", default=None,
                   help="write the rebuilt app's Foxglove views into OUT.mcap (the boat app: what it was thinking, "
                        "e.g. for a log recorded on the boat without them)")
    p.add_argument("--tolerance", type=non_negative_float, default=0.0, metavar="ABS",
                   help="numbers differing by at most ABS count as identical (default 0: bit exact; "
                        "times and counts always exact)")
    p.set_defaults(func=cmd_replay)
