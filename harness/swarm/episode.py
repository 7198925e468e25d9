"""One swarm flight (uwb-pocket-drones VI-B) and the offline estimator comparison (VI-A).

Each drone runs its own :class:`onboard.swarm.agent.SwarmAgent` (learned estimator + particle
filters + DQN) on what it would get on hardware: its own measured body velocity, UWB ranges to
every neighbour with the neighbour's velocity from the ranging message, and the range to its
goal. The agent returns a body-frame velocity setpoint, which the truth model tracks.

``link`` chooses how setpoints and ranges travel:

* ``direct``: the vectorised 2-D simulator of harness/swarm/sim.py is the truth, ranges from
  its pocket III-A noise model (fast; used for training-free evaluation and CI);
* ``cflib``: not wired here yet (see harness/swarm/README.md for what it needs from the
  Crazyflie and UWB lanes).

Sensor records of each flight are replayed offline through the three estimator
configurations (hybrid, pure PF, learned only), as the paper does in VI-A.
"""
import math
import os

import numpy as np

from harness.swarm.sim import SwarmBatch, to_body
from onboard.estimators import particle_filter as pf_mod
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm.agent import GOAL_ID, SwarmAgent
from onboard.swarm.bearing_net import BearingNet
from onboard.swarm.dqn import DqnFloat

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(REPO, "models", "swarm")

DEFAULTS = {
    "goals": "fixed",                # fixed | random (pocket VI-B)
    "drones": 2,
    "arena_m": 4.0,                  # the lab's flight area (pocket VI)
    "max_duration_s": 40.0,
    "goal_radius_m": 0.25,           # a goal counts as reached within this distance (truth)
    "goals_per_drone": 3,            # random mode: goals flown in sequence
    "n_particles": 100,
    "warmup_steps": 10,
    "converged_after_s": 3.0,        # estimation errors are averaged from here on
    "impl": None,                    # particle-filter kernels (onboard.impl); None: $ONBOARD_IMPL
    "policy": "float",               # float | int8
    "compare_estimators": True,      # replay the sensor records through pf / learned configurations
    "link": "direct",
}


def load_models(policy="float", bearing_dir=None, dqn_dir=None):
    """(BearingNet, DQN runner) from models/swarm (or the given folders)."""
    bearing_dir = bearing_dir or os.path.join(MODEL_DIR, "bearing")
    dqn_dir = dqn_dir or os.path.join(MODEL_DIR, "dqn")
    net = BearingNet.load(os.path.join(bearing_dir, "weights.npz"))
    dqn = DqnFloat.load(os.path.join(dqn_dir, "weights.npz"))
    if policy == "int8":
        from onboard.swarm.dqn import DqnInt8
        cal = np.load(os.path.join(dqn_dir, "calibration.npy"))
        with np.load(os.path.join(dqn_dir, "weights.npz")) as data:
            dqn = DqnInt8({k: data[k] for k in data.files}, cal)
    return net, dqn


def fixed_layout(m, arena_m):
    """Starts on the west side, goals straight across on the east side: paths never cross (pocket VI-B)."""
    half = arena_m / 2.0 * 0.75
    ys = np.linspace(-half, half, m) if m > 1 else np.zeros(1)
    starts = np.stack([np.full(m, -half), ys], -1)
    goals = np.stack([np.full(m, half), ys], -1)
    return starts, goals


