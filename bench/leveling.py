"""Grid leveling benchmark (Cook thesis 4.2.1, Alg. 1 + Alg. 2): agent-steps per second of the
probabilistic inner loop, pure vs Cython vs plain C, and the wall time of the fig. 4.2 sweep.

Side by side in one run, on the same workload (the default 32x32 mounds terrain, 8 agents, constant
rho = 0.3, seeds ``SEEDS``; each run from its start to the level condition):

- pure   : ``LevelingGrid(impl="pure").run()`` (the onboard behaviours stepped by the Python world);
- cython : ``LevelingGrid(impl="cython").run()`` (``cython_ext.leveling.ProbabilisticKernel``; one call
           per run, plus mirroring its state back into the Python objects at the end);
- c      : ``bench/leveling_ref.c`` compiled here with ``gcc -O2`` (as bench/pf.py), its loop timed in C.

An agent-step is one agent's phase of Alg. 1 (cycles x agents). The three paths draw the same PCG64
numbers, so the benchmark checks that the C program's final grid and counters equal the Cython run's,
and the Cython run's metrics equal the pure run's (it stops otherwise). ``cython_over_c`` = Cython
time / C time on the same seeds (goal <= 1.3). Timing rounds interleave the paths and each keeps its best
round (the same number of tries for Cython and C), so a burst of load on a shared machine hits
all of them alike. The loops are single-threaded and compute-bound, so they are timed in CPU time of the
process (``time.process_time``, ``CLOCK_PROCESS_CPUTIME_ID`` in C): on this shared 2-core host the wall
clock also counts the time other jobs hold the core.

Then the full fig. 4.2 sweep (rho = 0.1 ... 0.9, 30 seeded runs each, 32x32, 8 agents;
``harness.scenarios.leveling.level_sweep``) runs on the Cython path through the sweep runner with 2
workers: its wall time here and its CPU seconds (this process and its workers; / workers = the wall
time on idle cores); the pure path's is extrapolated, not run (its loop CPU from the measured agent-steps
per second, stated as such). ``--no-sweep`` skips the sweep.

Writes bench/results/leveling.json.
"""
import argparse
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from results_file import write_results  # noqa: E402 (bench/ is the script's folder)
from harness.sim.leveling_grid import LevelingGrid  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
C_SOURCE = os.path.join(HERE, "leveling_ref.c")
SEEDS = (0, 1, 2)
ROUNDS = 7                  # timing rounds for Cython and C (pure: one round, it is ~30x slower)
C_REPEATS = 1               # runs inside the C program per round: as many timed tries as the Cython path
BASE = {"probabilistic": {"rho_mode": "const", "rho": 0.3}}
CONDITIONS = ("range", "grad", "rms")


def build_c(tmpdir):
    gcc = shutil.which("gcc")
    if gcc is None:
        raise RuntimeError("gcc not found: the C reference needs it (Debian build-essential)")
    exe = os.path.join(tmpdir, "leveling_ref")
    subprocess.run([gcc, "-O2", "-o", exe, C_SOURCE, "-lm"], check=True)
    return exe


def timed_run(impl, seed):
    """(CPU seconds of run(), grid) for one seeded run; the grid is built before the clock starts."""
    cfg = dict(BASE, impl=impl)
    grid = LevelingGrid(cfg, seed)
    t0 = time.process_time()
    grid.run()
    return time.process_time() - t0, grid


def c_workload(seed):
    """The C program's input for one seeded run (the same fresh world LevelingGrid builds)."""
    grid = LevelingGrid(dict(BASE, impl="pure"), seed)
    from harness.sim.rng import RunRandom
    rr = RunRandom(seed)
    t = grid.terrain
    p = grid.cfg["probabilistic"]
    head = [a.heading for a in grid.agents]
    words = [t.rows, t.cols, len(grid.agents), p["memory"], CONDITIONS.index(t.condition), repr(t.eps),
             int(p["rho_mode"] == "const"), repr(float(p["rho"])), repr(float(p["k"])), repr(float(p["rho_sense"])),
             int(p["sense"] == "always_read"), repr(float(p["random_move"])), int(grid.fixed_order),
             grid.cfg["max_cycles"]]
    words += t.h + grid.pos + head
    for name in ("agents", "order"):
        st = rr.stream(name).bit_generator.state["state"]
        for v in (st["state"], st["inc"]):
            words += [v >> 64, v & ((1 << 64) - 1)]
    return " ".join(str(w) for w in words) + "\n"


