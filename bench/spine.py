"""Spine benchmark: how fast the harness runs the runtime, and what the pure estimator costs.

Measured side by side in one run (this machine is noisy; compare ratios, not absolutes):
- waypoints scenario: simulated seconds per wall second, without and with the report
  (MCAP log + PNG plots), and their ratio;
- planar EKF predict / update / 10:1 cycle in microseconds on CPython and inside
  MicroPython 1.27 (WebAssembly under node; timed there with time.ticks_us);
- per tick with three empty rate groups: the bare scheduler, and a Node (the same groups plus one
  watched input checked every tick), side by side.
Writes bench/results/spine.json.
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.sim.micropython import available, onboard_files, run_micropython  # noqa: E402
from harness.report import RunReport  # noqa: E402
from harness.scenarios import load  # noqa: E402
from harness.scenarios.context import RunContext  # noqa: E402
from results_file import write_results  # noqa: E402 (bench/ is the script's folder)


# Runs unchanged on CPython and MicroPython; ``now_us`` is the interpreter's timer.
EKF_TIMING = r"""
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.runtime.node import Node
from onboard.runtime.scheduler import Scheduler

def ekf_timing(now_us, n_cycles):
    ekf = PlanarEkf()
    ekf.initialize(PoseSample(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
    imus = [ImuSample(10000 * (k + 1), 10000, (0.01, 0.0, -0.098), (0.0, 0.0, 0.001)) for k in range(10)]
    pose = PoseSample(100000, (0.01, 0.0, 0.0), (0.0, 0.0, 0.01))
    t0 = now_us()
    for _ in range(n_cycles):
        for s in imus:
            ekf.predict(s)
        ekf.update_pose(pose)
    cycle = (now_us() - t0) / n_cycles
    t0 = now_us()
    for _ in range(n_cycles):
        for s in imus:
            ekf.predict(s)
    predict = (now_us() - t0) / (10 * n_cycles)
    t0 = now_us()
    for _ in range(n_cycles * 10):
        ekf.update_pose(pose)
    update = (now_us() - t0) / (10 * n_cycles)
    sched = Scheduler([("a", 100, lambda t: None), ("b", 50, lambda t: None), ("c", 10, lambda t: None)])
    t0 = now_us()
    for k in range(n_cycles * 10):
        sched.step(k * 10000)
    sched_tick = (now_us() - t0) / (10 * n_cycles)
    node = Node("bench")
    node.watch("x", 1000000)
    node.every("a", 100, lambda t: None)
    node.every("b", 50, lambda t: None)
    node.every("c", 10, lambda t: None)
    t0 = now_us()
    for k in range(n_cycles * 10):
        node.step(k * 10000)
    tick = (now_us() - t0) / (10 * n_cycles)
    return {"predict_us": predict, "update_us": update, "cycle_10_1_us": cycle, "scheduler_tick_us": sched_tick,
            "node_tick_us": tick}
"""


def cpython_ekf(n_cycles=300):
    scope = {}
    exec(EKF_TIMING, scope)
    return scope["ekf_timing"](lambda: time.perf_counter_ns() // 1000, n_cycles)


def micropython_ekf(n_cycles=100):
    code = EKF_TIMING + "\nimport time, json\nprint('RESULT ' + json.dumps(ekf_timing(time.ticks_us, %d)))\n" % n_cycles
    out = run_micropython(code, onboard_files())
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("no result from MicroPython:\n" + out)


def scenario_speed(with_report):
    module = load("waypoints")
    cfg = json.loads(json.dumps(module.DEFAULTS))
    with tempfile.TemporaryDirectory() as tmp:
        report = RunReport(tmp, "waypoints", 1, cfg) if with_report else None
        t0 = time.perf_counter()
        metrics = module.run(cfg, RunContext(1, report=report))
        if report is not None:
            report.finish(metrics)
        wall = time.perf_counter() - t0
    return metrics["sim_time_s"] / wall, wall


def main():
    bare, bare_wall = scenario_speed(False)
    full, full_wall = scenario_speed(True)
    cpy = cpython_ekf()
    mpy = micropython_ekf() if available() else None
    results = {
        "waypoints_sim_seconds_per_wall_second": {"no_report": bare, "with_report": full},
        "report_overhead_ratio": bare / full,
        "planar_ekf_us": {"cpython": cpy, "micropython": mpy},
    }
    if mpy:
        results["micropython_over_cpython_cycle"] = mpy["cycle_10_1_us"] / cpy["cycle_10_1_us"]
    print("%-44s %12s %12s" % ("figure", "value", ""))
    print("%-44s %12.1f x real time (%.2f s wall)" % ("waypoints, no report", bare, bare_wall))
    print("%-44s %12.1f x real time (%.2f s wall)" % ("waypoints, with MCAP + plots", full, full_wall))
    print("%-44s %12.2f" % ("report overhead (no_report / with_report)", results["report_overhead_ratio"]))
    print("%-44s %12s %12s" % ("planar EKF [us]", "CPython", "MicroPython"))
    for key in ("predict_us", "update_us", "cycle_10_1_us", "scheduler_tick_us", "node_tick_us"):
        print("%-44s %12.1f %12s" % ("  " + key, cpy[key], "%.1f" % mpy[key] if mpy else "n/a"))
    if mpy:
        print("%-44s %12.2f" % ("MicroPython / CPython (10:1 cycle)", results["micropython_over_cpython_cycle"]))
    write_results("spine", results, sort_keys=True)


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