def run_episode(config, rng_truth, rng_agents, models=None):
    """Fly one episode; returns (metrics dict, records dict)."""
    c = dict(DEFAULTS)
    c.update(config)
    m = int(c["drones"])
    net, dqn = models or load_models(c["policy"])
    sim = SwarmBatch(1, m, rng_truth, {"arena_m": c["arena_m"], "goal_radius_m": c["goal_radius_m"]})
    half = c["arena_m"] / 2.0 * 0.8
    if c["goals"] == "fixed":
        starts, goals = fixed_layout(m, c["arena_m"])
        sim.pos[0] = starts
        goal_queue = [[g] for g in goals]
    else:
        goal_queue = [[rng_truth.uniform(-half, half, 2) for _ in range(c["goals_per_drone"])] for _ in range(m)]
    sim.goal[0] = np.array([q[0] for q in goal_queue])
    goal_index = [0] * m
    kernels = pf_mod.kernels_for(c["impl"])
    agents = [SwarmAgent(dqn, net, NumpyDraws(rng_agents),
                         {"n_particles": c["n_particles"], "warmup_steps": c["warmup_steps"]}, kernels=kernels)
              for _ in range(m)]
    scfg = sim.cfg
    period_us = int(round(sim.dt_s * 1e6))
    steps = int(c["max_duration_s"] / sim.dt_s)
    goals_total = m * len(goal_queue[0])
    reached_count = 0
    rec = {"t_s": [], "pos": [], "goal": [], "err_pos": [], "err_yaw": [], "err_goal": [],
           "inputs": [[] for _ in range(m)], "truth_rel": [[] for _ in range(m)]}
    t_us = 0
    done_at = None
    vel_noise = scfg["vel_noise_mps"]
    for k in range(steps):
        t_us += period_us
        v_body_true = sim.vel_body()[0]
        v_meas = v_body_true + rng_truth.normal(0.0, vel_noise, v_body_true.shape)
        ranges = sim.ranges()[0]
        gdist = sim.goal_dist()[0]
        g_range = np.abs(gdist + rng_truth.normal(scfg["range_bias_m"], scfg["range_sigma_m"], m))
        setpoints = np.zeros((m, 2))
        errs_p, errs_y, errs_g = [], [], []
        for i, ag in enumerate(agents):
            vo = (float(v_meas[i, 0]), float(v_meas[i, 1]))
            step_inputs = []
            for j in range(m):
                if j == i:
                    continue
                vp = (float(v_meas[j, 0]), float(v_meas[j, 1]))
                r = float(ranges[i, j])
                ag.observe(t_us, j, r, vo, vp)
                step_inputs.append((j, r, vo, vp))
            ag.observe(t_us, GOAL_ID, float(g_range[i]), vo, (0.0, 0.0))
            step_inputs.append((GOAL_ID, float(g_range[i]), vo, (0.0, 0.0)))
            setpoints[i] = ag.decide(t_us, vo)
            # truth in i's body frame, for the error metrics
            truth = {}
            for j in range(m):
                if j != i:
                    rel = to_body(sim.yaw[0, i], sim.pos[0, j] - sim.pos[0, i])
                    truth[j] = (rel[0], rel[1], math.remainder(sim.yaw[0, j] - sim.yaw[0, i], 2 * math.pi))
            relg = to_body(sim.yaw[0, i], sim.goal[0, i] - sim.pos[0, i])
            truth[GOAL_ID] = (relg[0], relg[1], 0.0)
            rec["inputs"][i].append((t_us, step_inputs))
            rec["truth_rel"][i].append(truth)
            for obj, tr in ag.tracks.items():
                if tr.est is None:
                    continue
                e = math.hypot(tr.est[0] - truth[obj][0], tr.est[1] - truth[obj][1])
                if obj == GOAL_ID:
                    errs_g.append(e)
                else:
                    errs_p.append(e)
                    errs_y.append(abs(math.degrees(math.remainder(tr.est[2] - truth[obj][2], 2 * math.pi))))
        sim.step_setpoints(setpoints[None])
        # goal bookkeeping (truth): advance the queue on arrival
        for i in range(m):
            if sim.reached[0, i]:
                reached_count += 1
                goal_index[i] += 1
                if goal_index[i] < len(goal_queue[i]):
                    sim.goal[0, i] = goal_queue[i][goal_index[i]]
                    sim.reached[0, i] = False
        rec["t_s"].append(t_us * 1e-6)
        rec["pos"].append(sim.pos[0].copy())
        rec["goal"].append(sim.goal[0].copy())
        rec["err_pos"].append(float(np.mean(errs_p)) if errs_p else float("nan"))
        rec["err_yaw"].append(float(np.mean(errs_y)) if errs_y else float("nan"))
        rec["err_goal"].append(float(np.mean(errs_g)) if errs_g else float("nan"))
        if reached_count >= goals_total:
            done_at = t_us * 1e-6
            break
    conv = [i for i, t in enumerate(rec["t_s"]) if t >= c["converged_after_s"]]

    def mean_of(key):
        v = [rec[key][i] for i in conv if rec[key][i] == rec[key][i]]
        return float(np.mean(v)) if v else None

    pos_all = [x for key in ("err_pos", "err_goal") for x in [rec[key][i] for i in conv] if x == x]
    metrics = {
        "goals_reached": int(reached_count),
        "goals_total": int(goals_total),
        "min_separation_m": float(sim.min_sep[0]),
        "mean_position_error_m": float(np.mean(pos_all)) if pos_all else None,
        "mean_neighbour_position_error_m": mean_of("err_pos"),
        "mean_goal_position_error_m": mean_of("err_goal"),
        "mean_orientation_error_deg": mean_of("err_yaw"),
        "time_to_complete_s": done_at,
        "sim_time_s": rec["t_s"][-1] if rec["t_s"] else 0.0,
        "rejected_inputs": int(sum(t.rejected for a in agents for t in a.tracks.values())),
        "pf_outliers": int(sum(t.pf.outliers for a in agents for t in a.tracks.values())),
    }
    return metrics, rec


