"""Swarm pieces: vectorised sim vs onboard actions, bearing-net runner, DQN float vs int8, agent bad input."""
import json
import math
import os

import numpy as np
import pytest

from harness.training.swarm_policy import bearing_data as bd
from harness.sim.swarm_arena import SwarmBatch, setpoints_after, to_body, to_world
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm import actions as A
from onboard.swarm.agent import GOAL_ID, SwarmAgent
from onboard.swarm.bearing_net import BEARING, BearingNet, angle_to_class, decode, softmax
from onboard.swarm.dqn import DqnFloat, PolicyInputError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(REPO, "models", "swarm")


def test_vectorised_setpoints_match_onboard_actions():
    rng = np.random.default_rng(0)
    cmd = rng.uniform(-0.8, 0.8, (50, 2))
    acts = rng.integers(0, 9, 50)
    vec = setpoints_after(cmd, acts, 0.1, A.ACCEL_MPS2, A.MAX_SPEED_MPS)
    for k in range(50):
        ref = A.update_setpoint(float(cmd[k, 0]), float(cmd[k, 1]), int(acts[k]), 0.1)
        assert np.allclose(vec[k], ref, atol=1e-12)


def test_frames_round_trip_and_speed_cap():
    rng = np.random.default_rng(1)
    yaw = rng.uniform(-3, 3, 10)
    v = rng.normal(size=(10, 2))
    assert np.allclose(to_world(yaw, to_body(yaw, v)), v)
    sim = SwarmBatch(4, 3, rng)
    for _ in range(60):
        sim.step(np.full((4, 3), 0))
    assert np.all(np.hypot(sim.vel[..., 0], sim.vel[..., 1]) <= 1.0 + 1e-9)
    with pytest.raises(ValueError):
        sim.step(np.full((4, 3), 9))


def test_reward_is_eq4():
    sim = SwarmBatch(1, 2, np.random.default_rng(2))
    sim.pos[0] = [[0.0, 0.0], [0.2, 0.0]]
    sim.goal[0] = [[1.0, 0.0], [0.2, 0.0]]
    r = sim.reward()[0]
    c = sim.cfg["critical_distance_m"]
    assert math.isclose(r[0], -1.0 / sim.cfg["arena_m"] + (0.2 - c) / c)
    assert math.isclose(r[1], 0.0 + (0.2 - c) / c)


def test_bearing_data_targets_and_fresh_noise():
    rng = np.random.default_rng(3)
    x, b, y, has = bd.collect(rng, 2, 2, 20, 2.0)
    assert x.shape == (2 * 4, 20, 6) and has.sum() == 4
    assert np.all(x[~has][..., bd.VX_OBJ:] == 0.0)          # goal sequences: object at rest
    n1 = bd.add_noise(x, has, rng, 0.0085569, 0.2476, 0.05)
    n2 = bd.add_noise(x, has, rng, 0.0085569, 0.2476, 0.05)
    assert not np.allclose(n1, n2) and np.all(n1[~has][..., bd.VX_OBJ:] == 0.0)


def test_angle_classes_and_decode():
    assert angle_to_class(-math.pi) == 0 and angle_to_class(math.pi - 1e-9) == 17
    assert angle_to_class(math.radians(5)) == 9
    p = np.zeros(18)
    p[angle_to_class(math.radians(45))] = 1.0
    assert abs(math.degrees(decode(p)[0]) - 50.0) < 1e-9     # bin centre of [40, 60)


def _committed(name):
    path = os.path.join(MODELS, name, "weights.npz")
    if not os.path.exists(path):
        pytest.fail("committed model %s missing (run `make train-swarm`)" % path)
    return path


def test_bearing_runner_step_equals_sequence_run():
    net = BearingNet.load(_committed("bearing"))
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(1, 15, 6))
    seq = net.run(xs)[0]
    h = net.new_state()
    for t in range(15):
        h, pb, po = net.step(h, xs[0, t])
        assert np.allclose(pb, softmax(seq[t, BEARING]), atol=1e-12)
    with pytest.raises(ValueError):
        net.step(h, [0.1, float("nan"), 0, 0, 0, 0])


def test_int8_dqn_through_the_policy_pipeline():
    """The committed full-int8 DQN (export_dqn -> model.tflite + card): LiteRT (reference kernels) and
    the pure int8 kernel agree bit for bit, and both pick the float DQN's action on most states."""
    from onboard.policy import load_policy

    dqn_dir = os.path.join(MODELS, "dqn")
    if not os.path.exists(os.path.join(dqn_dir, "model.tflite")):
        pytest.fail("committed int8 DQN missing (run `python -m harness.training.swarm_policy.export_dqn`)")
    with np.load(os.path.join(dqn_dir, "weights.npz")) as d:
        f = DqnFloat({k: d[k] for k in d.files})
    lite = load_policy(dqn_dir, backend="litert")
    pure = load_policy(dqn_dir, backend="pure")
    rng = np.random.default_rng(5)
    sim = SwarmBatch(8, 3, rng, {"arena_m": 4.0})
    obs = sim.dqn_obs(0.1).reshape(-1, 7)
    for _ in range(3):                                     # states along greedy flights
        sim.step(f.q_values_batch(sim.dqn_obs(0.1)).argmax(-1))
        obs = np.concatenate([obs, sim.dqn_obs(0.1).reshape(-1, 7)])
    acts_lite = [lite.act(list(map(float, o))) for o in obs]
    acts_pure = [pure.act(list(map(float, o))) for o in obs]
    assert acts_lite == acts_pure
    for o in obs[:10]:
        assert lite.run([lite.quantize_input(o)]) == pure.run([pure.quantize_input(o)])
    agree = np.mean([a == f.act(o) for a, o in zip(acts_lite, obs)])
    assert agree >= 0.85, agree
    with pytest.raises(ValueError):
        pure.act([0, 0, 1, 1, 2, 2, float("nan")])
    with pytest.raises(PolicyInputError):
        f.act([0, 0, 1, 1, 2, 2, float("inf")])


