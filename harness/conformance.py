"""``python -m harness conformance LOG.mcap``: one recording through every target, compared with the log.

The recorded app (a ground robot's recipe: ``ground_robot``, ``avr_ground_robot``,
``rpi_ground_robot``, ``mp_ground_robot``; or a swarm member, ``swarm_member``, whose particle
filters' kernels are the targets; see ``harness/replay.py``) is rebuilt and fed the recorded inputs
and ticks on each target:

- ``pure``, ``cython``, ``numpy``: CPython with that implementation of the ES-EKF (``onboard.impl``;
  a recording with the planar EKF, which has one implementation, runs ``pure`` only);
- ``micropython``: the same recipe inside MicroPython 1.27 (WebAssembly build under node, double
  precision; ``onboard.runtime.replay_feed`` runs there unchanged), its inputs handed over as the
  bits of each double and its outputs read back the same way.

Each target's outputs are compared with the recorded ones: the largest absolute difference per output
topic against the target's stated tolerance (``TOLERANCE``): bit-exact for pure and Cython, 1e-9 for
NumPy (its matrix products sum in another order: measured 8e-14 on the grading dozer's wheel
commands; on a swarm member's particle filters 1.2e-14, see ``APP_TOLERANCE``), 1e-12 for
double-precision MicroPython (a swarm member is skipped there). A single-precision board (RP2040,
ESP32 builds) is not a target here: its log (``python -m onboard.deploy BOARD --pull-log``) is checked with
``harness replay --tolerance``. Exit 0 when every target is within its tolerance, 3 when one is
not, 2 for a log that is not a readable recording (or is cut: its prefix is still checked).
Writes ``DIR/conformance.json`` (standard JSON: ``max_abs_diff`` null where outputs differ in shape or in
something that is no number).
"""
import json
import os
import sys

from harness.sim.micropython import MicroPythonError, available as micropython_available, onboard_files, run_micropython
from harness.report.run_report import report_folder, write_whole
from harness.replay import (EXIT_BAD_LOG, ReplayError, compare_outputs, json_ready, outputs_of, read_recording,
                            recorded_estimator, recorded_header, replay_events, run_subcommand)
from onboard.core.settings import ConfigError
from onboard.impl import IMPLEMENTATIONS, ImplUnavailable, load as load_impl
from onboard.runtime.replay_feed import OUT_PREFIX, floats_from_hex, floats_to_hex
from onboard.estimators.eskf import IMPL_MODULES as ESKF_IMPL_MODULES
from onboard.estimators.particle_filter import KERNEL_MODULES as PF_KERNEL_MODULES

EXIT_CONFORM = 0
EXIT_OUTSIDE = 3
TOLERANCE = {"pure": 0.0, "cython": 0.0, "numpy": 1e-9, "micropython": 1e-12}
# the ground robot's recipe, whichever board it was recorded on, is what the MicroPython target rebuilds
GROUND_ROBOT_APPS = ("ground_robot", "avr_ground_robot", "rpi_ground_robot", "mp_ground_robot")
# A swarm member (``swarm_member``, recorded by the swarm scenarios) runs its particle filters on the pure,
# Cython or NumPy kernels (onboard.estimators.particle_filter*; its random draws are recorded inputs, so
# every target draws the same numbers). Pure and Cython compute the same numbers bit for bit (measured: 0
# on every output). NumPy's kernels sum the weights pairwise and take exp/sin/cos from its own loops:
# measured on drone 0 of five cflib flights (swarm-fixed 2 and 4 drones, swarm-random 4 drones, 9-31 s,
# 89-309 decisions, goal resets included) 1.2e-14 at most on the decision's estimates, 6e-16 on the
# velocity commands, no resampling or DQN action flipped. The tolerance is the ES-EKF's 1e-9: an ulp
# difference that flips such a discrete choice (possible on a long flight) shows as a divergence.
# Not a MicroPython target: the member's models run on NumPy / LiteRT.
SWARM_MEMBER_APP = "swarm_member"
APP_TOLERANCE = {SWARM_MEMBER_APP: {"numpy": 1e-9}}
MICROPYTHON_HEAP_BYTES = 256 * 1024 * 1024

# Runs inside MicroPython: rebuilds the recipe from /events.json, feeds it, prints its outputs.
MICROPYTHON_RUN = r"""
import json
from onboard.runtime.replay_feed import OUT_PREFIX, feed, floats_from_hex, floats_to_hex, ground_robot_from_config


class Motors:
    def command(self, cmd):
        pass

    def stop(self, now_us):
        pass


with open("/events.json") as fh:
    events = json.load(fh)
config = floats_from_hex(events[0][3]["config"])
app = ground_robot_from_config(config, Motors())


def sink(topic, time_us, msg):
    if topic.startswith(OUT_PREFIX):
        print("OUT " + json.dumps([topic, time_us, floats_to_hex(msg.as_dict())]))


app.node.record(sink, "conformance", {})
feed(app.node, [(e[0], e[1], e[2], floats_from_hex(e[3])) for e in events[1:] if not e[0].startswith(OUT_PREFIX)])
print("DONE")
"""