def replay_estimators(rec, models, modes, n_particles, seed, warmup_steps=10, impl=None):
    """Offline replay of one flight's sensor records through estimator configurations (pocket VI-A).

    Returns {mode: {"t_s": [...], "err_m": [...], "err_yaw_deg": [...]}} with per-step mean
    errors over all (drone, neighbour) pairs and goals (orientation: neighbours only).
    """
    net, dqn = models
    out = {}
    kernels = pf_mod.kernels_for(impl)
    for mode in modes:
        rng = np.random.default_rng(seed)
        errs, yerrs, ts = [], [], []
        agents = [SwarmAgent(dqn, net, NumpyDraws(rng), {"mode": mode, "n_particles": n_particles,
                                                         "warmup_steps": warmup_steps}, kernels=kernels)
                  for _ in rec["inputs"]]
        n_steps = len(rec["inputs"][0])
        for k in range(n_steps):
            e_step, y_step = [], []
            for i, ag in enumerate(agents):
                t_us, inputs = rec["inputs"][i][k]
                truth = rec["truth_rel"][i][k]
                for obj, r, vo, vp in inputs:
                    est = ag.observe(t_us, obj, r, vo, vp)
                    if est is None:
                        continue
                    e_step.append(math.hypot(est[0] - truth[obj][0], est[1] - truth[obj][1]))
                    if obj != GOAL_ID:
                        y_step.append(abs(math.degrees(math.remainder(est[2] - truth[obj][2], 2 * math.pi))))
            ts.append(t_us * 1e-6)
            errs.append(float(np.mean(e_step)) if e_step else float("nan"))
            yerrs.append(float(np.mean(y_step)) if y_step else float("nan"))
        out[mode] = {"t_s": ts, "err_m": errs, "err_yaw_deg": yerrs}
    return out


def convergence_time_s(t_s, err, threshold_m=0.3, hold_steps=10):
    """First time after which the error stays below threshold for hold_steps steps (None if never)."""
    run = 0
    for t, e in zip(t_s, err):
        if e == e and e < threshold_m:
            run += 1
            if run >= hold_steps:
                return t - (hold_steps - 1) * (t_s[1] - t_s[0] if len(t_s) > 1 else 0.0)
        else:
            run = 0
    return None