def test_agent_survives_bad_input_and_flies_on():
    with np.load(_committed("dqn")) as d:
        dqn = DqnFloat({k: d[k] for k in d.files})
    net = BearingNet.load(_committed("bearing"))
    ag = SwarmAgent(dqn, net, NumpyDraws(np.random.default_rng(6)), {"warmup_steps": 2})
    t = 0
    for k in range(6):
        t += 100000
        ag.observe(t, 1, 1.5, (0.1, 0.0), (0.0, 0.1))
        ag.observe(t, GOAL_ID, 2.0, (0.1, 0.0), (0.0, 0.0))
        sp = ag.decide(t, (0.1, 0.0))
    est_before = ag.tracks[1].est
    t += 100000
    ag.observe(t, 1, float("nan"), (0.1, 0.0), (0.0, 0.1))
    ag.observe(t, 1, float("-inf"), (0.1, 0.0), (0.0, 0.1))
    ag.observe(t, 1, "1.0", (0.1, 0.0), (0.0, 0.1))
    assert ag.tracks[1].rejected == 3 and ag.tracks[1].est == est_before
    # a finite negative range (DS-TWR noise at contact distance) is a measurement of ~0 m, not a fault
    ag.observe(t + 50000, 1, -0.2, (0.1, 0.0), (0.0, 0.1))
    assert ag.tracks[1].rejected == 3 and ag.tracks[1].negative_ranges == 1 and ag.tracks[1].range_m == 0.0
    sp = ag.decide(t, (0.1, 0.0))
    assert all(math.isfinite(v) for v in sp) and math.hypot(*sp) <= 1.0 + 1e-12


@pytest.mark.parametrize("config,needle", [
    ({"mode": "kalman"}, "mode must be one of"),
    ({"guard_distance_m": -0.4}, "guard_distance_m must be a number >= 0"),
    ({"range_smoothing_s": 0.0}, "range_smoothing_s must be a number > 0"),
    ({"min_confidence": float("nan")}, "min_confidence must be finite"),
    ({"warmup_steps": 2.5}, "warmup_steps must be an integer >= 0"),
    ({"n_particles": 1}, "pf_config: ParticleFilter setting n_particles must be an integer >= 2"),
    ({"pf_config": {"refresh_mode": "always"}}, "pf_config: ParticleFilter setting refresh_mode must be one of"),
    ({"goal_pf_config": {"vel_noise_mps": -0.05}}, "goal_pf_config: ParticleFilter setting vel_noise_mps must be a number >= 0"),
    ({"guard_distance": 0.4}, "unknown SwarmAgent setting"),
])
def test_agent_refuses_a_bad_setting_before_it_flies(config, needle):
    with pytest.raises(ValueError) as exc:
        SwarmAgent(None, None, NumpyDraws(np.random.default_rng(1)), config)
    assert needle in str(exc.value)


def test_int8_gru_estimator_through_the_policy_pipeline():
    """The committed GRU exported to int8 (FULLY_CONNECTED, ADD, MUL, LOGISTIC, TANH; state as input 1 /
    output 1): LiteRT and the pure int8 kernel step identically (state fed back as floats), the int8
    outputs follow the float GRU on a DQN-flown noisy sequence, and its card's held-out metrics say
    int8 costs little (measured: bearing 25.7 vs 25.0 deg, orientation 34.0 vs 31.8 deg float)."""
    from onboard.swarm.bearing_net import BearingPolicy
    from onboard.swarm.dqn import DqnFloat

    model_dir = os.path.join(MODELS, "bearing")
    if not os.path.exists(os.path.join(model_dir, "model.tflite")):
        pytest.fail("committed int8 estimator missing (run `python -m harness.training.swarm_policy.export_bearing`)")
    net = BearingNet.load(os.path.join(model_dir, "weights.npz"))
    assert net.cell == "gru"
    lite = BearingPolicy.load(model_dir, backend="litert")
    pure = BearingPolicy.load(model_dir, backend="pure")
    assert lite.split_state and lite.hidden == net.hidden
    q_fn = DqnFloat.load(_committed("dqn")).q_values_batch
    rng = np.random.default_rng(7)
    x, b, y, has = bd.collect(rng, 1, 2, 30, 2.0, q_fn=q_fn)
    xs = bd.add_noise(x, has, rng, 0.0085569, 0.2476, 0.05)[0]
    hl, hp, hf = lite.new_state(), pure.new_state(), net.new_state()
    for t in range(len(xs)):
        hl, pbl, pol = lite.step(hl, xs[t])
        hp, pbp, pop = pure.step(hp, xs[t])
        hf, pbf, pof = net.step(hf, xs[t])
        assert np.array_equal(hl, hp) and np.array_equal(pbl, pbp) and np.array_equal(pol, pop)
    assert np.abs(hl - hf).max() < 0.15                      # state within a few 1/128 steps after 30 steps
    assert abs(math.remainder(decode(pbl)[0] - decode(pbf)[0], 2 * math.pi)) < math.radians(15)
    with open(os.path.join(model_dir, "card.json")) as fh:
        metrics = json.load(fh)["metrics"]
    assert metrics["pure_equals_litert_40_steps"]
    assert metrics["int8_bearing_mae_deg"] <= metrics["float_bearing_mae_deg"] + 3.0, metrics
    assert metrics["int8_orientation_mae_deg"] <= metrics["float_orientation_mae_deg"] + 5.0, metrics
    with pytest.raises(ValueError):
        lite.step(hl, [0.1, float("nan"), 0, 0, 0, 0])


