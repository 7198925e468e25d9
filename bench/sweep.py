"""Sweep runner benchmark: jobs per second and the scaling from 1 to 2 workers, local engine vs Ray.

The same seeded CPU-bound jobs (pure Python, calibrated to ~1 s each on this machine) run through
``harness.sweep_runner.Runner`` side by side in one run: the local engine with 1 worker (in this process)
and 2 (forked processes, the pool started per sweep as a study does), and Ray with 1 and 2 jobs in flight
on one local runtime of 2 CPUs (started once, warmed up; its start-up is reported apart). Best of
``--rounds`` per configuration. Figures:

- jobs per second and the scaling from 1 to 2 workers (goal >= 1.8x on 2 cores);
- the engine's overhead per job: the round trip from dispatch to result minus the job's own wall time, as a
  fraction of the job (goal for Ray <= 10 % of a 1 s job);
- whether every configuration returned the same results.
Writes bench/results/sweep.json. On a shared machine absolute figures drift: compare the ratios.
"""
import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.sweep_runner import Job, Runner  # noqa: E402
from results_file import judged_goal, write_results  # noqa: E402 (bench/ is the script's folder)



def spin(seed, iterations):
    """A CPU-bound seeded job: ``iterations`` steps of a 64-bit linear congruential generator."""
    x = seed
    for _ in range(iterations):
        x = (6364136223846793005 * x + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    return x


def calibrate(job_s):
    """Iterations of ``spin`` that take ~``job_s`` seconds here (best of three probes)."""
    probe = 200_000
    best = min(_timed(spin, 1, probe) for _ in range(3))
    return max(1000, int(probe * job_s / best))


def _timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def measure(runner, jobs):
    """(figures, results) of one sweep of ``jobs`` on ``runner``."""
    t0 = time.perf_counter()
    result = runner.run(jobs)
    wall = time.perf_counter() - t0
    assert result.ok, result.failures
    timing = result.timing
    job_mean = timing["job_wall_s"]["mean"]
    overhead_mean = timing["overhead_s"]["mean"]
    return {"wall_s": wall, "jobs_per_s": len(jobs) / wall, "job_wall_s_mean": job_mean,
            "overhead_per_job_s": overhead_mean, "overhead_fraction_of_job": overhead_mean / job_mean,
            # everything that is not a job's own time, per job: dispatch, results, pool start, idle slots
            "slack_per_job_s": (wall * timing["workers"] - timing["job_wall_s"]["total"]) / len(jobs)}, result.results


GOAL_SCALING = 1.8             # jobs per second, 2 workers over 1, at least (each engine)
GOAL_RAY_OVERHEAD = 0.10       # Ray's overhead per job over the job's own wall time, 2 workers, at most


def judge_goals(out):
    """Whether each goal is met, judged on the figures of this run in ``out``: the scaling from 1 to 2 workers
    of each engine (>= GOAL_SCALING) and Ray's overhead per job as a fraction of the job at 2 workers
    (<= GOAL_RAY_OVERHEAD). An engine that did not run is recorded as skipped (met False), never met."""
    goals = {}
    for engine in ("local", "ray"):
        value = out.get(engine, {}).get("scaling_1_to_2")
        goals["%s_scaling_1_to_2" % engine] = judged_goal(value, ">=", GOAL_SCALING,
                                                          "%s not run (not installed?)" % engine)
    value = out.get("ray", {}).get("2", {}).get("overhead_fraction_of_job")
    goals["ray_overhead_fraction_of_job_2_workers"] = judged_goal(value, "<=", GOAL_RAY_OVERHEAD,
                                                                  "ray not run (not installed?)")
    return goals


def best(figures):
    return max(figures, key=lambda f: f["jobs_per_s"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=8, help="jobs per sweep (default 8)")
    ap.add_argument("--job-s", type=float, default=1.0, help="seconds per job, calibrated (default 1.0)")
    ap.add_argument("--rounds", type=int, default=2, help="sweeps per configuration, best kept (default 2)")
    args = ap.parse_args(argv)
    iterations = calibrate(args.job_s)
    jobs = [Job(spin, (seed, iterations), info={"seed": seed}) for seed in range(args.jobs)]
    out = {"jobs": args.jobs, "job_s_target": args.job_s, "iterations": iterations, "rounds": args.rounds,
           "cpus": os.cpu_count(), "python": platform.python_version(), "local": {}, "ray": {},
           # a machine busy with other work cannot show the scaling: the load says how busy it was
           "load_average_1min_at_start": os.getloadavg()[0]}
    try:
        import ray
        from harness.sweep_runner import start_local_ray
    except ImportError:
        ray = None
    ray_started = False
    results = {}
    figures = {("local", 1): [], ("local", 2): [], ("ray", 1): [], ("ray", 2): []}
    if ray is not None:
        t0 = time.perf_counter()
        start_local_ray(2)
        out["ray"]["startup_s"] = time.perf_counter() - t0
        ray_started = True
        warm = [Job(spin, (1000 + i, 1000)) for i in range(4)]
        Runner("ray", 2).run(warm)                  # both worker processes up and importing
    try:
        for _ in range(args.rounds):
            for engine, workers in figures:
                if engine == "ray" and ray is None:
                    continue
                f, res = measure(Runner(engine, workers), jobs)
                figures[(engine, workers)].append(f)
                results.setdefault((engine, workers), res)
    finally:
        if ray_started:
            ray.shutdown()
    reference = results[("local", 1)]
    out["identical_results"] = all(r == reference for r in results.values())
    for (engine, workers), fs in figures.items():
        if fs:
            out[engine][str(workers)] = best(fs)
    for engine in ("local", "ray"):
        if "1" in out[engine] and "2" in out[engine]:
            out[engine]["scaling_1_to_2"] = out[engine]["2"]["jobs_per_s"] / out[engine]["1"]["jobs_per_s"]
    if "2" in out["ray"]:
        out["ray_vs_local_jobs_per_s_2_workers"] = out["ray"]["2"]["jobs_per_s"] / out["local"]["2"]["jobs_per_s"]
    out["load_average_1min_at_end"] = os.getloadavg()[0]
    out["goals"] = {"scaling_1_to_2_at_least": GOAL_SCALING, "ray_overhead_fraction_of_1s_job_at_most": GOAL_RAY_OVERHEAD}
    out["goals_met"] = judge_goals(out)
    out["all_goals_met"] = all(g["met"] for g in out["goals_met"].values())

    print("sweep runner: %d jobs of ~%.2f s (pure-Python CPU work), best of %d, %s CPUs, load average %.1f -> %.1f"
          % (args.jobs, args.job_s, args.rounds, os.cpu_count(), out["load_average_1min_at_start"],
             out["load_average_1min_at_end"]))
    print("%-22s %10s %10s %14s %12s %12s" % ("engine, workers", "jobs/s", "wall s", "job wall s", "overhead",
                                              "slack/job"))
    for engine in ("local", "ray"):
        for workers in ("1", "2"):
            f = out[engine].get(workers)
            if f:
                print("%-22s %10.3f %10.2f %14.3f %10.1f ms %9.1f ms" % (
                    "%s, %s" % (engine, workers), f["jobs_per_s"], f["wall_s"], f["job_wall_s_mean"],
                    1e3 * f["overhead_per_job_s"], 1e3 * f["slack_per_job_s"]))
    for engine in ("local", "ray"):
        if "scaling_1_to_2" in out[engine]:
            print("%-40s %6.2fx (goal >= %gx): %s" % (
                "%s: scaling 1 -> 2 workers" % engine, out[engine]["scaling_1_to_2"], GOAL_SCALING,
                "met" if out["goals_met"]["%s_scaling_1_to_2" % engine]["met"] else "NOT met"))
    if "2" in out["ray"]:
        print("%-40s %6.1f %% (goal <= %g %%): %s" % (
            "ray: overhead per job / job (2 workers)", 100 * out["ray"]["2"]["overhead_fraction_of_job"],
            100 * GOAL_RAY_OVERHEAD, "met" if out["goals_met"]["ray_overhead_fraction_of_job_2_workers"]["met"]
            else "NOT met"))
        print("%-40s %6.2fx" % ("ray / local jobs per second (2 workers)", out["ray_vs_local_jobs_per_s_2_workers"]))
        print("%-40s %6.1f s" % ("ray: local runtime start-up", out["ray"]["startup_s"]))
    else:
        print("ray: not installed (make setup installs it); local engine only")
    print("identical results on every engine and worker count: %s" % out["identical_results"])
    write_results("sweep", out, sort_keys=True)
    return 0 if out["identical_results"] else 1


if __name__ == "__main__":
    sys.exit(main())
