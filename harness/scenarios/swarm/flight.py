"""One swarm flight (uwb-pocket-drones VI-B) and the offline estimator comparison (VI-A).

Each drone is an onboard app, a swarm member (:class:`onboard.swarm.member.SwarmMember`: its own
:class:`onboard.swarm.agent.SwarmAgent` - learned estimator + particle filters + DQN - as parts on a
Node), fed through its entry points with what it would get on hardware: its own measured body
velocity and heading, UWB ranges to every neighbour with the neighbour's velocity from the ranging
message, and the range to its goal. Each period every member's node steps once (drone 0, then 1,
...: the agents share one random stream, so the order is part of the result); the member commands
its driver (the world's: a CrazyflieDriver over cflib, or the 2-D simulator's stand-in), which the
truth model then tracks.

``link`` chooses how setpoints and ranges travel:

* ``direct``: the vectorised 2-D simulator of harness/sim/swarm_arena.py is the truth, ranges from
  its pocket III-A noise model (fast; offline comparisons);
* ``cflib``: simulated Crazyflies flown through boards.crazyflie on the official cflib over UDP,
  ranges from the onboard UWB protocol code on the DW1000 channel simulator (the deployment
  path; see harness/scenarios/swarm/worlds.py and harness/scenarios/swarm/README.md).

Sensor records of each flight are replayed offline through the three estimator
configurations (hybrid, pure PF, learned only), as the paper does in VI-A.
"""
import math
import os
import time

import numpy as np

from harness.config import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least, one_of, range_problem
from harness.sim.swarm_arena import relative_pose_body, sample_separated
from harness.scenarios.swarm.worlds import WORLDS, CflibWorld, DirectWorld
from onboard.comms.uwb.config import RING_MAX_IDS
from onboard.comms.uwb.frames import MAX_NODE_ID
from onboard.core.samples import RangeSample
from onboard.estimators import particle_filter as pf_mod
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.impl import IMPLEMENTATIONS
from onboard.swarm.agent import GOAL_ID, MODES as AGENT_MODES, SwarmAgent
from onboard.swarm.agent import checked_config as agent_checked_config
from onboard.swarm.bearing_net import BearingNet, BearingPolicy
from onboard.swarm.dqn import DqnFloat
from onboard.swarm.member import FLIGHT_AGENT_CONFIG as AGENT, SwarmMember

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_DIR = os.path.join(REPO, "models", "swarm")