def test_elman_cell_still_exports_to_fully_connected_and_tanh():
    """The Elman export (FULLY_CONNECTED + TANH only, for kernels without MUL) on a small random net:
    LiteRT == pure int8 kernel, and each int8 step follows the float step from the same state."""
    from harness.training.swarm_policy.export_bearing import build
    from onboard.policy.policy import make_policy
    from onboard.swarm.bearing_net import BearingPolicy

    rng = np.random.default_rng(3)
    H = 8
    net = BearingNet({"w_ih": rng.normal(0, 0.5, (H, 6)), "w_hh": rng.normal(0, 0.3, (H, H)),
                      "b_ih": rng.normal(0, 0.1, H), "b_hh": np.zeros(H), "w_out": rng.normal(0, 0.5, (36, H)),
                      "b_out": np.zeros(36), "in_scale": np.array([10.0, 0.5, 2.0, 2.0, 2.0, 2.0])})
    x, b, y, has = bd.collect(rng, 2, 2, 40, 2.0)
    xs = bd.add_noise(x, has, rng, 0.0085569, 0.2476, 0.05)
    data, _ = build(net, xs)
    lite, pure = (BearingPolicy(make_policy(data, None, k)) for k in ("litert", "pure"))
    assert not lite.split_state and lite.hidden == H
    hl, hp = lite.new_state(), pure.new_state()
    for t in range(20):
        hf, _, _ = net.step(hl, xs[0, t])            # the float step from the same state
        x_model = xs[0, t] * net.w["in_scale"]       # no card here: the model takes normalised inputs
        hl, ll = lite.step_logits(hl, x_model)
        hp, lp = pure.step_logits(hp, x_model)
        assert np.array_equal(hl, hp) and np.array_equal(ll, lp)
        assert np.abs(hl - hf).max() < 0.05, t


class _Always:
    """A stand-in policy that always picks one action (the guard test needs a DQN that would collide)."""

    def __init__(self, action):
        self.action = action

    def act(self, obs):
        return self.action


def _agent_with(neighbour_est, neighbour_range, guard_m, action=0):
    net = BearingNet.load(_committed("bearing"))
    ag = SwarmAgent(_Always(action), net, NumpyDraws(np.random.default_rng(8)),
                    {"guard_distance_m": guard_m, "mode": "pf"})
    g = ag._track(GOAL_ID)
    g.est, g.range_m = (2.0, 0.0, 0.0), 2.0
    nb = ag._track(1)
    nb.est, nb.range_m = neighbour_est, neighbour_range
    return ag


def test_collision_guard_backs_off_from_a_close_neighbour():
    # DQN keeps accelerating forward (action 0) towards a neighbour 0.3 m ahead
    ag = _agent_with((0.3, 0.0, 0.0), 0.3, guard_m=0.4)
    sp = ag.decide(100000, (0.5, 0.0))
    assert sp == pytest.approx((-0.3, 0.0)) and ag.guard_overrides == 1
    # the measured range alone fires it too (estimate far off), direction still from the estimate
    ag = _agent_with((0.0, 1.5, 0.0), 0.25, guard_m=0.4)
    sp = ag.decide(100000, (0.0, 0.0))
    assert sp == pytest.approx((0.0, -0.3)) and ag.guard_overrides == 1
    # off (the paper's configuration): the DQN's action stands
    ag = _agent_with((0.3, 0.0, 0.0), 0.3, guard_m=0.0)
    sp = ag.decide(100000, (0.5, 0.0))
    assert sp[0] > 0.0 and ag.guard_overrides == 0


