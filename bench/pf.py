"""Particle-filter benchmark: microseconds per filter step at N = 100, 1000, 10000 particles.

Side by side in one run, on the same workload (a neighbour drone flying a seeded path, UWB
ranges with the pocket III-A noise, a learned estimate for the 10 % refresh, pre-drawn
normals/uniforms so no path pays for random numbers):

- pure   : ParticleFilter with the pure kernels (the MicroPython-compatible path) on CPython;
- numpy  : ParticleFilter with the NumPy kernels;
- cython : ``make_filter`` on the Cython kernels, the path the runtime uses: the pure
           ParticleFilter class over cython_ext.pf_kernels.PfKernel (particles in C arrays, the
           kernels behind the pure class's hooks, well-formed input read without the pure checks);
- cython_py_class : the pure-Python ParticleFilter class calling the Cython kernels (the
           previous runtime path: a Python step calling three kernels);
- cython_kernels : the same Cython kernels called directly in a Python loop (no wrapper);
- c      : bench/pf_ref.c compiled here with ``gcc -O2``, its step loop timed in C.

``cython_over_c`` = cython / c per N; the goals (<= 1.3 at N = 100, where call overhead dominates,
<= 1.0 at N = 1000) are written to the JSON under ``goals`` with whether each is met.
``cython_kernels_over_c`` likewise. Every figure is CPU time (``time.process_time``; the C
program reads CLOCK_PROCESS_CPUTIME_ID), the best of ROUNDS rounds that each time every path
once, so load from other processes on the machine hits all paths alike.
The C program writes back its final particles and per-step estimates, and the benchmark
checks they equal the Cython path's (max abs difference printed; 1e-12 required), so the C
reference really is the same computation. Writes bench/results/pf.json.
"""
import argparse
import functools
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from onboard.estimators import particle_filter as pf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results_file import judged_goal, write_results  # noqa: E402 (bench/ is the script's folder)

C_SOURCE = os.path.join(HERE, "pf_ref.c")
SIZES = (100, 1000, 10000)
DT_US = 100000              # 10 Hz filter steps (one token-ring round)
POOL = 8                    # distinct pre-drawn noise sets, cycled over the steps
ROUNDS = 7                  # timing rounds per N, every path once per round
GOALS_CYTHON_OVER_C = {100: 1.3, 1000: 1.0}      # cython / c at most, per N


def make_workload(n, steps, seed=7, pool=POOL):
    """Inputs for `steps` filter steps at n particles: truth path, ranges, learned estimates, draws."""
    rng = np.random.default_rng([seed, n])
    f = pf.ParticleFilter({"n_particles": n})
    cfg = f.cfg
    n_ref = f.n_refresh
    px, py, yaw = 1.2, -0.4, 0.6                      # peer in the own frame; relative yaw
    per = np.zeros((steps, 8))
    for s in range(steps):
        ph = 0.07 * s
        vo = (0.4 * math.cos(ph), 0.3 * math.sin(0.6 * ph))
        vp = (0.35 * math.sin(0.8 * ph), -0.3 * math.cos(ph))
        dt_s = DT_US * 1e-6
        px += dt_s * (math.cos(yaw) * vp[0] - math.sin(yaw) * vp[1] - vo[0])
        py += dt_s * (math.sin(yaw) * vp[0] + math.cos(yaw) * vp[1] - vo[1])
        rng_m = abs(math.hypot(px, py) + rng.normal(pf.UWB_RANGE_BIAS_M, math.sqrt(pf.UWB_RANGE_VAR_M2)))
        per[s] = (dt_s, vo[0], vo[1], vp[0], vp[1], rng_m,
                  math.atan2(py, px) + rng.normal(0.0, 0.17), yaw + rng.normal(0.0, 0.35))
    first_range = abs(math.hypot(1.2, -0.4) + 0.05)
    init_draws = rng.standard_normal(3 * n)
    work = {
        "n": n, "n_refresh": n_ref, "steps": steps, "pool": pool, "per": per,
        "u0": rng.random(steps),
        "noise": rng.standard_normal((pool, 3 * n)),
        "fresh": rng.standard_normal((pool, 3 * n_ref)),
        "first_range": first_range, "first_learned": (math.atan2(-0.4, 1.2) + 0.1, 0.6 - 0.2),
        "init_draws": init_draws,
        "sigma_pos_m": cfg["pos_noise_floor_m"] + cfg["vel_noise_mps"] * (DT_US * 1e-6),
        "sigma_yaw_rad": cfg["yaw_noise_radps"] * (DT_US * 1e-6),
        "cfg": cfg,
    }
    return work