# the agent's values are the onboard swarm member's (onboard.swarm.member.FLIGHT_AGENT_CONFIG, what the
# standalone member flies); why each has its value is said here
DEFAULTS = {
    "goals": "fixed",                # fixed | random (pocket VI-B)
    "drones": 2,
    "arena_m": 4.0,                  # the lab's flight area (pocket VI)
    "max_duration_s": 60.0,
    "goal_radius_m": 0.25,           # a goal counts as reached within this distance (truth)
    "goals_per_drone": 3,            # random mode: goals flown in sequence
    "goal_separation_m": 0.6,        # random mode: between any two goals
    "n_particles": AGENT["n_particles"],  # per tracked object (paper: ~100; 1000 costs ~40 us per step in Cython)
    "warmup_steps": AGENT["warmup_steps"],
    "converged_after_s": 3.0,        # mean_position_error_m_from_3s averages every track from here on
    # a track (one drone's estimate of one neighbour, or of one goal) has converged once its position
    # error stays below convergence_threshold_m for convergence_hold_s; mean_position_error_m and
    # mean_orientation_error_deg average each converged track from then on
    "convergence_threshold_m": 0.5,
    "convergence_hold_s": 1.0,
    "impl": None,                    # particle-filter kernels (onboard.impl); None: $ONBOARD_IMPL
    "policy": "int8",                # DQN: float | int8 (LiteRT) | int8-pure (pure int8 kernel), see load_models
    "estimator": "int8",             # learned estimator: int8 (the GRU's int8 export, LiteRT) | int8-pure | float (NumPy)
    "compare_estimators": True,      # replay the sensor records through pf / learned configurations
    "link": "direct",                # direct | cflib (simulated Crazyflies over cflib/UDP, ranges over onboard.comms.uwb)
    "uwb_mode": "token_ring",        # cflib link: token_ring (pocket III-A) | broadcast (scalable, 8-10 drones)
    "vel_noise_mps": 0.05,           # own-velocity (flow / mocap) noise
    # hybrid | pf | learned (pocket figs. 5-6). Flights default to the pure filter at 1000 particles: with
    # the committed estimator it is the most accurate configuration measured (the scenario's
    # estimator_comparison replays every flight through all of them)
    "agent_mode": AGENT["mode"],
    "learned_refresh": AGENT["learned_refresh"],  # agent: refresh around a drawn bin ("sample") or the mean
    "pf_init": AGENT["pf_init"],  # onboard.swarm.agent: hybrid filter start (learned | ring | ring-first)
    "min_confidence": AGENT["min_confidence"],  # agent: hybrid refresh only above this estimator confidence
    # extra ParticleFilter settings: adaptive resampling (resample only when Neff < N/2, weights carried
    # over otherwise), so a wrong-mirror hypothesis is not locked in by resampling noise;
    # reinit_after_outliers: a filter that three ranges in a row contradict starts afresh;
    # lost_residual_m: ... and so does one whose estimate stays farther away than the ranges say (low-passed
    # residual below -0.4 m); refresh_mode spread (hybrid only): the learned particles come in while the
    # filter's bearing is unsure (weighted spread above 0.25 rad of the estimate's distance), 1 % once it is
    # sure. Measurements behind each: docs/experiments/swarm.md
    "pf_config": dict(AGENT["pf_config"]),
    "guard_distance_m": AGENT["guard_distance_m"],  # the agent's collision guard (not in the paper; 0: DQN only)
    "guard_on_range": AGENT["guard_on_range"],  # ... fires on the measured range too, not only on the estimate
    # ... and on the predicted closest approach within this horizon, s. Over cflib the Crazyflie's velocity
    # loop lags the setpoint, so a guard on the present distance alone fires too late
    "guard_horizon_s": AGENT["guard_horizon_s"],
    # ... hovers instead while the neighbour's estimate disagrees with its ranges (low-passed residual beyond
    # 0.15 m, at most 2 s in a row): two drones backing off from each other in the same direction, one on
    # a wrong estimate, can collide
    "guard_residual_m": AGENT["guard_residual_m"],
    "guard_hold_max_s": AGENT["guard_hold_max_s"],
    # ... and every drone hovers while a neighbour's ranges alone (1 s least-squares rate, no bearing needed)
    # say contact within 1 s: drones crossing head-on on estimates 0.6-1.0 m off close faster than the
    # guard reacts
    "brake_ttc_s": AGENT["brake_ttc_s"],
    # onboard.swarm.agent detour (not in the paper; 0: off): a drone whose goal estimate has not come
    # 0.3 m closer within this window is shown its goal rotated 60 deg away from its nearest neighbour
    # for 4 s (the DQN alone hovers in front of a drone parked on its path)
    "stuck_window_s": AGENT["stuck_window_s"],
    # ... final approach: inside 0.5 m of the goal estimate a P controller (1 /s, <= 0.3 m/s) replaces the
    # DQN, which alone can hover a few decimetres short of its goal
    "approach_radius_m": AGENT["approach_radius_m"],
    # ... a neighbour estimate shorter than half the measured range (bearing not resolved yet) is shown to
    # the DQN and the guard at the measured range along its direction
    "collapsed_estimate_fraction": AGENT["collapsed_estimate_fraction"],
    # ... the same for the goal: an estimate shorter than half the smoothed goal range (beyond 0.3 m) is
    # shown at that range, so a drone near its goal on an unresolved posterior keeps flying
    "collapsed_goal_fraction": AGENT["collapsed_goal_fraction"],
    # the goal's filter: a goal stands still, so its relative motion is the own velocity alone, measured
    # with vel_noise_mps (0.05 m/s) - not the 0.15 m/s a neighbour's (own + reported + orientation) needs
    "goal_pf_config": dict(AGENT["goal_pf_config"]),
}