def test_guard_hovers_while_the_estimate_disagrees_with_the_ranges_then_backs_off():
    """guard_residual_m: a neighbour estimate 0.3 m ahead whose ranges say otherwise (filter residual
    -0.3 m) is not backed off from - the drone hovers - for at most guard_hold_max_s; an estimate the
    ranges confirm is backed off from at once."""
    from onboard.swarm.agent import GUARD, GUARD_HOLD
    ag = _agent_with((0.3, 0.0, 0.0), 0.3, guard_m=0.4)
    ag.cfg.update(guard_residual_m=0.15, guard_hold_max_s=0.25)
    ag.tracks[1].pf.residual_lp_m = -0.3
    acts = []
    for k in range(1, 6):
        sp = ag.decide(k * 100000, (0.5, 0.0))
        acts.append((ag.last_action, sp))
    # three steps of hover (0.0, 0.1, 0.2 s into the hold < 0.25 s), then backing off
    assert [a for a, _ in acts] == [GUARD_HOLD] * 3 + [GUARD] * 2
    assert acts[0][1] == (0.0, 0.0) and acts[-1][1] == pytest.approx((-0.3, 0.0))
    assert ag.guard_holds == 3 and ag.guard_overrides == 5
    # ranges agree (residual within 0.15 m): backs off straight away
    ag = _agent_with((0.3, 0.0, 0.0), 0.3, guard_m=0.4)
    ag.cfg.update(guard_residual_m=0.15)
    ag.tracks[1].pf.residual_lp_m = 0.1
    assert ag.decide(100000, (0.5, 0.0)) == pytest.approx((-0.3, 0.0)) and ag.last_action == GUARD
    # a new run of holds may start once the guard released
    ag = _agent_with((0.3, 0.0, 0.0), 0.3, guard_m=0.4)
    ag.cfg.update(guard_residual_m=0.15, guard_hold_max_s=0.05)
    ag.tracks[1].pf.residual_lp_m = -0.3
    ag.decide(100000, (0.0, 0.0))
    ag.decide(200000, (0.0, 0.0))
    assert ag.last_action == GUARD
    ag.tracks[1].est, ag.tracks[1].range_m = (1.5, 0.0, 0.0), 1.5            # released
    ag.decide(300000, (0.0, 0.0))
    ag.tracks[1].est, ag.tracks[1].range_m = (0.3, 0.0, 0.0), 0.3
    ag.decide(400000, (0.0, 0.0))
    assert ag.last_action == GUARD_HOLD


def test_range_rate_brake_hovers_on_a_fast_closing_neighbour_whatever_its_estimate():
    """brake_ttc_s: ranges alone (least-squares rate over brake_window_s) that close at 1.3 m/s from 1.6 m
    say contact within 1 s at about 1.3 m - the drone hovers although its estimate puts the neighbour
    2 m away to the side; a neighbour keeping its range, or one closing slowly, does not brake."""
    from onboard.swarm.agent import BRAKE
    net = BearingNet.load(_committed("bearing"))

    def fly(rate_mps, brake_ttc_s=1.0):
        ag = SwarmAgent(_Always(0), net, NumpyDraws(np.random.default_rng(2)),
                        {"mode": "pf", "n_particles": 200, "brake_ttc_s": brake_ttc_s})
        acts = []
        for k in range(12):                                   # a range and a decision every 0.1 s
            t_us = k * 100000
            ag.observe(t_us, 1, 1.6 + rate_mps * k * 0.1, (0.3, 0.0), (0.0, 0.0))
            ag.observe(t_us, GOAL_ID, 3.0, (0.3, 0.0), (0.0, 0.0))
            ag.tracks[1].est = (0.0, 2.0, 0.0)                 # a wrong estimate: far to the side
            ag.tracks[GOAL_ID].est = (3.0, 0.0, 0.0)
            ag.decide(t_us, (0.3, 0.0))
            acts.append(ag.last_action)
        return ag, acts

    ag, acts = fly(-1.3)
    # six samples (0.5 s) needed; at 0.5 s the fitted range is 0.95 m < 1.3 m/s * 1 s
    assert acts[:5] == [0] * 5 and acts[5:] == [BRAKE] * 7
    assert ag.brakes == 7 and ag.setpoint_body_mps == (0.0, 0.0)
    assert fly(0.0)[0].brakes == 0                              # range kept
    assert fly(-0.3)[0].brakes == 0                             # closing slower than brake_min_closing_mps
    assert fly(-1.3, brake_ttc_s=0.0)[0].brakes == 0            # off
    # only the last brake_window_s of ranges is kept
    assert len(ag.tracks[1].recent_ranges) == 11 and GOAL_ID not in [k for k, t in ag.tracks.items()
                                                                     if t.recent_ranges]


def test_forget_starts_a_track_afresh():
    ag = _agent_with((1.0, 0.0, 0.0), 1.0, guard_m=0.0)
    ag.forget(GOAL_ID)
    assert GOAL_ID not in ag.tracks
    sp = ag.decide(100000, (0.0, 0.0))            # no goal known: slow down, hold still
    assert sp == (0.0, 0.0)


def test_collision_guard_horizon_sees_a_closing_neighbour():
    """With a horizon the guard fires on the filter's predicted closest approach: a neighbour 1 m ahead
    (same heading) flying at us at 1 m/s while we fly at it at 0.5 m/s."""
    for horizon, fires in ((0.0, False), (1.0, True)):
        ag = _agent_with((1.0, 0.0, 0.0), 1.0, guard_m=0.4)
        ag.cfg["guard_horizon_s"] = horizon
        ag.tracks[1].v_obj = (-1.0, 0.0)
        ag.decide(100000, (0.5, 0.0))
        assert (ag.guard_overrides == 1) == fires


