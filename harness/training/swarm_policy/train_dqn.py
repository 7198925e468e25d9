"""Train the shared swarm DQN (uwb-pocket-drones IV-C, V-D..G) in the vectorised 2-D simulator.

7 inputs (vx, vy, dx, dy, ox, oy, dt) -> 100 -> 100 -> 9 Q-values, ReLU; reward pocket eq. 4
with critical distance c; epsilon-greedy 0.8 -> 0.1; minibatches of 30 from a replay buffer;
one policy shared by every drone (pocket V-E), trained with 2 and 4 drones per arena. Double
DQN with a target network and Huber loss for stability; ``--hysteretic BETA`` switches to
hysteretic Q-learning (negative TD errors scaled by BETA, pocket V-E / [11]) for comparison.
The weights with the best greedy evaluation score are kept (pocket V-F).

    .venv/bin/python -m harness.training.swarm_policy.train_dqn --help

Writes models/swarm/dqn/weights.npz and train_card.json, each whole (export_dqn.py then writes model.tflite +
card.json). Needs PyTorch (requirements-train.txt). Out-of-range numbers and an output folder that cannot be
created are refused before training (one line, exit status 2).
"""
import argparse
import os
import sys
import time

import numpy as np

from harness.config import (ConfigError, argument, non_negative_float, non_negative_int, positive_float, positive_int,
                            within)
from harness.report.run_report import report_folder
from harness.sim.swarm_arena import SwarmBatch
from harness.training.npz_files import save_weights
from onboard.swarm.actions import N_ACTIONS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_DIR = os.path.join(REPO, "models", "swarm", "dqn")
N_INPUTS = 7
HIDDEN = 100


def make_net(torch):
    nn = torch.nn
    return nn.Sequential(nn.Linear(N_INPUTS, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, N_ACTIONS))


def weights_of(net):
    """float32 arrays w0 [7, 100], b0, w1 [100, 100], b1, w2 [100, 9], b2 (x @ w + b)."""
    layers = [m for m in net if hasattr(m, "weight")]
    out = {}
    for i, layer in enumerate(layers):
        out["w%d" % i] = layer.weight.detach().numpy().T.astype(np.float32).copy()
        out["b%d" % i] = layer.bias.detach().numpy().astype(np.float32).copy()
    return out


def greedy_q(weights, obs):
    """NumPy forward pass (the onboard runner's float path) on obs [..., 7]."""
    h = np.maximum(obs @ weights["w0"] + weights["b0"], 0.0)
    h = np.maximum(h @ weights["w1"] + weights["b1"], 0.0)
    return h @ weights["w2"] + weights["b2"]