class ReplayDraws:
    """Hands the workload's pre-drawn buffers (already in the path's buffer type) to the filter in the
    order it asks for them: the start's normals, then per step the motion normals, the resampling
    uniform and the refresh normals. As cheap as a Python draws object gets, so the timing is the
    filter's, as the C reference reads its draws from arrays."""

    def __init__(self, work, kernels):
        noise = [kernels.as_buffer(row) for row in work["noise"]]
        fresh = [kernels.as_buffer(row) for row in work["fresh"]]
        answers = [kernels.as_buffer(work["init_draws"])]
        for s, u0 in enumerate(work["u0"]):
            answers += [noise[s % work["pool"]], [float(u0)], fresh[s % work["pool"]]]
        self._answers = iter(answers)
        # normals(k) / uniforms(k) = next(answers, k): the next answer, from C (a Python method would add
        # its own call to every request); k only comes back if the filter asked for more than was drawn,
        # and no path takes an int for a buffer
        self.normals = self.uniforms = functools.partial(next, self._answers)

    def check_used_up(self):
        """The filter asked for exactly the draws the workload made (same requests as the C reference)."""
        if next(self._answers, None) is not None:
            raise RuntimeError("the filter asked for fewer draws than the workload holds")


def run_filter(impl, work, compiled=True):
    """Run the workload through impl's filter; returns (us_per_step, filter, estimates).

    compiled: the kernels module's compiled filter class where it has one (make_filter), else the
    Python ParticleFilter class on impl's kernels. The per-step arguments are built before the clock
    starts (the C reference reads them from arrays)."""
    kernels = pf.kernels_for(impl)
    cfg = {"n_particles": work["n"]}
    f = pf.make_filter(cfg, kernels=kernels) if compiled else pf.ParticleFilter(cfg, kernels=kernels)
    draws = ReplayDraws(work, kernels)
    f.initialize(0, work["first_range"], draws, learned=work["first_learned"])
    calls = []
    for s, row in enumerate(work["per"]):
        _dt_s, vxo, vyo, vxp, vyp, rng_m, bearing, ryaw = (float(v) for v in row)     # dt: DT_US every step
        calls.append(((s + 1) * DT_US, (vxo, vyo), (vxp, vyp), rng_m, (bearing, ryaw)))
    step = f.step
    ests = []
    t0 = time.process_time()
    for now_us, v_own, v_peer, rng_m, learned in calls:
        ests.append(step(now_us, v_own, v_peer, rng_m, draws, learned))
    us = (time.process_time() - t0) * 1e6 / len(calls)
    draws.check_used_up()
    return us, f, np.array(ests, dtype=np.float64)


def run_cython_kernels(work):
    """The Cython kernels in a bare Python loop (what the wrapper costs on top shows as cython - this)."""
    from cython_ext import pf_kernels as k
    n, n_ref, cfg = work["n"], work["n_refresh"], work["cfg"]
    xs, ys, yaws, ws, lws = (np.zeros(n) for _ in range(5))
    x2, y2, yaw2 = (np.zeros(n) for _ in range(3))
    est = np.zeros(pf.EST_LEN)
    b0, yw0 = work["first_learned"]
    k.refresh(xs, ys, yaws, 0, n, work["first_range"] - cfg["range_bias_m"], b0, yw0,
              cfg["refresh_range_sigma_m"], cfg["refresh_bearing_sigma_rad"],
              cfg["refresh_yaw_sigma_rad"], work["init_draws"])
    inv2 = 1.0 / (2.0 * cfg["range_var_m2"])
    bias = cfg["range_bias_m"]
    sp, sy = work["sigma_pos_m"], work["sigma_yaw_rad"]
    sr, sb, syr = cfg["refresh_range_sigma_m"], cfg["refresh_bearing_sigma_rad"], cfg["refresh_yaw_sigma_rad"]
    noise, fresh, pool, u0 = work["noise"], work["fresh"], work["pool"], work["u0"]
    rows = [tuple(float(v) for v in row) for row in work["per"]]
    t0 = time.process_time()
    for s, (dt_s, vxo, vyo, vxp, vyp, rng_m, bearing, ryaw) in enumerate(rows):
        k.predict_weight(xs, ys, yaws, ws, lws, n, dt_s, vxo, vyo, vxp, vyp, rng_m, bias, inv2,
                         noise[s % pool], sp, sy, est)
        k.resample(xs, ys, yaws, ws, n, n - n_ref, u0[s], x2, y2, yaw2)
        lws = np.zeros(n)                               # weights back to uniform (as ParticleFilter.step)
        xs, x2, ys, y2, yaws, yaw2 = x2, xs, y2, ys, yaw2, yaws
        k.refresh(xs, ys, yaws, n - n_ref, n_ref, rng_m - bias, bearing, ryaw, sr, sb, syr, fresh[s % pool])
    return (time.process_time() - t0) * 1e6 / len(rows)