def test_track_summary_averages_each_track_after_it_converged():
    from harness.scenarios.swarm.flight import track_summary
    t = [0.1 * k for k in range(60)]
    # converges at 2.0 s (error 0.2 from there), never-converging track, goal track without orientation
    a = [(tk, 2.0 if tk < 2.0 - 1e-9 else 0.2, 90.0 if tk < 2.0 - 1e-9 else 10.0) for tk in t]
    b = [(tk, 1.5, 45.0) for tk in t]
    g = [(tk, 0.4 if k % 2 else 0.1, float("nan")) for k, tk in enumerate(t)]
    s = track_summary({"0->1": a, "1->0": b, "0->goal0": g}, threshold_m=0.5, hold_s=1.0)
    assert s["tracks"] == 3 and s["converged"] == 2 and s["never_converged"] == ["1->0"]
    assert abs(s["mean_position_error_m"] - (0.2 + 0.25) / 2) < 1e-9
    assert abs(s["mean_orientation_error_deg"] - 10.0) < 1e-9         # goal tracks carry no orientation
    assert abs(s["median_convergence_s"] - 1.0) < 1e-9                # 2.0 s and 0.0 s
    assert s["median_convergence_all_tracks_s"] == pytest.approx(2.0)   # 0.0, 2.0, never
    assert s["converged_fraction_within_s"]["2"] == pytest.approx(2 / 3)
    assert s["converged_fraction_within_s"]["15"] == pytest.approx(2 / 3)
    assert track_summary({"0->1": a, "1->0": b, "2->0": b})["median_convergence_all_tracks_s"] is None
    assert track_summary({})["mean_position_error_m"] is None


class _Recorder(_Always):
    """A stand-in policy that records the observations it is shown."""

    def __init__(self, action):
        super().__init__(action)
        self.seen = []

    def act(self, obs):
        self.seen.append(obs)
        return self.action


def test_detour_rotates_the_goal_away_from_a_parked_neighbour_when_no_progress():
    # goal 2 m ahead, neighbour parked 0.7 m ahead slightly to the right (+y): the goal estimate never
    # gets closer, so after the 10 s window the DQN is shown the goal rotated 60 deg to the left (-y)
    policy = _Recorder(8)
    net = BearingNet.load(_committed("bearing"))
    ag = SwarmAgent(policy, net, NumpyDraws(np.random.default_rng(8)),
                    {"mode": "pf", "stuck_window_s": 10.0, "detour_s": 4.0, "detour_angle_deg": 60.0})
    g = ag._track(GOAL_ID)
    g.est, g.range_m = (2.0, 0.0, 0.0), 2.0
    nb = ag._track(1)
    nb.est, nb.range_m = (0.7, 0.05, 0.0), 0.7
    period_us = 100000
    for k in range(1, 101):                          # 10 s without progress: no detour yet
        ag.decide(k * period_us, (0.0, 0.0))
    assert ag.detours == 0 and policy.seen[-1][2:4] == (2.0, 0.0)
    ag.decide(102 * period_us, (0.0, 0.0))           # window exceeded: detour starts
    assert ag.detours == 1
    gx, gy = policy.seen[-1][2:4]
    assert gx == pytest.approx(1.0) and gy == pytest.approx(-2.0 * math.sin(math.radians(60.0)))
    for k in range(103, 144):                        # held for detour_s (until 14.2 s), then the true goal
        ag.decide(k * period_us, (0.0, 0.0))
    assert ag.detours == 1 and policy.seen[-1][2:4] == (2.0, 0.0)
    # progress resets the window: a goal that keeps getting closer never triggers a detour
    ag2 = SwarmAgent(_Recorder(8), net, NumpyDraws(np.random.default_rng(8)), {"mode": "pf", "stuck_window_s": 10.0})
    g2 = ag2._track(GOAL_ID)
    g2.range_m = 4.0
    for k in range(1, 301):
        g2.est = (4.0 - 0.01 * k, 0.0, 0.0)
        ag2.decide(k * period_us, (0.1, 0.0))
    assert ag2.detours == 0
    # a new goal (forget) restarts the progress bookkeeping
    ag.forget(GOAL_ID)
    assert ag._progress_us is None and ag._detour_until_us is None


def test_final_approach_replaces_the_dqn_near_the_goal_but_not_the_guard():
    from onboard.swarm.agent import APPROACH
    net = BearingNet.load(_committed("bearing"))

    def agent(goal_est, neighbour_est, neighbour_range, guard_m=0.4):
        ag = SwarmAgent(_Always(0), net, NumpyDraws(np.random.default_rng(8)),
                        {"mode": "pf", "approach_radius_m": 0.5, "guard_distance_m": guard_m})
        g = ag._track(GOAL_ID)
        g.est, g.range_m = goal_est, math.hypot(goal_est[0], goal_est[1])
        nb = ag._track(1)
        nb.est, nb.range_m = neighbour_est, neighbour_range
        return ag

    ag = agent((0.2, 0.1, 0.0), (2.0, 0.0, 0.0), 2.0)          # P control: 1 /s * 0.22 m, under the cap
    assert ag.decide(100000, (0.5, 0.0)) == pytest.approx((0.2, 0.1)) and ag.last_action == APPROACH
    ag = agent((0.0, -0.45, 0.0), (2.0, 0.0, 0.0), 2.0)        # capped at 0.3 m/s towards the goal
    assert ag.decide(100000, (0.0, 0.0)) == pytest.approx((0.0, -0.3)) and ag.approach_steps == 1
    ag = agent((1.5, 0.0, 0.0), (2.0, 0.0, 0.0), 2.0)          # farther out: the DQN's action (0) stands
    sp = ag.decide(100000, (0.5, 0.0))
    assert ag.last_action == 0 and ag.approach_steps == 0 and sp[0] > 0.0
    ag = agent((0.3, 0.0, 0.0), (0.3, 0.0, 0.0), 0.3)          # neighbour inside the guard: guard wins
    assert ag.decide(100000, (0.0, 0.0)) == pytest.approx((-0.3, 0.0)) and ag.guard_overrides == 1


