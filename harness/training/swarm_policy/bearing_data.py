"""Training data for the learned bearing/orientation estimator (uwb-pocket-drones V-C.1).

Drones fly in the vectorised simulator under a goal-seeking walker with random moves
(the paper uses "a pre trained DQN policy on perfect position information and to a
certain extent random moves"). Recorded without sensor noise, per time step and per
observer drone i:

* towards every other drone j: input (dt, d_ij, v_i body, v_j body) and targets bearing of j
  in i's body frame and relative orientation yaw_j - yaw_i;
* towards a fixed random point (not the drone's actual goal, pocket V-C.1): input
  (dt, d, v_i body, (0, 0)) and the bearing target; no orientation target (masked).

:func:`add_noise` puts fresh sensor noise on a batch every time one is drawn (pocket V-C.1:
"new sensor noise is added to the data every time a new batch is drawn").
"""
import math

import numpy as np

from harness.sim.swarm_arena import SwarmBatch, relative_pose_body
from onboard.swarm.actions import N_DIRECTIONS, SLOW_DOWN

# Input columns (pocket IV-A: (dt, d_o, v_x, v_y, v_ox, v_oy)).
DT = 0
RANGE = 1
VX_OWN = 2
VY_OWN = 3
VX_OBJ = 4
VY_OBJ = 5
N_IN = 6


def walker_actions(sim, rng, random_prob=0.3):
    """Head for the goal along the nearest of the 8 directions, slow down near it, random moves otherwise."""
    g = sim.rel_body(sim.goal)
    ang = np.arctan2(g[..., 1], g[..., 0])
    k = np.round(ang / (2 * math.pi / N_DIRECTIONS)).astype(int) % N_DIRECTIONS
    dist = np.hypot(g[..., 0], g[..., 1])
    k = np.where(dist < 0.3, SLOW_DOWN, k)
    rnd = rng.random(k.shape) < random_prob
    return np.where(rnd, rng.integers(0, SLOW_DOWN + 1, k.shape), k)


def policy_actions(sim, rng, q_fn, random_prob=0.3, est_noise_m=0.1):
    """A trained DQN on (nearly) perfect positions with random moves (pocket V-C.1)."""
    k = q_fn(sim.dqn_obs(est_noise_m)).argmax(-1)
    rnd = rng.random(k.shape) < random_prob
    return np.where(rnd, rng.integers(0, SLOW_DOWN + 1, k.shape), k)


def collect(rng, n_envs, n_drones, steps, arena_m, random_prob=0.3, q_fn=None):
    """Noise-free sequences: returns x [S, T, 6], bearing_rad [S, T], rel_yaw_rad [S, T], has_yaw [S].

    Drones fly under ``q_fn`` (a DQN's Q-values of the observations, pocket V-C.1) or, without
    one, the goal walker; both with ``random_prob`` random moves."""
    sim = SwarmBatch(n_envs, n_drones, rng, {"arena_m": arena_m})
    half = arena_m / 2.0
    fixed = rng.uniform(-half, half, (n_envs, n_drones, 2))        # the random fixed point per observer
    M = n_drones
    n_pairs = M * (M - 1)
    S = n_envs * (n_pairs + M)
    x = np.zeros((S, steps, N_IN), np.float32)
    bearing = np.zeros((S, steps), np.float32)
    rel_yaw = np.zeros((S, steps), np.float32)
    has_yaw = np.zeros(S, bool)
    has_yaw[:n_envs * n_pairs] = True
    pairs = [(i, j) for i in range(M) for j in range(M) if i != j]
    for t in range(steps):
        if q_fn is None:
            sim.step(walker_actions(sim, rng, random_prob))
        else:
            sim.step(policy_actions(sim, rng, q_fn, random_prob))
        reached = sim.goal_dist() < 0.2
        sim.new_goals(reached)
        vb = sim.vel_body()
        row = 0
        for i, j in pairs:
            rel, ryaw = relative_pose_body(sim.pos[:, i], sim.yaw[:, i], sim.pos[:, j], sim.yaw[:, j])
            sl = slice(row, row + n_envs)
            x[sl, t, DT] = sim.dt_s
            x[sl, t, RANGE] = np.hypot(rel[:, 0], rel[:, 1])
            x[sl, t, VX_OWN:VY_OWN + 1] = vb[:, i]
            x[sl, t, VX_OBJ:VY_OBJ + 1] = vb[:, j]
            bearing[sl, t] = np.arctan2(rel[:, 1], rel[:, 0])
            rel_yaw[sl, t] = ryaw
            row += n_envs
        for i in range(M):
            relg_i, _ = relative_pose_body(sim.pos[:, i], sim.yaw[:, i], fixed[:, i])
            sl = slice(row, row + n_envs)
            x[sl, t, DT] = sim.dt_s
            x[sl, t, RANGE] = np.hypot(relg_i[:, 0], relg_i[:, 1])
            x[sl, t, VX_OWN:VY_OWN + 1] = vb[:, i]
            bearing[sl, t] = np.arctan2(relg_i[:, 1], relg_i[:, 0])
            row += n_envs
    return x, bearing, rel_yaw, has_yaw


def add_noise(x, is_drone, rng, range_bias_m, range_sigma_m, vel_sigma_mps):
    """Fresh sensor noise on a batch x [B, T, 6] (is_drone [B]: the object is a drone, not a goal).

    UWB range gets N(bias, sigma^2) (pocket III-A); own velocity white noise; the peer's
    velocity (from its ranging message) its own white noise; a goal's zero velocity stays exact.
    """
    y = x.copy()
    y[..., RANGE] = np.abs(y[..., RANGE] + rng.normal(range_bias_m, range_sigma_m, y[..., RANGE].shape))
    y[..., VX_OWN:VY_OWN + 1] += rng.normal(0.0, vel_sigma_mps, y[..., VX_OWN:VY_OWN + 1].shape)
    peer = rng.normal(0.0, vel_sigma_mps, y[..., VX_OBJ:VY_OBJ + 1].shape)
    y[..., VX_OBJ:VY_OBJ + 1] += peer * np.asarray(is_drone, np.float32)[:, None, None]
    return y
