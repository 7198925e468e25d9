"""Imitation data for the grading policy (ag2u section III-B, eq. 1, fig. 3).

``collect`` runs expert episodes and, at each decision, stores the heightmap, the
true pose, the onboard estimate with its covariance Sigma, and the expert's
way-points (green, red) in world coordinates. ``crops_and_labels`` then renders the
training observations:

- agent1: one crop at the true pose per decision (noise-free training);
- agent2: ``k_samples`` crops at poses drawn from N(x_est, Sigma) (eq. 1), each
  labelled with the same world way-points expressed in that crop's frame.

Labels are pixel indices (row * cols + col) of the green and red points in the
crop, clipped to its border.
"""
import copy

import numpy as np

from harness.grading.episode import DEFAULTS as EPISODE_DEFAULTS, GradingEpisode
from harness.grading.observation import ObservationRenderer
from harness.rng import RunRandom


def collect(n_episodes, seed, noise="sensor_fusion", config=None):
    """Expert decisions from ``n_episodes`` episodes; returns a dict of numpy arrays."""
    cfg = copy.deepcopy(config or EPISODE_DEFAULTS)
    cfg["noise"] = noise
    rec = {"height_m": [], "true_pose": [], "est_pose": [], "est_cov": [], "green_ne_m": [], "red_ne_m": []}
    for ep_index in range(n_episodes):
        ep = GradingEpisode(cfg, RunRandom(seed * 100003 + ep_index))

        def decider(episode):
            decision = episode.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2],
                                             episode.cfg["blade_edge_ahead_m"])
            if decision is not None:
                rec["height_m"].append((episode.world.height_m - episode.target_level_m).astype(np.float32))
                rec["true_pose"].append(episode.true_pose())
                rec["est_pose"].append(episode.estimated_pose())
                rec["est_cov"].append(episode.runtime.estimator.pose_covariance())
                rec["green_ne_m"].append(decision[0])
                rec["red_ne_m"].append(decision[1])
            return decision

        ep.run(decider)
    out = {k: np.asarray(v, dtype=np.float32 if k == "height_m" else np.float64) for k, v in rec.items()}
    out["cell_m"] = np.float64(ep.world.cell_m)
    return out


class _HeightOnly:
    """A world stand-in for rendering a stored heightmap (already relative to target)."""

    def __init__(self, height_m, cell_m):
        self.height_m = height_m
        self.cell_m = cell_m
        self.rows, self.cols = height_m.shape
        self.target_level_m = 0.0


def _label(renderer, pose, point_ne):
    f, r = renderer.world_to_body(pose, point_ne[0], point_ne[1])
    row, col = renderer.body_to_pixel(f, r)
    rows, cols = renderer.cfg["rows"], renderer.cfg["cols"]
    row = int(min(max(round(row), 0), rows - 1))
    col = int(min(max(round(col), 0), cols - 1))
    return row * cols + col


def crops_and_labels(data, agent, rng, obs_config=None, k_samples=8):
    """(crops float32 [N, rows, cols], green labels int64 [N], red labels int64 [N])."""
    renderer = ObservationRenderer(obs_config)
    crops, greens, reds = [], [], []
    for i in range(len(data["true_pose"])):
        world = _HeightOnly(data["height_m"][i], float(data["cell_m"]))
        if agent == "agent1":
            poses = [tuple(data["true_pose"][i])]
        elif agent == "agent2":
            cov = np.asarray(data["est_cov"][i]).reshape(3, 3)
            cov = 0.5 * (cov + cov.T) + 1e-12 * np.eye(3)
            draws = rng.multivariate_normal(data["est_pose"][i], cov, size=k_samples)     # ag2u eq. 1
            poses = [tuple(data["true_pose"][i])] + [tuple(p) for p in draws]
        else:
            raise ValueError("agent must be agent1 or agent2, got %r" % (agent,))
        for pose in poses:
            crops.append(renderer.render(world, pose))
            greens.append(_label(renderer, pose, data["green_ne_m"][i]))
            reds.append(_label(renderer, pose, data["red_ne_m"][i]))
    return np.stack(crops), np.asarray(greens, dtype=np.int64), np.asarray(reds, dtype=np.int64)