def test_a_collapsed_neighbour_estimate_is_shown_at_the_measured_range():
    # ring posterior at take-off: weighted mean 0.05 m ahead, measured range 0.6 m
    net = BearingNet.load(_committed("bearing"))
    for fraction, guard_fires, shown in ((0.5, False, (0.6, 0.0)), (0.0, True, (0.05, 0.0))):
        policy = _Recorder(8)
        ag = SwarmAgent(policy, net, NumpyDraws(np.random.default_rng(8)),
                        {"mode": "pf", "guard_distance_m": 0.4, "collapsed_estimate_fraction": fraction})
        g = ag._track(GOAL_ID)
        g.est, g.range_m = (2.0, 0.0, 0.0), 2.0
        nb = ag._track(1)
        nb.est, nb.range_m = (0.05, 0.0, 0.0), 0.6
        ag.decide(100000, (0.0, 0.0))
        assert (ag.guard_overrides == 1) == guard_fires
        assert policy.seen[-1][4:6] == pytest.approx(shown)
    # a resolved estimate (longer than half the range) is used as it is
    policy = _Recorder(8)
    ag = SwarmAgent(policy, net, NumpyDraws(np.random.default_rng(8)), {"mode": "pf", "collapsed_estimate_fraction": 0.5})
    g = ag._track(GOAL_ID)
    g.est, g.range_m = (2.0, 0.0, 0.0), 2.0
    nb = ag._track(1)
    nb.est, nb.range_m = (0.0, 0.5, 0.0), 0.9
    ag.decide(100000, (0.0, 0.0))
    assert policy.seen[-1][4:6] == pytest.approx((0.0, 0.5))


def test_a_collapsed_goal_estimate_is_shown_at_the_smoothed_goal_range():
    """A drone hovering 0.45 m from its goal on a ring posterior (estimate 0.05 m ahead) is sent along the
    estimate's direction at the smoothed range; near the goal (folded noise, range ~0.25 m) it is not."""
    net = BearingNet.load(_committed("bearing"))
    for fraction, range_lp, shown in ((0.5, 0.45, (0.45, 0.0)), (0.0, 0.45, (0.05, 0.0)), (0.5, 0.25, (0.05, 0.0))):
        policy = _Recorder(8)
        ag = SwarmAgent(policy, net, NumpyDraws(np.random.default_rng(8)),
                        {"mode": "pf", "collapsed_goal_fraction": fraction, "approach_radius_m": 0.0})
        g = ag._track(GOAL_ID)
        g.est, g.range_m, g.range_lp_m = (0.05, 0.0, 0.0), 0.3, range_lp
        ag.decide(100000, (0.0, 0.0))
        assert policy.seen[-1][2:4] == pytest.approx(shown)
        assert ag.collapsed_goal_steps == int(shown[0] != 0.05)
    # with the final approach on, the drone now flies (0.3 m/s cap) instead of hovering on the estimate
    ag = SwarmAgent(_Always(8), net, NumpyDraws(np.random.default_rng(8)),
                    {"mode": "pf", "collapsed_goal_fraction": 0.5, "approach_radius_m": 0.5})
    g = ag._track(GOAL_ID)
    g.est, g.range_m, g.range_lp_m = (0.0, -0.05, 0.0), 0.3, 0.45
    assert ag.decide(100000, (0.0, 0.0)) == pytest.approx((0.0, -0.3))


def test_smoothed_range_is_a_first_order_low_pass():
    net = BearingNet.load(_committed("bearing"))
    ag = SwarmAgent(_Always(8), net, NumpyDraws(np.random.default_rng(8)), {"mode": "pf", "range_smoothing_s": 1.0})
    ag.observe(0, GOAL_ID, 1.0, (0.0, 0.0), (0.0, 0.0))
    assert ag.tracks[GOAL_ID].range_lp_m == 1.0
    ag.observe(100000, GOAL_ID, 2.1, (0.0, 0.0), (0.0, 0.0))      # alpha = 0.1 / 1.1
    assert ag.tracks[GOAL_ID].range_lp_m == pytest.approx(1.0 + 1.1 * 0.1 / 1.1)
    ag.observe(200000, GOAL_ID, None, (0.0, 0.0), (0.0, 0.0))     # a dropout leaves it alone
    assert ag.tracks[GOAL_ID].range_lp_m == pytest.approx(1.1)