def run_in_micropython(events):
    """The recorded ground robot's recipe fed inside MicroPython -> its outputs, as ``outputs_of`` gives
    the recorded ones."""
    header = events[0][3]
    if header.get("app") not in GROUND_ROBOT_APPS:
        raise ReplayError("the MicroPython target rebuilds the ground robot's recipe, not %r" % (header.get("app"),))
    est = recorded_estimator(header["config"])
    if est.get("kind") == "eskf":
        header = dict(header, config=dict(header["config"], estimator=dict(est, impl="pure")))
    shipped = [[events[0][0], events[0][1], events[0][2], floats_to_hex(header)]]
    shipped += [[t, s, tu, floats_to_hex(d)] for t, s, tu, d in events[1:] if not t.startswith(OUT_PREFIX)]
    files = onboard_files()
    files["/events.json"] = json.dumps(shipped)
    out = run_micropython(MICROPYTHON_RUN, files, heapsize=MICROPYTHON_HEAP_BYTES, timeout_s=1800)
    if "DONE" not in out:
        raise MicroPythonError("the MicroPython run ended early:\n" + out[-2000:])
    replayed = {}
    for line in out.splitlines():
        if line.startswith("OUT "):
            topic, time_us, data = json.loads(line[4:])
            replayed.setdefault(topic, []).append((time_us, floats_from_hex(data)))
    return replayed


def _impl_available(impl, modules=ESKF_IMPL_MODULES):
    try:
        load_impl(modules, impl)
    except ImplUnavailable:
        return False
    return True


def check(events, targets=None):
    """-> {target: {"tolerance", "topics" (compare_outputs), "within": bool}} or a skipped reason."""
    header = recorded_header(events)
    est = recorded_estimator(header["config"])
    swarm = header.get("app") == SWARM_MEMBER_APP
    impls = list(IMPLEMENTATIONS) if est.get("kind") == "eskf" or swarm else ["pure"]
    wanted = targets or impls + ["micropython"]
    logged = outputs_of(events)
    results = {}
    for target in wanted:
        tol = APP_TOLERANCE.get(header.get("app"), {}).get(target, TOLERANCE[target])
        if swarm and target == "micropython":
            results[target] = {"skipped": "a swarm member is not a MicroPython target (its learned estimator, "
                                          "DQN and draws run on NumPy / LiteRT)"}
            continue
        if swarm and target in impls:
            if not _impl_available(target, PF_KERNEL_MODULES):
                results[target] = {"skipped": "the %s particle-filter kernels are not built here" % target}
                continue
            topics = replay_events(events, impl=target, tolerance=tol)["topics"]
        elif target == "micropython":
            if not micropython_available():
                results[target] = {"skipped": "MicroPython is not installed (make setup)"}
                continue
            topics = compare_outputs(logged, run_in_micropython(events), tol)
        elif target not in impls:
            results[target] = {"skipped": "the recorded estimator has no %s implementation" % target}
            continue
        elif not _impl_available(target):
            results[target] = {"skipped": "the %s implementation is not built here" % target}
            continue
        else:
            result = replay_events(events, impl=target if est.get("kind") == "eskf" else None, tolerance=tol)
            topics = result["topics"]
        results[target] = {"tolerance": tol, "topics": topics,
                           "within": all(t["first_divergence_us"] is None for t in topics.values())}
    return results


def cmd_conformance(args):
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(args.log)), "conformance")
    try:
        events, damage = read_recording(args.log)
        report_folder(out_dir)
        if not events:
            raise ReplayError("no app recording in %s" % args.log)
        results = check(events, args.target or None)
    except (ReplayError, MicroPythonError, ConfigError) as exc:
        print("error: %s" % str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_BAD_LOG
    print("%-12s %-10s %8s %12s %12s  %s" % ("target", "output", "count", "max |diff|", "tolerance", "within"))
    for target, r in results.items():
        if "skipped" in r:
            print("%-12s %s" % (target, "skipped: " + r["skipped"]))
            continue
        for name, t in sorted(r["topics"].items()):
            print("%-12s %-10s %8d %12.3g %12.3g  %s" % (target, name, t["replayed"], t["max_abs_diff"], r["tolerance"],
                                                        "yes" if t["first_divergence_us"] is None else
                                                        "NO (from %.6f s)" % (t["first_divergence_us"] * 1e-6)))
    write_whole(os.path.join(out_dir, "conformance.json"),
                json.dumps(json_ready({"app": events[0][3].get("app"), "damage": damage, "targets": results}),
                           indent=2, sort_keys=True))
    if damage:
        print("error: %s; the readable prefix was checked" % damage, file=sys.stderr)
        return EXIT_BAD_LOG
    ok = all(r.get("within", True) for r in results.values())
    return EXIT_CONFORM if ok else EXIT_OUTSIDE


def main_conformance(argv=None):
    """``python -m harness conformance`` with ``argv``; returns the exit status."""
    return run_subcommand(add_parser, "conformance", argv)


def add_parser(sub):
    p = sub.add_parser("conformance", help="one recording through every implementation and MicroPython",
                       description=__doc__.split("\n\n")[0] + " Targets: pure, cython, numpy (ES-EKF "
                       "implementations) and micropython; each is compared with the log against its "
                       "tolerance (pure/cython bit-exact, numpy 1e-9, micropython 1e-12). Exit status: 0 all "
                       "within, 3 one is not, 2 not a readable recording.")
    p.add_argument("log", help="an MCAP log with an app recording (e.g. reports/grading-seed1/log.mcap)")
    p.add_argument("--target", action="append", choices=sorted(TOLERANCE),
                   help="check only this target (repeatable; default: all that apply)")
    p.add_argument("--out", help="report folder (default: conformance/ beside the log)")
    p.set_defaults(func=cmd_conformance)
