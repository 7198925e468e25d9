"""``python -m harness replay LOG.mcap``: re-run an app recorded at its boundary and compare its outputs.

A Node that records (``onboard.runtime.node.Node.record``) writes its recipe and settings
(``/app/config``), every sample entering an entry point (``/app/in/<name>``), every tick
(``/app/step``: time and tick index) and every output (``/app/out/<name>``), in the order they
happened. Replay rebuilds the app from ``/app/config`` (the recipes in ``APPS``), feeds the inputs
and ticks in that order through the same entry points, records what the rebuilt app outputs, and
compares it with the log, topic by topic: counts, the largest absolute difference of any number,
and the time of the first difference.

Exit status: 0 identical, 3 diverged, 2 for a file that is not a readable recording or whose end
is cut or corrupt (the readable prefix is replayed and reported first). Writes ``DIR/replay.json``
and ``DIR/replay.png`` (logged vs replayed estimate).
"""
import json
import math
import os
import subprocess
import sys

from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader

from onboard.core import samples as sample_types
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.runtime.ground_robot import GroundRobotRuntime

EXIT_IDENTICAL = 0
EXIT_BAD_LOG = 2
EXIT_DIVERGED = 3
CONFIG_TOPIC = "/app/config"
STEP_TOPIC = "/app/step"
IN_PREFIX = "/app/in/"
OUT_PREFIX = "/app/out/"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ReplayError(ValueError):
    """The log holds no recording this tool can rebuild (one line for the user)."""


def code_version():
    """The checkout's commit (``git describe --always --dirty``), or "" outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


# ---------------------------------------------------------------------------------------------- reading
def read_recording(path):
    """-> (events, damage): events = [(topic, schema_name, time_us, data dict)] of the ``/app/`` topics in
    file (= recording) order; damage = None, or one line saying where the file stopped being readable."""
    events = []
    schemas = {}
    channels = {}
    damage = None
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ReplayError("cannot read %s: %s" % (path, exc))
    try:
        for record in StreamReader(fh, validate_crcs=True).records:
            if isinstance(record, Schema):
                schemas[record.id] = record.name
            elif isinstance(record, Channel):
                channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
            elif isinstance(record, Message):
                topic, schema = channels.get(record.channel_id, ("", ""))
                if topic.startswith("/app/"):
                    events.append((topic, schema, record.log_time // 1000, json.loads(record.data)))
    except Exception as exc:        # noqa: BLE001 - a damaged file breaks the reader (mcap, zstd, json, struct) anywhere
        if not events:
            raise ReplayError("%s is not a readable MCAP recording (%s: %s)" % (path, type(exc).__name__, exc))
        damage = "%s is cut or corrupt after %d app records (%s%s)" % (
            path, len(events), type(exc).__name__, (": %s" % exc) if str(exc) else "")
        # the last tick's outputs may be lost with the rest: the prefix ends before that tick
        last_step = max((i for i, e in enumerate(events) if e[0] == STEP_TOPIC), default=len(events))
        events = events[:last_step]
    finally:
        fh.close()
    return events, damage


def _decode_sample(schema, data):
    """A logged sample back into its onboard.core.samples type (null -> NaN: the log writes NaN as null)."""
    cls = getattr(sample_types, schema, None)
    if cls is None or not hasattr(cls, "FIELDS"):
        raise ReplayError("recorded input of unknown sample type %r" % (schema,))
    args = {}
    for name in cls.FIELDS:
        v = data.get(name)
        if isinstance(v, list):
            v = [float("nan") if x is None else x for x in v]
        args[name] = v
    return cls(**args)


# ---------------------------------------------------------------------------------------------- apps
class _ReplayMotors:
    """Motors of a replayed app: commands go nowhere (the app's outputs are compared instead)."""

    def command(self, wheel_cmd):
        return True

    def stop(self, now_us):
        return True


def _ground_robot(config):
    est = config["estimator"]
    if est["kind"] != "planar":
        raise ReplayError("ground_robot with a %r estimator cannot be rebuilt by replay yet" % (est["kind"],))
    return GroundRobotRuntime(config["waypoints_ne_m"], _ReplayMotors(), config["runtime"],
                              follower_config=config["follower"], estimator=PlanarEkf(est["config"]))


# recorded app name -> fn(config) -> the app (with ``node``), rebuilt as it was recorded. The AVR
# robot's host app is the ground robot's parts plus the link's poll, whose samples are recorded where
# they enter the estimation: the ground robot's recipe replays it.
APPS = {GroundRobotRuntime.APP: _ground_robot, "avr_ground_robot": _ground_robot}


# ---------------------------------------------------------------------------------------------- replay
def _as_data(msg):
    return msg.as_dict() if hasattr(msg, "as_dict") else dict(msg)


def _numbers(value):
    if isinstance(value, bool) or value is None:
        return [value]
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numbers(v)]
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _numbers(value[k])]
    return [value]