def test_a_dropout_propagates_the_neighbour_at_its_last_reported_velocity():
    """No ranging message this period means no peer velocity either: the filter must move the neighbour at
    its last reported velocity, not as if it stood still (the episode passes (0, 0) on a dropout)."""
    from onboard.estimators import particle_filter as pf_mod
    net = BearingNet.load(_committed("bearing"))
    v_peer = (0.8, -0.3)
    ests = []
    for passed in ((0.0, 0.0), None, v_peer):
        ag = SwarmAgent(_Always(8), net, NumpyDraws(np.random.default_rng(4)), {"mode": "pf", "n_particles": 200})
        ag.observe(0, 1, 1.0, (0.0, 0.0), v_peer)                 # starts the filter (ring at 1 m)
        ag.observe(100000, 1, 1.05, (0.1, 0.0), v_peer)
        ag.observe(200000, 1, None, (0.1, 0.0), passed)            # dropout
        ests.append(ag.tracks[1].est)
    assert ests[0] == ests[1] == ests[2]
    # ... and it is the filter stepped with the held velocity on the same draws
    draws = NumpyDraws(np.random.default_rng(4))
    pf = pf_mod.ParticleFilter({"n_particles": 200})
    pf.initialize(0, 1.0, draws)
    pf.step(100000, (0.1, 0.0), v_peer, 1.05, draws)
    held = pf.step(200000, (0.1, 0.0), v_peer, None, draws)
    pf0 = pf_mod.ParticleFilter({"n_particles": 200})
    draws0 = NumpyDraws(np.random.default_rng(4))
    pf0.initialize(0, 1.0, draws0)
    pf0.step(100000, (0.1, 0.0), v_peer, 1.05, draws0)
    still = pf0.step(200000, (0.1, 0.0), (0.0, 0.0), None, draws0)
    assert ests[0] == pytest.approx(held) and ests[0] != pytest.approx(still)


class _CountingNet:
    """The committed estimator, every input it steps on appended to ``calls``."""

    def __init__(self, net, calls):
        self.net, self.calls = net, calls

    def new_state(self):
        return self.net.new_state()

    def step_probs(self, h, x):
        self.calls.append(x)
        return self.net.step_probs(h, x)


def test_pure_filter_mode_skips_the_learned_estimator_and_still_rejects_bad_input():
    net = BearingNet.load(_committed("bearing"))
    calls = []
    counting = _CountingNet(net, calls)
    for mode, steps in (("pf", 0), ("hybrid", 3)):
        calls.clear()
        ag = SwarmAgent(_Always(8), counting, NumpyDraws(np.random.default_rng(3)), {"mode": mode})
        for k in range(3):
            ag.observe(k * 100000, 1, 1.0, (0.1, 0.0), (0.0, 0.1))
        assert len(calls) == steps
    ag = SwarmAgent(_Always(8), counting, NumpyDraws(np.random.default_rng(3)), {"mode": "pf"})
    ag.observe(0, 1, 1.0, (0.1, 0.0), (0.0, 0.1))
    t = ag.tracks[1]
    before = (t.range_m, t.range_lp_m, t.v_obj, t.est)
    ag.observe(100000, 1, 1.3, (0.1, float("nan")), (0.0, 0.1))
    ag.observe(100000, 1, 1.3, (0.1, 0.0), (float("inf"), 0.1))
    assert t.rejected == 2 and (t.range_m, t.range_lp_m, t.v_obj, t.est) == before


def test_every_range_steps_the_filter_but_the_estimator_keeps_its_trained_rate():
    """A 2-drone token ring delivers ~7 ranges per pair and policy period: each one updates the filter,
    while the learned estimator (trained on one input per 0.1 s period) takes only the range marked as the
    period's input, with dt measured from its own previous input, and the 10 % refresh follows its fresh
    estimates only."""
    net = BearingNet.load(_committed("bearing"))
    calls = []
    counting = _CountingNet(net, calls)
    ag = SwarmAgent(_Always(8), counting, NumpyDraws(np.random.default_rng(5)),
                    {"mode": "hybrid", "n_particles": 200, "warmup_steps": 2})
    proposals = []
    real_proposal = ag._proposal
    ag._proposal = lambda t: proposals.append(t) or real_proposal(t)
    times_us = [5000 + k * 15000 for k in range(40)]              # a range every 15 ms for 0.6 s
    last_of_period = [k == len(times_us) - 1 or times_us[k + 1] // 100000 != t // 100000
                      for k, t in enumerate(times_us)]
    ranges = [1.0 + 0.1 * t * 1e-6 for t in times_us]
    for t_us, r, last in zip(times_us, ranges, last_of_period):
        ag.observe(t_us, 1, r, (0.1, 0.0), (0.0, 0.1), estimator_input=last)
    marked = [t for t, last in zip(times_us, last_of_period) if last]
    assert len(calls) == len(marked) == 6
    assert [x[0] for x in calls] == pytest.approx([0.0] + [(b - a) * 1e-6 for a, b in zip(marked, marked[1:])])
    assert [x[1] for x in calls] == [r for r, last in zip(ranges, last_of_period) if last]
    assert ag.tracks[1].net_steps == len(calls) and ag.tracks[1].steps == len(times_us)
    assert ag.tracks[1].range_m == ranges[-1]
    # refreshes: one per estimator step after the one that started the filter (the third: warmup_steps 2)
    assert len(proposals) == len(calls) - 3
    # the filter took every range: fed only the estimator's ranges, it ends elsewhere
    ag1 = SwarmAgent(_Always(8), net, NumpyDraws(np.random.default_rng(5)), {"mode": "pf", "n_particles": 200})
    ag2 = SwarmAgent(_Always(8), net, NumpyDraws(np.random.default_rng(5)), {"mode": "pf", "n_particles": 200})
    for t_us, r, last in zip(times_us, ranges, last_of_period):
        ag1.observe(t_us, 1, r, (0.1, 0.0), (0.0, 0.1), estimator_input=last)
        if last:
            ag2.observe(t_us, 1, r, (0.1, 0.0), (0.0, 0.1))
    assert ag1.tracks[1].pf.steps == len(times_us) - 1 and ag2.tracks[1].pf.steps == len(marked) - 1
    assert ag1.tracks[1].est != pytest.approx(ag2.tracks[1].est)