def run_c(exe, seed, tmpdir, repeats):
    """(best seconds, result) of the C reference on one seed; result: level, counters, heights."""
    wl = os.path.join(tmpdir, "workload_%d.txt" % seed)
    out = os.path.join(tmpdir, "result_%d.txt" % seed)
    with open(wl, "w") as fh:
        fh.write(c_workload(seed))
    subprocess.run([exe, wl, out, str(repeats)], check=True)
    with open(out) as fh:
        head, heights, secs = fh.read().splitlines()
    vals = [int(v) for v in head.split()]
    keys = ("level_reached", "cycles", "pickups", "deposits", "units_relocated", "moves", "blocked_moves",
            "refused_ops")
    res = dict(zip(keys, vals))
    res["level_reached"] = bool(res["level_reached"])
    res["heights"] = [int(v) for v in heights.split()]
    return min(float(s) for s in secs.split()), res


def same_as_c(grid, res):
    m = grid.metrics()
    mine = {"level_reached": m["level_reached"], "cycles": m["cycles"], "pickups": m["pickups"],
            "deposits": m["deposits"], "units_relocated": m["units_relocated"], "moves": m["moves"],
            "blocked_moves": m["blocked_moves"], "refused_ops": m["refused_ops"], "heights": list(grid.terrain.h)}
    return mine == res


def fig42_sweep(workers):
    """Wall time of the full fig. 4.2 sweep on the Cython path (rho 0.1..0.9 x 30 runs) and its results."""
    from harness.scenarios.leveling.level_sweep import RHO_VALUES, level_sweep
    from harness.sweep_runner import Runner
    def cpu_s():
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    with tempfile.TemporaryDirectory() as out_dir:
        c0 = cpu_s()
        t0 = time.perf_counter()
        with Runner(workers=workers) as runner:
            out = level_sweep(out_dir, studies=("rho",), runs=30, base={"impl": "cython"}, runner=runner)
        wall = time.perf_counter() - t0
        cpu = cpu_s() - c0
    s = out["rho"]
    cycles = sum(r["cycles_or_limit"] for runs in s["per_run"].values() for r in runs)
    return {"workers": workers, "values": list(RHO_VALUES), "runs_per_value": 30, "wall_s": wall, "cpu_s": cpu,
            "total_cycles": cycles, "agent_steps": cycles * out["setup"]["agents"],
            "argmin": s["argmin"], "end_ratios": s["end_ratios"],
            "mean_cycles": {str(r["value"]): r["cycles"]["mean"] for r in s["rows"]}}