# flight settings handed to each drone's onboard.swarm.agent.SwarmAgent under the same name
AGENT_SETTINGS = ("n_particles", "warmup_steps", "learned_refresh", "pf_init", "min_confidence", "guard_distance_m",
                  "guard_on_range", "guard_horizon_s", "guard_residual_m", "guard_hold_max_s", "brake_ttc_s",
                  "stuck_window_s", "approach_radius_m", "collapsed_estimate_fraction", "collapsed_goal_fraction")

POLICIES = ("float", "int8", "int8-pure")
ESTIMATORS = ("float", "int8", "int8-pure")


GOAL_MODES = ("fixed", "random")
RANDOM_HALF_FRACTION = 0.8          # random starts and goals: drawn in the arena's middle 80 % on each axis
RANDOM_START_SEPARATION_M = 0.5     # random starts: at least this far apart
UWB_MODES = ("token_ring", "broadcast")
# the cflib link's drones are UWB nodes 0..N-1: the token ring's membership is a RING_MAX_IDS-bit map, the
# broadcast frames carry ids 0..MAX_NODE_ID (onboard.comms.uwb.config.check_node_id)
MAX_UWB_NODES = {"token_ring": RING_MAX_IDS, "broadcast": MAX_NODE_ID + 1}
# value ranges of the flight settings (onboard.core.settings rules; check_config); the agent's own
# settings are checked by onboard.swarm.agent.checked_config
SETTING_RANGES = dict(
    {"goals": one_of(*GOAL_MODES), "agent_mode": one_of(*AGENT_MODES), "link": one_of(*sorted(WORLDS)),
     "uwb_mode": one_of(*UWB_MODES), "policy": one_of(*POLICIES), "estimator": one_of(*ESTIMATORS),
     "impl": one_of(None, *IMPLEMENTATIONS), "drones": int_at_least(1), "goals_per_drone": int_at_least(1),
     "compare_estimators": BOOLEAN},
    **{key: POSITIVE for key in ("arena_m", "max_duration_s", "goal_radius_m", "convergence_threshold_m")},
    **{key: NON_NEGATIVE for key in ("goal_separation_m", "converged_after_s", "convergence_hold_s",
                                     "vel_noise_mps")})


def agent_config(c):
    """The onboard.swarm.agent.SwarmAgent settings of flight settings ``c``."""
    return dict({k: c[k] for k in AGENT_SETTINGS}, mode=c["agent_mode"], pf_config=dict(c["pf_config"]),
                goal_pf_config=dict(c["goal_pf_config"]))


# the particle filters' settings tables: replaced whole, checked by the agent (onboard.swarm.agent)
PF_TABLES = {key: ("a table of ParticleFilter settings", lambda v: isinstance(v, dict))
             for key in ("pf_config", "goal_pf_config")}


def check_config(config):
    """Flight settings (DEFAULTS updated with ``config``: unknown keys, wrong types and NaN raise ConfigError)
    checked before anything flies: ValueError naming the first setting outside its choices or range,
    including the agent's (onboard.swarm.agent)."""
    c = checked(DEFAULTS, PF_TABLES, config, "swarm flight")
    problem = range_problem(c, SETTING_RANGES)
    if problem:
        raise ValueError(problem)
    if c["goal_radius_m"] >= 0.5 * c["arena_m"]:
        raise ValueError("goal_radius_m (%g m) must be below half the arena (arena_m %g m): goals would count as "
                         "reached from across the arena" % (c["goal_radius_m"], c["arena_m"]))
    if c["goals"] == "random":
        side_m = RANDOM_HALF_FRACTION * c["arena_m"]
        for key, what, n, sep_m in (("goal_separation_m", "random goals (goals_per_drone x drones)",
                                     c["drones"] * c["goals_per_drone"], c["goal_separation_m"]),
                                    ("drones", "random starts", c["drones"], RANDOM_START_SEPARATION_M)):
            if n > most_points_apart(side_m, sep_m):
                raise ValueError("%s: %d %s cannot be %g m apart in the %g m square they are drawn from "
                                 "(arena_m %g m)" % (key, n, what, sep_m, side_m, c["arena_m"]))
    if c["link"] == "cflib" and c["drones"] > MAX_UWB_NODES[c["uwb_mode"]]:
        raise ValueError("drones: the cflib link ranges the drones on UWB nodes 0..N-1, at most %d in mode %s "
                         "(onboard.comms.uwb), got %d drones" % (MAX_UWB_NODES[c["uwb_mode"]], c["uwb_mode"],
                                                                c["drones"]))
    agent_checked_config(agent_config(c))      # the agent's settings go by the same names (mode: agent_mode)
    return c