def test_committed_bearing_estimator_quality_on_fresh_dqn_flown_data():
    """The committed float estimator on data it was not trained on (seed 99: 36 arenas of 4 m x 3 drones
    flown by the committed DQN, 20 s, fresh UWB / velocity noise), steps with >= 10 predecessors.
    Measured: bearing 22.5 deg, orientation 21.6 deg mean absolute error, 78.5 % of bearings within one
    20-degree bin (the previous GRU(128), trained on a quarter of the data: 28.3 / 29.8 deg, 70 %; the
    GRU(64) before it, on a goal walker: 35.2 / 38.4 deg). Its int8 export, as the flights run it
    (LiteRT): 22.8 / 22.7 deg, 77.9 %."""
    from harness.training.swarm_policy.train_bearing import evaluate
    from onboard.swarm.bearing_net import BearingPolicy
    from onboard.swarm.dqn import DqnFloat
    q_fn = DqnFloat.load(_committed("dqn")).q_values_batch
    x, b, y, has = bd.collect(np.random.default_rng(99), 12, 3, 200, 4.0, q_fn=q_fn)
    with np.load(_committed("bearing")) as d:
        weights = {k: d[k] for k in d.files}
    int8 = BearingPolicy.load(os.path.join(MODELS, "bearing"), backend="litert")
    for net in (None, int8):
        ev = evaluate(weights, x, b, y, has, np.random.default_rng(5), 10, net=net)
        assert ev["bearing_mae_deg"] <= 25.0 and ev["orientation_mae_deg"] <= 25.0, (net, ev)
        assert ev["bearing_acc_pm1"] >= 0.75, (net, ev)


def test_step_probs_gives_steps_numbers_in_one_softmax_and_decode():
    """The agent steps the estimator through step_probs (both softmaxes, then both decodes, in one call):
    the same probabilities and angles, bit for bit, as step's two softmaxes and two decodes, on the float
    net and on the int8 one through LiteRT."""
    from onboard.swarm.bearing_net import BearingPolicy
    rng = np.random.default_rng(11)
    for net in (BearingNet.load(_committed("bearing")), BearingPolicy.load(os.path.dirname(_committed("bearing")))):
        h1 = h2 = net.new_state()
        for _ in range(200):
            x = rng.normal(0.0, 1.0, 6) * (0.1, 2.0, 0.5, 0.5, 0.5, 0.5) + (0.1, 2.0, 0, 0, 0, 0)
            h1, pb, po = net.step(h1, x)
            h2, probs = net.step_probs(h2, x)
            assert np.array_equal(h1, h2) and np.array_equal(probs[0], pb) and np.array_equal(probs[1], po)
            angles, lengths = decode(probs)
            assert (angles[0], lengths[0]) == tuple(decode(pb)) and (angles[1], lengths[1]) == tuple(decode(po))


def test_the_int8_state_carried_as_codes_gives_the_float_paths_numbers():
    """BearingPolicy on LiteRT carries the GRU's state as its int8 codes (StateArray) instead of dequantising
    and quantising it again each step: the states, logits and the policy's counters equal those of the
    float-carried path bit for bit, over in-range and saturating inputs and states handed back as plain
    arrays; the carried state is read-only and what is derived from it has no codes."""
    import pickle
    from onboard.swarm.bearing_net import BearingPolicy, StateArray
    model_dir = os.path.dirname(_committed("bearing"))
    fast, slow = BearingPolicy.load(model_dir), BearingPolicy.load(model_dir)
    assert fast._carry_codes
    slow._carry_codes = False                              # the path before: predict on float states
    rng = np.random.default_rng(21)
    hf, hs = fast.new_state(), slow.new_state()
    for step in range(300):
        x = rng.normal(0.0, 1.0, 6) * (0.1, 2.0, 0.5, 0.5, 0.5, 0.5) + (0.1, 2.0, 0, 0, 0, 0)
        if step % 50 == 7:
            x[1] = 80.0                                      # a range far outside the input's int8 range
        if step % 60 == 30:
            hf = np.array(hf)                                # a plain float copy: quantised, as before
        hf, lf = fast.step_logits(hf, x)
        hs, ls = slow.step_logits(hs, x)
        assert type(hf) is StateArray and hf.codes is not None
        assert np.array_equal(hf, hs) and np.array_equal(lf, ls), step
    assert fast.policy.saturated_inputs == slow.policy.saturated_inputs > 0
    assert fast.policy.inferences == slow.policy.inferences == 300
    with pytest.raises(ValueError):
        hf[0] = 0.5                                          # read-only: the codes cannot go stale
    assert (hf * 1.0).codes is None and hf[1:].codes is None and pickle.loads(pickle.dumps(hf)).codes is None
    with pytest.raises(ValueError):
        fast.step_logits(hf, [0.1, float("nan"), 0, 0, 0, 0])
    # codes on another grid (another model's state) are not taken: the values are quantised
    foreign = np.array(hf).view(StateArray)
    foreign.codes, foreign.grid = np.zeros(fast.hidden, dtype=np.int8), (1.0, 0)
    assert np.array_equal(fast.step_logits(foreign, x)[0], slow.step_logits(np.array(hf), x)[0])
    # the pure int8 kernel has no raw-code entry: it keeps the float-carried path
    assert not BearingPolicy.load(model_dir, backend="pure")._carry_codes