def ends_text(ends):
    """The sweep's end ratios (mean cycles at the first / last rho over the smallest mean) as "a, b"; "n/a"
    for a ratio that is None, or for both when ``ends`` is None (a smallest mean of 0 cycles: those runs
    started level, level_sweep.param_sweep)."""
    if ends is None:
        return "n/a (a mean of 0 cycles: those runs started level)"
    return ", ".join("n/a" if v is None else "%.2f" % v for v in ends)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-sweep", action="store_true", help="skip the fig. 4.2 sweep wall time")
    ap.add_argument("--workers", type=int, default=2, help="sweep workers (default 2)")
    args = ap.parse_args(argv)
    results = {"unit": "agent-steps per CPU second (one agent's phase of Alg. 1); CPU seconds; the sweep: "
                       "wall seconds",
               "machine": platform.machine(), "python": platform.python_version(),
               "workload": "32x32 mounds, 8 agents, constant rho 0.3, runs to level, seeds %s" % (list(SEEDS),),
               "c_compiler": "gcc -O2", "target_cython_over_c": 1.3}
    per_seed = {}
    totals = {"pure": 0.0, "cython": 0.0, "c": 0.0}
    steps_all = 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c(tmp)
        for seed in SEEDS:
            best = {"cython": None, "c": None}
            for _ in range(ROUNDS):
                s_c, res = run_c(exe, seed, tmp, C_REPEATS)
                s_cy, grid_cy = timed_run("cython", seed)
                if not same_as_c(grid_cy, res):
                    raise SystemExit("C reference and Cython path disagree on seed %d" % seed)
                best["c"] = s_c if best["c"] is None else min(best["c"], s_c)
                best["cython"] = s_cy if best["cython"] is None else min(best["cython"], s_cy)
            s_pure, grid_pure = timed_run("pure", seed)
            if grid_pure.metrics() != grid_cy.metrics() or grid_pure.terrain.h != grid_cy.terrain.h:
                raise SystemExit("pure and Cython paths disagree on seed %d" % seed)
            steps = grid_cy.cycles * len(grid_cy.agents)
            steps_all += steps
            row = {"cycles": grid_cy.cycles, "agent_steps": steps, "seconds": {"pure": s_pure, **best},
                   "agent_steps_per_s": {"pure": steps / s_pure, "cython": steps / best["cython"],
                                         "c": steps / best["c"]},
                   "cython_over_c": best["cython"] / best["c"]}
            per_seed[str(seed)] = row
            totals["pure"] += s_pure
            totals["cython"] += best["cython"]
            totals["c"] += best["c"]
    results["per_seed"] = per_seed
    results["agent_steps_per_s"] = {k: steps_all / v for k, v in totals.items()}
    results["cython_over_c"] = totals["cython"] / totals["c"]
    results["pure_over_cython"] = totals["pure"] / totals["cython"]
    results["identical"] = "C == Cython (final grid, counters) and Cython == pure (metrics, final grid) on every seed"
    print("%-6s%10s%16s%16s%16s%10s" % ("seed", "cycles", "pure steps/s", "cython steps/s", "c steps/s", "cy/c"))
    for seed, row in per_seed.items():
        r = row["agent_steps_per_s"]
        print("%-6s%10d%16.3g%16.3g%16.3g%10.2f" % (seed, row["cycles"], r["pure"], r["cython"], r["c"],
                                                     row["cython_over_c"]))
    r = results["agent_steps_per_s"]
    print("%-6s%10s%16.3g%16.3g%16.3g%10.2f   (goal cython/c <= 1.3; pure/cython %.1fx)" % (
        "all", "", r["pure"], r["cython"], r["c"], results["cython_over_c"], results["pure_over_cython"]))
    if not args.no_sweep:
        sw = fig42_sweep(args.workers)
        # the pure path would spend the same CPU outside the inner loop and the pure loop's CPU inside it
        loop_cy = sw["agent_steps"] / r["cython"]
        loop_pure = sw["agent_steps"] / r["pure"]
        sw["pure_cpu_s_extrapolated"] = sw["cpu_s"] - loop_cy + loop_pure
        sw["pure_wall_s_extrapolated_idle"] = sw["pure_cpu_s_extrapolated"] / args.workers
        sw["cython_wall_s_idle"] = sw["cpu_s"] / args.workers
        sw["note"] = ("wall_s measured on the Cython path with %d workers on this shared host; cpu_s: CPU "
                      "seconds of the sweep (this process and its workers); *_idle = CPU / workers, the wall "
                      "time on %d otherwise idle cores; the pure sweep was not run: its CPU = cpu_s minus the "
                      "Cython loop's CPU plus the pure loop's CPU (agent-steps / the rates above)"
                      % (args.workers, args.workers))
        results["fig42_sweep"] = sw
        print("fig. 4.2 sweep (9 rho x 30 runs, %d workers, Cython): %.1f s wall here, %.1f CPU s (%.1f s on %d "
              "idle cores), %.3g agent-steps; pure extrapolated %.0f CPU s (%.0f s on %d idle cores); argmin rho "
              "%s, ends/min %s" % (
                  args.workers, sw["wall_s"], sw["cpu_s"], sw["cython_wall_s_idle"], args.workers,
                  sw["agent_steps"], sw["pure_cpu_s_extrapolated"], sw["pure_wall_s_extrapolated_idle"],
                  args.workers, sw["argmin"], ends_text(sw["end_ratios"])))
    write_results("leveling", results)


if __name__ == "__main__":
    main()
