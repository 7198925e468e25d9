"""Grading loop's real parts side by side (issue 9): estimator planar vs ES-EKF, motors direct vs
simulated VESCs over ptys, decision backends (float NumPy, int8 LiteRT, int8 pure kernel).

    .venv/bin/python bench/grading_loop.py [--rollouts 4] [--seed 1]

Same seeded worlds for every configuration (rollout r uses RunRandom(seed * 1000 + r),
``--noise`` scenario, default sensor-fusion). Prints a table and writes bench/results/grading_loop.json:

- expert episodes per (estimator, motors): wall s per episode, simulated s per episode,
  real-time factor, successful decisions (blade > 50 % full, ag2u Table I), finished
  episodes, estimation errors; ratios vesc/direct and eskf/planar from this one run;
- agent1/agent2 episodes per estimator (float NumPy decider): success and finished;
- one decision's inference time per agent backend on the same crop.
"""
import argparse
import copy
import json
import os
import platform
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from harness.grading.agents import load_decider  # noqa: E402
from harness.grading.episode import DEFAULTS, ExpertDecider, GradingEpisode  # noqa: E402
from harness.rng import RunRandom  # noqa: E402


def run_config(rollouts, seed, estimator, motors, decider=None, max_legs=None, noise="sensor_fusion"):
    out = {"wall_s": 0.0, "sim_s": 0.0, "legs": 0, "successful": 0, "finished": 0, "pos_err_m": 0.0,
           "yaw_err_deg": 0.0}
    for r in range(rollouts):
        cfg = copy.deepcopy(DEFAULTS)
        cfg.update(estimator=estimator, motors=motors, noise=noise)
        if max_legs:
            cfg["max_legs"] = max_legs
        t0 = time.perf_counter()
        ep = GradingEpisode(cfg, RunRandom(seed * 1000 + r))
        m = ep.run(decider or ExpertDecider(ep.expert))
        out["wall_s"] += time.perf_counter() - t0
        out["sim_s"] += m["episode_time_s"]
        out["legs"] += m["legs"]
        out["successful"] += m["successful_decisions"]
        out["finished"] += int(m["finished"])
        out["pos_err_m"] += m["position_error_rms_m"]
        out["yaw_err_deg"] += m["yaw_error_rms_deg"]
    n = float(rollouts)
    return {"rollouts": rollouts, "wall_s_per_episode": out["wall_s"] / n, "sim_s_per_episode": out["sim_s"] / n,
            "realtime_factor": out["sim_s"] / out["wall_s"], "decisions": out["legs"],
            "success_fraction": out["successful"] / out["legs"] if out["legs"] else 0.0,
            "finished_fraction": out["finished"] / n, "position_error_rms_m": out["pos_err_m"] / n,
            "yaw_error_rms_deg": out["yaw_err_deg"] / n}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rollouts", type=int, default=4)
    p.add_argument("--agent-rollouts", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--noise", default="sensor_fusion", choices=("noise_less", "sensor_fusion", "extreme"))
    p.add_argument("--out", default=os.path.join(REPO, "bench", "results", "grading_loop.json"))
    args = p.parse_args(argv)
    res = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "rollouts": args.rollouts, "seed": args.seed, "noise": args.noise, "expert": {}, "agents": {},
           "inference_s": {}}
    print("expert episodes, %s noise, %d rollouts each" % (args.noise, args.rollouts))
    print("%-8s %-7s %8s %8s %7s %8s %8s %8s %8s" % ("estim.", "motors", "wall s", "sim s", "x real", "success",
                                                    "finished", "pos err", "yaw err"))
    for est, motors in (("planar", "direct"), ("eskf", "direct"), ("eskf", "vesc")):
        c = run_config(args.rollouts, args.seed, est, motors, noise=args.noise)
        res["expert"]["%s/%s" % (est, motors)] = c
        print("%-8s %-7s %8.2f %8.1f %7.1f %8.2f %8.2f %7.3fm %6.2fdeg" % (
            est, motors, c["wall_s_per_episode"], c["sim_s_per_episode"], c["realtime_factor"],
            c["success_fraction"], c["finished_fraction"], c["position_error_rms_m"], c["yaw_error_rms_deg"]))
    e = res["expert"]
    res["ratios"] = {
        "vesc_over_direct_wall_per_sim_s": (e["eskf/vesc"]["realtime_factor"] and
                                            e["eskf/direct"]["realtime_factor"] / e["eskf/vesc"]["realtime_factor"]),
        "eskf_over_planar_wall_per_sim_s": e["planar/direct"]["realtime_factor"] / e["eskf/direct"]["realtime_factor"],
    }
    print("wall time per simulated second: vesc/direct %.2f, eskf/planar %.2f"
          % (res["ratios"]["vesc_over_direct_wall_per_sim_s"], res["ratios"]["eskf_over_planar_wall_per_sim_s"]))
    print("\nagents (float decider), %s noise, %d rollouts each" % (args.noise, args.agent_rollouts))
    for agent in ("agent1", "agent2"):
        decider = load_decider(agent, "numpy")
        for est in ("planar", "eskf"):
            c = run_config(args.agent_rollouts, args.seed, est, "direct", decider=decider, noise=args.noise)
            res["agents"]["%s/%s" % (agent, est)] = c
            print("%-7s %-7s success %.2f (%d decisions) finished %.2f  sim %.0f s/episode" % (
                agent, est, c["success_fraction"], c["decisions"], c["finished_fraction"], c["sim_s_per_episode"]))
    ep = GradingEpisode(copy.deepcopy(DEFAULTS), RunRandom(args.seed))
    crop = ep.observation()
    ep.close()
    print("\none decision (32x32 crop -> 2 way-point maps)")
    for backend in ("numpy", "litert", "litert-xnnpack", "pure-int8"):
        d = load_decider("agent2", backend)
        reps = 1 if backend == "pure-int8" else 20
        d.way_point_pixels(crop)
        t0 = time.perf_counter()
        for _ in range(reps):
            d.way_point_pixels(crop)
        res["inference_s"][backend] = (time.perf_counter() - t0) / reps
        print("%-15s %9.4f s" % (backend, res["inference_s"][backend]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=2, sort_keys=True)
        fh.write("\n")
    print("wrote %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