def most_points_apart(side_m, sep_m):
    """At most how many points fit in a square of side ``side_m`` at least ``sep_m`` apart (Oler's
    inequality: 2/sqrt(3) (s/d)^2 + 2 s/d + 1, an upper bound: more never fit, whatever the draw)."""
    if sep_m <= 0.0:
        return math.inf
    r = side_m / sep_m
    return 2.0 / math.sqrt(3.0) * r * r + 2.0 * r + 1.0


def load_models(policy="float", estimator="float", bearing_dir=None, dqn_dir=None):
    """(bearing estimator, DQN runner) from models/swarm (or the given folders).

    policy: "float" (NumPy float DQN), "int8" (the exported full-int8 model.tflite run by LiteRT,
    reference kernels) or "int8-pure" (the same file on the pure int8 kernel, as on a microcontroller).
    estimator: "float" (the GRU, NumPy, models/swarm/bearing/weights.npz) or "int8" / "int8-pure" (the
    same GRU exported to int8, models/swarm/bearing/model.tflite, through the same backends).
    """
    if policy not in POLICIES:
        raise ValueError("policy must be one of %s, got %r" % (POLICIES, policy))
    if estimator not in ESTIMATORS:
        raise ValueError("estimator must be one of %s, got %r" % (ESTIMATORS, estimator))
    dqn_dir = dqn_dir or os.path.join(MODEL_DIR, "dqn")
    if estimator == "float":
        net = BearingNet.load(os.path.join(bearing_dir or os.path.join(MODEL_DIR, "bearing"), "weights.npz"))
    else:
        net = BearingPolicy.load(bearing_dir or os.path.join(MODEL_DIR, "bearing"),
                                 backend="litert" if estimator == "int8" else "pure")
    if policy == "float":
        dqn = DqnFloat.load(os.path.join(dqn_dir, "weights.npz"))
    else:
        from onboard.policy import load_policy
        dqn = load_policy(dqn_dir, backend="litert" if policy == "int8" else "pure")
    return net, dqn


def fixed_layout(m, arena_m):
    """Starts on the west side, goals straight across on the east side: paths never cross (pocket VI-B)."""
    half = arena_m / 2.0 * 0.75
    ys = np.linspace(-half, half, m) if m > 1 else np.zeros(1)
    starts = np.stack([np.full(m, -half), ys], -1)
    goals = np.stack([np.full(m, half), ys], -1)
    return starts, goals