def _difference(logged, replayed):
    """(largest absolute difference of the numbers, whether anything differs at all)."""
    a, b = _numbers(logged), _numbers(replayed)
    if len(a) != len(b):
        return math.inf, True
    worst = 0.0
    differs = False
    for x, y in zip(a, b):
        if isinstance(y, float) and not math.isfinite(y):
            y = None                        # the log writes NaN / inf as null
        if x == y:
            continue
        differs = True
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            worst = max(worst, abs(x - y))
        else:
            worst = math.inf
    return worst, differs


def replay_events(events):
    """Rebuild the recorded app, feed it the recorded inputs and ticks; -> per-topic comparison."""
    if not events or events[0][0] != CONFIG_TOPIC:
        raise ReplayError("no app recording in this log (its first /app/ record must be %s)" % CONFIG_TOPIC)
    header = events[0][3]
    build = APPS.get(header.get("app"))
    if build is None:
        raise ReplayError("recorded app %r is not one replay can rebuild (known: %s)"
                          % (header.get("app"), ", ".join(sorted(APPS))))
    app = build(header["config"])
    node = app.node
    replayed = {}

    def sink(topic, time_us, msg):
        if topic.startswith(OUT_PREFIX):
            replayed.setdefault(topic, []).append((time_us, json.loads(json.dumps(_as_data(msg)))))

    node.record(sink, header["app"], header["config"])
    logged = {}
    inputs = 0
    for topic, schema, time_us, data in events[1:]:
        if topic.startswith(IN_PREFIX):
            entry = node.entries.get(topic[len(IN_PREFIX):])
            if entry is None:
                raise ReplayError("recorded input %s has no entry point in the rebuilt app" % topic)
            entry(_decode_sample(schema, data))
            inputs += 1
        elif topic == STEP_TOPIC:
            node.scheduler.tick_index = data["tick"]
            node.step(data["time_us"])
        elif topic.startswith(OUT_PREFIX):
            logged.setdefault(topic, []).append((time_us, data))
    topics = {}
    for topic in sorted(set(logged) | set(replayed)):
        a, b = logged.get(topic, []), replayed.get(topic, [])
        worst, first = 0.0, None
        for (t_a, d_a), (t_b, d_b) in zip(a, b):
            diff, differs = _difference(d_a, d_b)
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
    return {"app": header["app"], "code_version": header.get("code_version", ""), "inputs": inputs,
            "ticks": sum(1 for e in events if e[0] == STEP_TOPIC),
            "identical": all(t["first_divergence_us"] is None for t in topics.values()), "topics": topics,
            "estimates": (logged.get(OUT_PREFIX + "estimate", []), replayed.get(OUT_PREFIX + "estimate", []))}


def _plot(estimates, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    logged, replayed = estimates
    fig, ax = plt.subplots(figsize=(6, 5))
    for rows, label, style in ((logged, "logged", "-"), (replayed, "replayed", "--")):
        ax.plot([d["pos_ned_m"][1] for _, d in rows], [d["pos_ned_m"][0] for _, d in rows], style, label=label)
    ax.set_title("Estimated position: logged vs replayed")
    ax.set_xlabel("east (m)")
    ax.set_ylabel("north (m)")
    ax.axis("equal")
    ax.legend()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cmd_replay(args):
    try:
        events, damage = read_recording(args.log)
        result = replay_events(events)
    except ReplayError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_BAD_LOG
    estimates = result.pop("estimates")
    result["damage"] = damage
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(args.log)), "replay")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "replay.json"), "w") as fh:
        json.dump(result, fh, indent=2, sort_keys=True)
    if estimates[0] or estimates[1]:
        _plot(estimates, os.path.join(out_dir, "replay.png"))
    for name, t in sorted(result["topics"].items()):
        print("%-10s logged %6d  replayed %6d  max |diff| %-10.3g first divergence %s"
              % (name, t["logged"], t["replayed"], t["max_abs_diff"],
                 "-" if t["first_divergence_us"] is None else "%.6f s" % (t["first_divergence_us"] * 1e-6)))
    print("%s: %d inputs, %d ticks replayed; %s (report: %s)"
          % (result["app"], result["inputs"], result["ticks"],
             "identical" if result["identical"] else "DIVERGED", out_dir))
    if damage:
        print("error: %s; the readable prefix was replayed" % damage, file=sys.stderr)
        return EXIT_BAD_LOG
    return EXIT_IDENTICAL if result["identical"] else EXIT_DIVERGED


def main_replay(argv=None):
    """``python -m harness replay`` with ``argv`` (for tests and scripts); returns the exit status."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m harness")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return cmd_replay(parser.parse_args(["replay"] + list(argv or [])))


def add_parser(sub):
    p = sub.add_parser("replay", help="re-run an app recorded at its boundary and compare its outputs",
                       description=__doc__.split("\n\n")[0] + " Exit status: 0 identical, 3 diverged, "
                       "2 not a readable recording or a cut/corrupt one (its readable prefix is replayed).")
    p.add_argument("log", help="an MCAP log with an app recording (e.g. reports/waypoints/log.mcap)")
    p.add_argument("--out", help="report folder (default: replay/ beside the log)")
    p.set_defaults(func=cmd_replay)