def build_c(tmpdir):
    gcc = shutil.which("gcc")
    if gcc is None:
        raise RuntimeError("gcc not found: the C reference needs it (Debian build-essential)")
    exe = os.path.join(tmpdir, "pf_ref")
    subprocess.run([gcc, "-O2", "-o", exe, C_SOURCE, "-lm"], check=True)
    return exe


def run_c(exe, work, tmpdir, repeats):
    """Run the C reference on the workload; returns (us_per_step, xs, ys, yaws, estimates[steps, 5])."""
    n, n_ref, steps, pool = work["n"], work["n_refresh"], work["steps"], work["pool"]
    cfg = work["cfg"]
    # initial particles exactly as ParticleFilter.initialize(learned=...) makes them (pure kernel)
    xs, ys, yaws = [0.0] * n, [0.0] * n, [0.0] * n
    b0, yw0 = work["first_learned"]
    pf.refresh(xs, ys, yaws, 0, n, work["first_range"] - cfg["range_bias_m"], b0, yw0,
               cfg["refresh_range_sigma_m"], cfg["refresh_bearing_sigma_rad"],
               cfg["refresh_yaw_sigma_rad"], [float(v) for v in work["init_draws"]])
    params = np.array([cfg["range_bias_m"], 1.0 / (2.0 * cfg["range_var_m2"]), work["sigma_pos_m"],
                       work["sigma_yaw_rad"], cfg["refresh_range_sigma_m"],
                       cfg["refresh_bearing_sigma_rad"], cfg["refresh_yaw_sigma_rad"], 0.0])
    wl = os.path.join(tmpdir, "workload_%d.bin" % n)
    out = os.path.join(tmpdir, "result_%d.bin" % n)
    with open(wl, "wb") as fh:
        fh.write(np.array([n, n_ref, steps, pool], dtype=np.int64).tobytes())
        for arr in (params, np.array(xs + ys + yaws), work["per"], work["u0"], work["noise"], work["fresh"]):
            fh.write(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    subprocess.run([exe, wl, out, str(repeats)], check=True)
    res = np.fromfile(out, dtype=np.float64)
    us = float(res[0])
    parts = res[1:1 + 3 * n].reshape(3, n)
    est = res[1 + 3 * n:].reshape(steps, pf.EST_LEN)[:, :3]
    return us, parts[0], parts[1], parts[2], est


def steps_for(impl, n):
    """Enough steps for a stable figure, few enough that the whole benchmark takes about a minute."""
    per_particle_us = {"pure": 3.0, "numpy": 0.05, "cython": 0.05, "c": 0.05}[impl]
    return int(max(10, min(400, 2.0e5 / (per_particle_us * n))))


def judge_goals(cython_over_c, limits=None):
    """The goals (cython / c at most ``limits[N]``) judged on the measured ratios ``{str(N): ratio}``; a size
    that was not measured is recorded as skipped, never met."""
    limits = GOALS_CYTHON_OVER_C if limits is None else limits
    goals = {}
    for n, limit in sorted(limits.items()):
        value = cython_over_c.get(str(n))
        goals["cython_over_c_%d" % n] = judged_goal(value, "<=", limit, "N = %d not measured" % n)
    return goals


def preflight():
    """Why the benchmark cannot run here (no gcc for the C reference, no Cython build), or None. The goals
    compare the Cython path with the C reference: without either there is nothing honest to write."""
    if shutil.which("gcc") is None:
        return "gcc not found: the C reference needs it (Debian build-essential)"
    try:
        pf.kernels_for("cython")
    except ImportError as exc:                     # onboard.impl.ImplUnavailable is one
        return "the Cython kernels are not available (%s)" % exc
    return None


def main():
    why = preflight()
    if why is not None:
        raise SystemExit("pf: %s; nothing written" % why)
    results = {"unit": "CPU microseconds per filter step (predict + weight + resample + 10 % refresh)",
               "machine": platform.machine(), "python": platform.python_version(),
               "dt_us": DT_US, "us_per_step": {}, "cython_over_c": {}, "cython_kernels_over_c": {},
               "c_vs_cython_max_abs_diff": {}, "numpy_vs_cython_max_abs_diff": {}}
    impls = pf.kernels_for  # noqa: F841 (import check below)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_c(tmp)
        for n in SIZES:
            steps = steps_for("cython", n)
            work = make_workload(n, steps)
            # ROUNDS rounds, each timing every path once (the C program keeps its best of 5 repeats); each
            # path's best round counts, so a burst of load on this noisy machine hits all paths alike
            timed = {"c": [], "cython": [], "numpy": [], "cython_py_class": [], "cython_kernels": []}
            best = {}
            for _ in range(ROUNDS):
                us_c, cx, cy, cyaw, c_est = run_c(exe, work, tmp, repeats=5)
                timed["c"].append(us_c)
                for impl in ("cython", "numpy"):
                    run = run_filter(impl, work)
                    timed[impl].append(run[0])
                    if impl not in best or run[0] < best[impl][0]:
                        best[impl] = run
                timed["cython_py_class"].append(run_filter("cython", work, compiled=False)[0])
                timed["cython_kernels"].append(run_cython_kernels(work))
            row = {name: min(times) for name, times in timed.items()}
            f_cy, est_cy = best["cython"][1], best["cython"][2]
            diff = max(np.abs(np.asarray(f_cy.xs) - cx).max(), np.abs(np.asarray(f_cy.ys) - cy).max(),
                       np.abs(np.asarray(f_cy.yaws) - cyaw).max(), np.abs(est_cy - c_est).max())
            if not diff <= 1e-12:
                raise SystemExit("C reference and Cython path disagree at N=%d: max diff %g" % (n, diff))
            results["c_vs_cython_max_abs_diff"][str(n)] = float(diff)
            f_np, est_np = best["numpy"][1], best["numpy"][2]
            results["numpy_vs_cython_max_abs_diff"][str(n)] = float(np.abs(est_np - est_cy).max())
            # the pure path on fewer steps of the same workload (it is ~100x slower)
            pure_steps = steps_for("pure", n)
            pure_work = make_workload(n, pure_steps) if pure_steps != steps else work
            row["pure"] = run_filter("pure", pure_work)[0]
            results["us_per_step"][str(n)] = row
            results["cython_over_c"][str(n)] = row["cython"] / row["c"]
            results["cython_kernels_over_c"][str(n)] = row["cython_kernels"] / row["c"]
    results["goals"] = judge_goals(results["cython_over_c"])
    results["all_goals_met"] = all(g["met"] for g in results["goals"].values())
    cols = ("pure", "numpy", "cython", "cython_py_class", "cython_kernels", "c")
    print("%-8s" % "N" + "".join("%16s" % c for c in cols) + "%14s%14s%12s" % ("cython/c", "kernels/c", "|c-cy|"))
    for n in SIZES:
        row = results["us_per_step"][str(n)]
        print("%-8d" % n + "".join("%16.1f" % row[c] for c in cols)
              + "%14.2f%14.2f%12.1e" % (results["cython_over_c"][str(n)], results["cython_kernels_over_c"][str(n)],
                                        results["c_vs_cython_max_abs_diff"][str(n)]))
    print("(CPU us per step, best of %d interleaved rounds; pure on CPython; cython = make_filter on the Cython"
          " kernels; cython_py_class = ParticleFilter(kernels=Cython module); c = gcc -O2 reference)" % ROUNDS)
    for key, g in results["goals"].items():
        print("%-20s = %.3f (goal %s): %s" % (key, g["value"], g["goal"], "met" if g["met"] else "NOT met"))
    write_results("pf", results)


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