def evaluate(weights, seed, episodes=24, steps=200, est_noise_m=0.1, sim_config=None):
    """Greedy fixed-goal episodes with 2, 3, 4 drones: success rate, min separation, mean reward."""
    rng = np.random.default_rng(seed)
    res = {"episodes": 0, "all_goals": 0, "goals": 0, "goals_total": 0, "min_sep_m": np.inf,
           "close_calls": 0, "reward": 0.0}
    for m, arena in ((2, 2.0), (3, 4.0), (4, 4.0)):
        sim = SwarmBatch(episodes // 3, m, rng, dict(sim_config or {}, arena_m=arena))
        total_r = 0.0
        for _ in range(steps):
            q = greedy_q(weights, sim.dqn_obs(est_noise_m))
            total_r += sim.step(q.argmax(-1)).mean()
        res["episodes"] += sim.B
        res["all_goals"] += int(sim.reached.all(-1).sum())
        res["goals"] += int(sim.reached.sum())
        res["goals_total"] += sim.reached.size
        res["min_sep_m"] = float(min(res["min_sep_m"], sim.min_sep.min()))
        res["close_calls"] += int((sim.min_sep < 0.15).sum())
        res["reward"] += total_r / steps / 3
    res["score"] = res["goals"] / res["goals_total"] - res["close_calls"] / res["episodes"] + 0.1 * res["reward"]
    return res


def train(seed=1, env_steps=6000, episode_steps=150, batch=30, updates_per_step=4, gamma=0.95, lr=5e-4, tau=0.005,
          eps_start=0.8, eps_end=0.1, est_noise_m=0.1, hysteretic=None, max_minutes=None, n_step=3,
          critical_m=0.5, eval_episodes=48, goal_scale_m=0.0, shaping=0.0, stop_at=None, log=print):
    """n-step double DQN; returns (best weights by greedy evaluation, info)."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    sc = {"critical_distance_m": critical_m, "goal_scale_m": goal_scale_m}
    # the paper's 2 m x 2 m training arena with 2 and 4 drones, and the 4 m flight arena with 3 and 4
    groups = [SwarmBatch(12, 2, rng, sc), SwarmBatch(4, 4, rng, sc), SwarmBatch(8, 3, rng, dict(sc, arena_m=4.0)),
              SwarmBatch(6, 4, rng, dict(sc, arena_m=4.0))]
    net = make_net(torch)
    target = make_net(torch)
    target.load_state_dict(net.state_dict())
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    cap = 200000
    buf_s = np.zeros((cap, N_INPUTS), np.float32)
    buf_a = np.zeros(cap, np.int64)
    buf_r = np.zeros(cap, np.float32)
    buf_s2 = np.zeros((cap, N_INPUTS), np.float32)
    n_buf = 0
    head = 0
    best = None
    history = []
    obs = [g.dqn_obs(est_noise_m) for g in groups]
    pending = [[] for _ in groups]          # last n (obs, action, reward) per group: n-step returns
    disc = gamma ** np.arange(n_step)
    t0 = time.time()
    n_updates = 0
    for step in range(env_steps):
        eps = eps_end + (eps_start - eps_end) * max(0.0, 1.0 - step / (0.7 * env_steps))
        for gi, g in enumerate(groups):
            with torch.no_grad():
                q = net(torch.from_numpy(obs[gi].astype(np.float32))).numpy()
            act = q.argmax(-1)
            rnd = rng.random(act.shape) < eps
            act = np.where(rnd, rng.integers(0, N_ACTIONS, act.shape), act)
            d1_before = g.goal_dist()
            r = g.step(act)
            if shaping:
                # potential-based shaping (Ng et al. 1999), Phi = -shaping * d1 / scale: it rewards progress
                # towards the goal at once and leaves the optimal policy of eq. 4 unchanged
                scale = g.cfg["goal_scale_m"] or g.cfg["arena_m"]
                r = r + shaping * (d1_before - gamma * g.goal_dist()) / scale
            nxt = g.dqn_obs(est_noise_m)
            pending[gi].append((obs[gi], act, r))
            if len(pending[gi]) == n_step:
                s0, a0, _ = pending[gi][0]
                ret = sum(disc[q] * pending[gi][q][2] for q in range(n_step))    # sum_k gamma^k r_{t+k}
                k = a0.size
                idx = (head + np.arange(k)) % cap
                buf_s[idx] = s0.reshape(k, -1)
                buf_a[idx] = a0.reshape(k)
                buf_r[idx] = ret.reshape(k)
                buf_s2[idx] = nxt.reshape(k, -1)
                head = (head + k) % cap
                n_buf = min(cap, n_buf + k)
                pending[gi].pop(0)
            if (step + 1) % episode_steps == 0:
                g.reset()
                pending[gi] = []
                nxt = g.dqn_obs(est_noise_m)
            obs[gi] = nxt
        if n_buf < 2000:
            continue
        for _ in range(updates_per_step):
            j = rng.integers(0, n_buf, batch)
            s = torch.from_numpy(buf_s[j])
            s2 = torch.from_numpy(buf_s2[j])
            a = torch.from_numpy(buf_a[j])
            r = torch.from_numpy(buf_r[j])
            with torch.no_grad():
                a2 = net(s2).argmax(1, keepdim=True)
                y = r + gamma ** n_step * target(s2).gather(1, a2).squeeze(1)   # pocket eq. 3 (double, n-step)
            qsa = net(s).gather(1, a[:, None]).squeeze(1)
            per = torch.nn.functional.smooth_l1_loss(qsa, y, reduction="none")     # pocket eq. 2 (Huber)
            if hysteretic is not None:
                # hysteretic Q-learning: decreases of Q (negative TD error) learn at rate beta
                per = torch.where(y < qsa, hysteretic * per, per)
            loss = per.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            n_updates += 1
            with torch.no_grad():                                        # soft target update
                for pt, pn in zip(target.parameters(), net.parameters()):
                    pt.mul_(1.0 - tau).add_(tau * pn)
        out_of_time = ((max_minutes is not None and time.time() - t0 > 60.0 * max_minutes)
                       or (stop_at is not None and step + 1 >= stop_at))
        if (step + 1) % max(1, env_steps // 12) == 0 or step == env_steps - 1 or out_of_time:
            w = weights_of(net)
            ev = evaluate(w, seed + 1000, episodes=eval_episodes, sim_config=sc)
            history.append({"env_step": step + 1, "epsilon": eps, **{k: ev[k] for k in ("score", "goals", "goals_total", "close_calls", "min_sep_m", "reward")}})
            log("step %5d eps %.2f goals %d/%d close<0.15m %d minsep %.2f reward %.3f score %.3f (%.0fs)"
                % (step + 1, eps, ev["goals"], ev["goals_total"], ev["close_calls"], ev["min_sep_m"],
                   ev["reward"], ev["score"], time.time() - t0))
            if best is None or ev["score"] > best[0]:
                best = (ev["score"], w, ev)
        if out_of_time:
            log("stopping at env step %d (time budget %s min, stop-at %s)" % (step + 1, max_minutes, stop_at))
            break
    return best[1], {"best_eval": best[2], "history": history, "updates": n_updates,
                     "train_wall_s": time.time() - t0}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=non_negative_int, default=1)
    p.add_argument("--env-steps", type=positive_int, default=6000)
    p.add_argument("--batch", type=positive_int, default=30, help="minibatch (paper: 30)")
    p.add_argument("--lr", type=positive_float, default=5e-4)
    p.add_argument("--goal-scale", type=non_negative_float, default=0.0,
                   help="eq. 4 normalisation of the goal distance d1 (m); 0: the arena side")
    p.add_argument("--shaping", type=non_negative_float, default=0.0,
                   help="weight of potential-based shaping on the goal distance (0: eq. 4 alone)")
    p.add_argument("--critical", type=positive_float, default=0.5, help="critical distance c of pocket eq. 4 (m)")
    p.add_argument("--gamma", type=argument(within(0.0, 1.0)), default=0.95)
    p.add_argument("--n-step", type=positive_int, default=3, help="n-step returns (1: plain one-step targets, pocket eq. 3)")
    p.add_argument("--est-noise", type=non_negative_float, default=0.1, help="white noise on the true goal/obstacle inputs (m)")
    p.add_argument("--max-minutes", type=positive_float, default=None, help="stop (keeping the best weights) after this long")
    p.add_argument("--stop-at", type=positive_int, default=None,
                   help="stop after this env step (the epsilon schedule still spans --env-steps): a reproducible cut")
    p.add_argument("--hysteretic", type=argument(within(0.0, 1.0)), default=None,
                   help="beta of hysteretic Q-learning, in [0, 1] (e.g. 0.5)")
    p.add_argument("--out", default=MODEL_DIR)
    a = p.parse_args(argv)
    try:                                          # before training: a folder it cannot write is one line
        report_folder(a.out, "output folder")
    except ConfigError as exc:
        print("train_dqn: %s" % exc, file=sys.stderr)
        return 2
    weights, info = train(seed=a.seed, env_steps=a.env_steps, hysteretic=a.hysteretic, batch=a.batch, lr=a.lr,
                          est_noise_m=a.est_noise, max_minutes=a.max_minutes, gamma=a.gamma, n_step=a.n_step,
                          critical_m=a.critical, goal_scale_m=a.goal_scale, shaping=a.shaping, stop_at=a.stop_at)
    card = {
        "model": "swarm DQN (uwb-pocket-drones IV-C)",
        "inputs": ["vx_body_mps", "vy_body_mps", "goal_x_body_m", "goal_y_body_m",
                   "obstacle_x_body_m", "obstacle_y_body_m", "dt_s"],
        "outputs": "Q-values of the 9 actions (onboard.swarm.actions: 0..7 accelerate at 45k deg, 8 slow down)",
        "layers": [N_INPUTS, HIDDEN, HIDDEN, N_ACTIONS], "activation": "relu",
        "training": {"seed": a.seed, "env_steps": a.env_steps, "batch": a.batch, "lr": a.lr, "gamma": a.gamma, "n_step": a.n_step,
                     "epsilon": [0.8, 0.1], "reward": "pocket eq. 4, c = %g m, d1 / %s" % (a.critical, "%g m" % a.goal_scale if a.goal_scale else "arena side"),
                     "hysteretic_beta": a.hysteretic, "potential_shaping": a.shaping, "stop_at": a.stop_at, "arenas": "12 x (2 m, 2 drones), 4 x (2 m, 4 drones), 8 x (4 m, 3 drones), 6 x (4 m, 4 drones)",
                     "estimate_noise_m": a.est_noise, "obstacle_clip_m": 2.0, "max_minutes": a.max_minutes, "algorithm": "double DQN with n-step returns, Huber loss, Adam, soft target tau 0.005"},
        "command": "make train-swarm",
        **info,
    }
    # card.json of this folder is the int8 model's (harness/training/swarm_policy/export_dqn.py); training facts go here
    return save_weights(a.out, weights, card, "train_dqn")


if __name__ == "__main__":
    sys.exit(main())