def run_episode(config, rng_truth, rng_agents, models=None, seed=1, record=None, on_step=None):
    """Fly one episode in the world ``config["link"]`` picks; returns (metrics dict, records dict).

    ``record``: None, or ``(sink, code_version, drone)``: drone ``drone``'s member is recorded at its
    boundary into ``sink(topic, time_us, msg)`` (``SwarmMember.record``; ``python -m harness replay``).
    ``models`` (net, dqn) must then be what ``load_models(config["policy"], config["estimator"])`` gives
    (the recording names those, in models/swarm). ``on_step``: None, or called once per period before
    the members step with ``(now_us, t_s, pos, yaw, goal)``: the drivers' clock (us), the mission time
    (s), every drone's true position (m, north/east) and heading (rad), and its current goal (m)."""
    c = check_config(config)
    m = c["drones"]
    net, dqn = models or load_models(c["policy"], c["estimator"])
    half = c["arena_m"] / 2.0 * RANDOM_HALF_FRACTION
    if c["goals"] == "fixed":
        starts, goals = fixed_layout(m, c["arena_m"])
        goal_queue = [[g] for g in goals]
    else:
        starts = sample_separated(rng_truth, 1, m, half, RANDOM_START_SEPARATION_M)[0]
        # random goals (pocket VI-B), no two drones' goals closer than goal_separation_m: two drones told
        # to hover on the same spot could not both reach it without a collision
        g = c["goals_per_drone"]
        pts = sample_separated(rng_truth, 1, m * g, half, c["goal_separation_m"])[0]
        goal_queue = [[pts[i * g + k] for k in range(g)] for i in range(m)]
    yaws = rng_truth.uniform(-math.pi, math.pi, m)        # every drone its own heading (own frame)
    goal = np.array([q[0] for q in goal_queue])
    world_cfg = {k: c[k] for k in ("uwb_mode", "vel_noise_mps") if k in c}
    if c["link"] == "cflib":
        world = CflibWorld(m, starts, goal, yaws, rng_truth, c["arena_m"], world_cfg, seed=seed)
    else:
        world = DirectWorld(m, starts, goal, yaws, rng_truth, c["arena_m"], world_cfg)
    try:
        met, rec = _fly(c, m, world, goal, goal_queue, net, dqn, rng_truth, rng_agents, record, on_step)
    finally:
        t_close = time.perf_counter()
        world.close()
        close_wall_s = time.perf_counter() - t_close
    met["world"]["close_wall_s"] = close_wall_s
    return met, rec


def models_description(c):
    """Which models a flight with settings ``c`` flies (written with a member's recording): the policy and
    estimator kinds of :func:`load_models` and their folder relative to the repository."""
    return {"policy": c["policy"], "estimator": c["estimator"], "dir": os.path.relpath(MODEL_DIR, REPO)}


