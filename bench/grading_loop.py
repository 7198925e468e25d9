"""Grading loop's real parts side by side: estimator planar vs ES-EKF, motors direct vs
simulated VESCs over ptys, decision backends (float NumPy, int8 LiteRT, int8 pure kernel).

    .venv/bin/python bench/grading_loop.py [--rollouts 4] [--seed 1]

Same seeded worlds for every configuration (rollout r uses RunRandom(seed * 1000 + r),
``--noise`` scenario, default sensor-fusion). Prints a table and writes bench/results/grading_loop.json:

- expert episodes per (estimator, motors): wall s per episode, simulated s per episode,
  real-time factor, successful decisions (blade > 50 % full of the work area's sand, ag2u Table I), finished
  episodes, estimation errors; ratios vesc/direct and eskf/planar from this one run;
- agent1/agent2 episodes per estimator (float NumPy decider): success and finished;
- one decision's inference time per agent backend on the same crop (the decider's two forward
  passes with mirror averaging, agents.PolicyDecider.maps).
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

from harness.scenarios.grading.agents import load_decider  # noqa: E402
from harness.scenarios.grading.episode import DEFAULTS, GradingEpisode  # noqa: E402
from harness.scenarios.grading.sweep import episode_config, run_cell  # noqa: E402
from harness.sim.rng import RunRandom  # noqa: E402


def run_config(rollouts, seed, estimator, motors, decider=None, max_legs=None, noise="sensor_fusion"):
    """sweep.run_cell on (estimator, motors) for the expert (decider None) or a decider, timed."""
    base = episode_config({"estimator": estimator, "motors": motors})
    t0 = time.perf_counter()
    c = run_cell({"agent": decider}, "agent" if decider else "expert", noise, rollouts, seed, max_legs=max_legs,
                 base_config=base)
    wall_s = time.perf_counter() - t0
    sim_s = c["mean_episode_time_s"] * rollouts
    return {"rollouts": rollouts, "wall_s_per_episode": wall_s / rollouts, "sim_s_per_episode": sim_s / rollouts,
            "realtime_factor": sim_s / wall_s, "decisions": c["decisions"],
            "success_fraction": c["success_fraction"], "finished_fraction": c["finished_fraction"],
            "position_error_rms_m": c["position_error_rms_m"], "yaw_error_rms_deg": c["yaw_error_rms_deg"]}


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
    deciders = {backend: load_decider("agent2", backend) for backend in ("numpy", "litert", "litert-xnnpack",
                                                                         "pure-int8")}
    # the crop the agent sees, in its card's geometry (the episode's default renderer is another size)
    crop = deciders["numpy"].renderer.render(ep.world, ep.estimated_pose(), ep.true_pose())
    ep.close()
    print("\none decision (%dx%d crop -> 2 way-point maps; %d forward passes)"
          % (crop.shape + (2 if deciders["numpy"].mirror_average else 1,)))
    for backend, d in deciders.items():
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