def make_members(c, m, world, net, dqn, rng_agents, kernels=None):
    """One swarm member per drone on the world's drivers: neighbours 0..m-1 but itself, the flight's
    agent settings, the agents' draws all from ``rng_agents``, stepped at the world's period."""
    period_us = world.period_us
    if 1000000 % period_us:
        raise ValueError("the world's period (%d us) is not a whole number of Hz" % period_us)
    member_cfg = {"step_rate_hz": 1000000 // period_us}
    agent_cfg = agent_config(c)
    models = models_description(c)
    return [SwarmMember(dqn, net, NumpyDraws(rng_agents), [j for j in range(m) if j != i], world.drivers[i],
                        member_cfg, agent_cfg, kernels=kernels, start_us=world.t0_us, name="drone%d" % i,
                        models=models)
            for i in range(m)]


def _fly(c, m, world, goal, goal_queue, net, dqn, rng_truth, rng_agents, record=None, on_step=None):
    kernels = pf_mod.kernels_for(c["impl"])
    members = make_members(c, m, world, net, dqn, rng_agents, kernels)
    if record is not None:
        sink, code_version, drone = record
        if not 0 <= drone < m:
            raise ValueError("cannot record drone %d of a %d-drone flight" % (drone, m))
        members[drone].record(sink, code_version, world.t0_us)
    agents = [mem.agent for mem in members]
    period_us = world.period_us
    t0_us = world.t0_us                  # the mission's start on the drivers' (and members') clock
    steps = int(round(c["max_duration_s"] * 1e6 / period_us))
    goals_total = m * len(goal_queue[0])
    goal_index = [0] * m
    reached_count = 0
    rec = {"t_s": [], "pos": [], "goal": [], "err_pos": [], "err_yaw": [], "err_goal": [],
           "inputs": [[] for _ in range(m)], "truth_rel": [[] for _ in range(m)],
           "goal_resets": [set() for _ in range(m)], "tracks": {}}
    goal_segment = [0] * m
    bias_m = pf_mod.UWB_RANGE_BIAS_M
    sigma_m = math.sqrt(pf_mod.UWB_RANGE_VAR_M2)
    t_us = 0
    done_at = None
    for k in range(steps):
        pos, yaw = world.truth()
        v_meas, ranges = world.sense()
        gdist = np.hypot(*(goal - pos).T)
        g_range = np.abs(gdist + rng_truth.normal(bias_m, sigma_m, m))        # goal beacon (harness)
        errs_p, errs_y, errs_g = [], [], []
        # truth the estimates are scored against, every pair at once: rel_all[i, j] is j in i's body frame
        rel_all, ryaw_all = relative_pose_body(pos[:, None, :], yaw[:, None], pos[None, :, :], yaw[None, :])
        relg_all, _ = relative_pose_body(pos, yaw, goal)
        rel_all, ryaw_all, relg_all = rel_all.tolist(), ryaw_all.tolist(), relg_all.tolist()
        now_us = t0_us + t_us
        if on_step is not None:
            on_step(now_us, t_us * 1e-6, pos, yaw, goal)
        for i, mem in enumerate(members):
            # what drone i's drivers deliver this period, through the member's entry points; its node
            # then steps once: every range to the agent (a neighbour without one: a dropout), the goal
            # range, the decision, the command to its driver
            mem.on_velocity(now_us, (float(v_meas[i, 0]), float(v_meas[i, 1])), world.heading(i))
            for j in range(m):
                if j == i:
                    continue
                for r, vp, t_r in ranges[i].get(j) or []:
                    mem.on_range(RangeSample(t0_us + int(t_r), j, r, vp))
            mem.on_goal_range(now_us, float(g_range[i]))
            mem.step(now_us)
            ag = mem.agent
            truth = {j: (rel_all[i][j][0], rel_all[i][j][1], ryaw_all[i][j]) for j in range(m) if j != i}
            truth[GOAL_ID] = (relg_all[i][0], relg_all[i][1], 0.0)
            rec["inputs"][i].append((t_us, mem.decision.last_inputs))
            rec["truth_rel"][i].append(truth)
            for obj, tr in ag.tracks.items():
                if tr.est is None:
                    continue
                e, ey = estimate_errors(tr.est, truth[obj], obj)
                if obj == GOAL_ID:
                    errs_g.append(e)
                else:
                    errs_p.append(e)
                    errs_y.append(ey)
                rec["tracks"].setdefault(track_key(i, obj, goal_segment[i]), []).append((t_us * 1e-6, e, ey))
        rec["t_s"].append(t_us * 1e-6)
        rec["pos"].append(pos)
        rec["goal"].append(goal.copy())
        rec["err_pos"].append(float(np.mean(errs_p)) if errs_p else float("nan"))
        rec["err_yaw"].append(float(np.mean(errs_y)) if errs_y else float("nan"))
        rec["err_goal"].append(float(np.mean(errs_g)) if errs_g else float("nan"))
        t_us = world.act()
        # goal bookkeeping on the truth: arrival advances that drone's goal queue
        pos, _ = world.truth()
        for i in range(m):
            if goal_index[i] < len(goal_queue[i]) and math.hypot(*(goal[i] - pos[i])) < c["goal_radius_m"]:
                reached_count += 1
                goal_index[i] += 1
                if goal_index[i] < len(goal_queue[i]):
                    goal[i] = goal_queue[i][goal_index[i]]
                    members[i].new_goal(t0_us + t_us)    # a new goal: its track starts afresh
                    goal_segment[i] += 1
                    rec["goal_resets"][i].add(k + 1)
        if reached_count >= goals_total:
            done_at = t_us * 1e-6
            break
    conv = [i for i, t in enumerate(rec["t_s"]) if t >= c["converged_after_s"]]

    def mean_of(key):
        v = [rec[key][i] for i in conv if rec[key][i] == rec[key][i]]
        return float(np.mean(v)) if v else None

    pos_all = [x for key in ("err_pos", "err_goal") for x in [rec[key][i] for i in conv] if x == x]
    tracks = track_summary(rec["tracks"], c["convergence_threshold_m"], c["convergence_hold_s"])
    metrics = {
        "goals_reached": int(reached_count),
        "goals_total": int(goals_total),
        "min_separation_m": float(world.min_separation_m()),
        "mean_position_error_m": tracks["mean_position_error_m"],
        "mean_orientation_error_deg": tracks["mean_orientation_error_deg"],
        "tracks": tracks,
        "mean_position_error_m_from_3s": float(np.mean(pos_all)) if pos_all else None,
        "mean_neighbour_position_error_m_from_3s": mean_of("err_pos"),
        "mean_goal_position_error_m_from_3s": mean_of("err_goal"),
        "mean_orientation_error_deg_from_3s": mean_of("err_yaw"),
        "time_to_complete_s": done_at,
        "sim_time_s": t_us * 1e-6,
        "range_dropouts": int(sum(mem.decision.dropouts for mem in members)),
        "ranges_used": int(sum(mem.decision.ranges_used for mem in members)),   # neighbour ranges fed to the filters
        "rejected_inputs": int(sum(t.rejected for a in agents for t in a.tracks.values())),
        "pf_outliers": int(sum(t.pf.outliers for a in agents for t in a.tracks.values())),
        "guard_overrides": int(sum(a.guard_overrides for a in agents)),
        "guard_holds": int(sum(a.guard_holds for a in agents)),
        "brakes": int(sum(a.brakes for a in agents)),
        "detours": int(sum(a.detours for a in agents)),
        "collapsed_goal_steps": int(sum(a.collapsed_goal_steps for a in agents)),
        # lost-filter restarts of the tracks alive at the end (a new goal's track starts afresh)
        "pf_restarts": int(sum(t.pf.reinitializations for a in agents for t in a.tracks.values())),
        "negative_ranges": int(sum(t.negative_ranges for a in agents for t in a.tracks.values())),
        "world": world.report(),
    }
    rec["members"] = [mem.report() for mem in members]      # each member's node: rates, watchdog, failsafe
    return metrics, rec


REPLAY_WARMUP_STEPS = 10


def replay_estimators(rec, models, modes, n_particles, seed, warmup_steps=REPLAY_WARMUP_STEPS, impl=None,
                      on_progress=None):
    """Offline replay of one flight's sensor records through estimator configurations (pocket VI-A).

    ``modes``: agent modes ("hybrid", "pf", "learned") or {label: SwarmAgent settings}.
    Returns {label: {"t_s": [...], "err_m": [...], "err_yaw_deg": [...]}} with per-step mean
    errors over all (drone, neighbour) pairs and goals (orientation: neighbours only). on_progress: None,
    or called with the flight seconds replayed so far, summed over the configurations.
    """
    net, dqn = models
    out = {}
    kernels = pf_mod.kernels_for(impl)
    if not isinstance(modes, dict):
        modes = {m: {"mode": m} for m in modes}
    done_s = 0.0
    for mode, settings in modes.items():
        rng = np.random.default_rng(seed)
        errs, yerrs, ts = [], [], []
        tracks = {}
        segment = [0] * len(rec["inputs"])
        acfg = dict({"n_particles": n_particles, "warmup_steps": warmup_steps}, **settings)
        agents = [SwarmAgent(dqn, net, NumpyDraws(rng), acfg, kernels=kernels) for _ in rec["inputs"]]
        n_steps = len(rec["inputs"][0])
        for k in range(n_steps):
            e_step, y_step = [], []
            for i, ag in enumerate(agents):
                t_us, inputs = rec["inputs"][i][k]
                truth = rec["truth_rel"][i][k]
                if k in rec["goal_resets"][i]:
                    ag.forget(GOAL_ID)
                    segment[i] += 1
                last_row = {row[0]: n for n, row in enumerate(inputs)}   # each object's last input this step
                latest = {}                               # ... and its estimate after it
                for n, (obj, r, vo, vp, t_r) in enumerate(inputs):
                    latest[obj] = ag.observe(t_r, obj, r, vo, vp, estimator_input=last_row[obj] == n)
                for obj, est in latest.items():
                    if est is None:
                        continue
                    e, ey = estimate_errors(est, truth[obj], obj)
                    e_step.append(e)
                    if obj != GOAL_ID:
                        y_step.append(ey)
                    tracks.setdefault(track_key(i, obj, segment[i]), []).append((t_us * 1e-6, e, ey))
            ts.append(t_us * 1e-6)
            errs.append(float(np.mean(e_step)) if e_step else float("nan"))
            yerrs.append(float(np.mean(y_step)) if y_step else float("nan"))
            if on_progress is not None and k % 10 == 9:
                on_progress(done_s + t_us * 1e-6)
        out[mode] = {"t_s": ts, "err_m": errs, "err_yaw_deg": yerrs, "tracks": tracks}
        done_s += ts[-1] if ts else 0.0
    return out


def estimate_errors(est, truth, obj):
    """(position error m, orientation error deg) of one relative-pose estimate (x_m, y_m, yaw_rad)
    against the truth; the orientation error is nan for a goal (it has none)."""
    e = math.hypot(est[0] - truth[0], est[1] - truth[1])
    if obj == GOAL_ID:
        return e, float("nan")
    return e, abs(math.degrees(math.remainder(est[2] - truth[2], 2 * math.pi)))


def track_key(drone, obj, goal_segment):
    """Name of one estimation track: drone i's estimate of neighbour j, or of its n-th goal."""
    return "%d->goal%d" % (drone, goal_segment) if obj == GOAL_ID else "%d->%s" % (drone, obj)


CONVERGENCE_CURVE_S = (2.0, 4.0, 6.0, 8.0, 10.0, 15.0)   # track_summary: fraction of tracks converged within


def track_summary(tracks, threshold_m=0.5, hold_s=1.0):
    """Per-track convergence and errors after convergence.

    tracks: {name: [(t_s, position_error_m, orientation_error_deg or nan), ...]}. A track has
    converged at the start of the first stretch of hold_s seconds with the error below threshold_m;
    its errors are averaged from there to its end. Returns means over converged tracks
    (orientation: neighbour tracks only), the count of tracks that never converged and the median
    time from a track's first estimate to convergence (over converged tracks, and over all tracks
    with the never-converged ones as infinitely slow: None when half or more never converged) and
    the fraction of all tracks converged within each of CONVERGENCE_CURVE_S seconds.
    """
    post_m, post_deg, conv_s, never = [], [], [], []
    for name, ser in sorted(tracks.items()):
        if not ser:
            continue
        t = [row[0] for row in ser]
        e = [row[1] for row in ser]
        hold = max(1, int(round(hold_s / (t[1] - t[0])))) if len(t) > 1 and t[1] > t[0] else 1
        t_conv = convergence_time_s(t, e, threshold_m, hold_steps=hold)
        if t_conv is None:
            never.append(name)
            continue
        start = next(k for k, tk in enumerate(t) if tk >= t_conv - 1e-9)
        post_m.append(float(np.mean(e[start:])))
        y = [row[2] for row in ser[start:] if row[2] == row[2]]
        if y:
            post_deg.append(float(np.mean(y)))
        conv_s.append(t_conv - t[0])
    n_tracks = len(post_m) + len(never)
    # convergence over every track, the never-converged ones counted as infinitely slow
    all_conv = sorted(conv_s) + [math.inf] * len(never)
    median_all = float(np.median(all_conv)) if all_conv else None
    return {
        "tracks": n_tracks,
        "converged": len(post_m),
        "never_converged": never,
        "mean_position_error_m": float(np.mean(post_m)) if post_m else None,
        "mean_orientation_error_deg": float(np.mean(post_deg)) if post_deg else None,
        "median_convergence_s": float(np.median(conv_s)) if conv_s else None,
        "mean_convergence_s": float(np.mean(conv_s)) if conv_s else None,
        "median_convergence_all_tracks_s": median_all if median_all is not None and median_all < math.inf else None,
        "converged_fraction_within_s": {"%g" % lim: (sum(1 for c in conv_s if c <= lim + 1e-9) / n_tracks if n_tracks else None)
                                        for lim in CONVERGENCE_CURVE_S},
        "threshold_m": threshold_m,
        "hold_s": hold_s,
    }


def convergence_time_s(t_s, err, threshold_m=0.3, hold_steps=10):
    """First time after which the error stays below threshold for hold_steps steps (None if never)."""
    run = 0
    for k, e in enumerate(err):
        if e == e and e < threshold_m:
            run += 1
            if run >= hold_steps:
                return t_s[k - hold_steps + 1]          # where that stretch began
        else:
            run = 0
    return None
