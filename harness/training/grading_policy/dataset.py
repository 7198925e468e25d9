"""Imitation data for the grading policy (ag2u section III-B, eq. 1, fig. 3; DAgger).

``collect`` runs episodes and, at each decision, stores the heightmap, the true
pose, the onboard estimate with its covariance Sigma, and the expert's way-points
(green, red) in world coordinates, decided on the *true* state. Who drives is the
``policy`` argument:

- ``policy=None``: the expert drives (plain behaviour cloning data);
- ``policy=<decider>``: DAgger (Ross et al. 2011, ag2u ref. [29]): the trained
  policy drives (on its run-time observation, the estimated pose) and the expert
  only labels the states the policy visits, so the net also learns to recover from
  the states its own mistakes lead to (compounding errors). ``beta`` is the chance
  that the expert's own decision is executed instead at a decision.

``crops_and_labels`` then renders the training observations, the same number per
decision for both agents (``k_samples + 1``), so agent2's pose augmentation is not
confounded with data volume:

- agent1: ``k_samples + 1`` copies of the crop at the true pose (noise-free training);
- agent2: the crop at the true pose + ``k_samples`` crops at poses drawn from
  N(x_est, Sigma) (eq. 1). ``label_frame`` says what each such crop is labelled with:

  - ``"execution"``: the way-points the agent must output, believing it stands at the
    crop's pose x_k, for the dozer at its true pose to push where the expert would. At
    run time a way-point is mapped to the world through the estimated pose and driven to
    on the estimate (agents.PolicyDecider, the path follower), so the dozer truly ends up
    off by the estimate's position error; a crop rendered at x_k stands for an estimate
    that errs by p_k - p_true, so its label is the expert's world way-point shifted by
    that error, in the crop's frame: T(x_k)^-1 (W + p_k - p_true), i.e. the true body
    offset W - p_true turned into the crop's heading. What the crop shows of the sand
    is displaced by the same error, so the net learns the action that is right for the
    true state (ag2u III-A: open loop, the sub-optimal projection, and closed loop, the
    error fed back to path following), not the one right for the view.
  - ``"estimate"``: the same world way-points in that crop's frame (right for the view,
    blind to the execution error).

When the observation shows the dozer (``dozer_body`` in the observation config) every
crop draws it at the recorded true pose, as the overhead camera sees it.

``crops_and_points`` gives the green and red points as fractional (row, col) in each crop
(the soft targets are centred there), ``crops_and_labels`` as the pixel index (row * cols +
col) of the nearest cell; both clipped to the crop's border (``label_geometry`` reports how
often that happens).
"""
import copy

import numpy as np

from harness.scenarios.grading.episode import DEFAULTS as EPISODE_DEFAULTS, GradingEpisode
from harness.scenarios.grading.observation import HeightmapView, ObservationRenderer
from harness.sim.rng import RunRandom
from harness.sweep_runner import Runner

RECORD_KEYS = ("height_m", "true_pose", "est_pose", "est_cov", "green_ne_m", "red_ne_m")


class DaggerDecider:
    """Wraps a decider: labels every decision state with the expert on the true state,
    executes the wrapped policy's decision (or, with probability ``beta``, the expert's).

    ``record`` is a dict of lists (``RECORD_KEYS``) that grows by one entry per decision.
    """

    def __init__(self, policy, record, beta=0.0, rng=None):
        self.policy = policy
        self.record = record
        self.beta = float(beta)
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.policy_decisions = 0
        self.expert_decisions = 0

    def __call__(self, episode):
        expert = episode.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2],
                                       episode.cfg["blade_edge_ahead_m"])
        if expert is None:
            return None                                   # environment: area graded
        rec = self.record
        rec["height_m"].append((episode.world.height_m - episode.target_level_m).astype(np.float32))
        rec["true_pose"].append(episode.true_pose())
        rec["est_pose"].append(episode.estimated_pose())
        rec["est_cov"].append(episode.runtime.estimator.pose_covariance())
        rec["green_ne_m"].append(expert[0])
        rec["red_ne_m"].append(expert[1])
        if self.policy is None or self.rng.random() < self.beta:
            self.expert_decisions += 1
            return expert
        self.policy_decisions += 1
        return self.policy(episode)


def collect(n_episodes, seed, noise="sensor_fusion", config=None, policy=None, beta=0.0, max_legs=None,
            first_episode=0):
    """Expert-labelled decisions from ``n_episodes`` episodes; returns a dict of numpy arrays.

    ``policy`` (a decider, e.g. ``agents.PolicyDecider``) drives for DAgger; None: the expert drives.
    Episode ``i`` (``first_episode <= i < first_episode + n_episodes``) is seeded ``seed * 100003 + i``,
    so chunks collected separately and merged in order equal one collection.
    """
    cfg = copy.deepcopy(config or EPISODE_DEFAULTS)
    cfg["noise"] = noise
    if max_legs:
        cfg["max_legs"] = int(max_legs)
    rec = {k: [] for k in RECORD_KEYS}
    decider = DaggerDecider(policy, rec, beta, np.random.default_rng(seed))
    cell_m = None
    for ep_index in range(first_episode, first_episode + n_episodes):
        ep = GradingEpisode(cfg, RunRandom(seed * 100003 + ep_index))
        cell_m = ep.world.cell_m
        ep.run(decider)
    out = {k: np.asarray(v, dtype=np.float32 if k == "height_m" else np.float64) for k, v in rec.items()}
    if not len(rec["true_pose"]):
        out["height_m"] = np.zeros((0, 1, 1), np.float32)
    out["cell_m"] = np.float64(cell_m if cell_m is not None else cfg["world"]["cell_m"])
    out["policy_decisions"] = np.int64(decider.policy_decisions)
    return out


def _collect_chunk(n_episodes, seed, noise, first_episode, policy, max_legs, config):
    """One job of ``collect_parallel``: episodes ``first_episode ..`` of a collection."""
    return collect(n_episodes, seed, noise=noise, config=config, policy=policy, max_legs=max_legs,
                   first_episode=first_episode)


def _chunks(n, runner):
    """(start, stop) of ``runner.worker_count()`` contiguous chunks of ``n`` items (at most ``n``)."""
    parts = max(1, min(runner.worker_count(), n))
    bounds = [n * w // parts for w in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def collect_parallel(n_episodes, seed, noise="sensor_fusion", workers=1, policy=None, max_legs=None, config=None,
                     runner=None):
    """``collect`` split into jobs of the sweep runner (``runner``, a ``harness.sweep_runner.Runner``: its
    engine and worker count; default: ``workers`` local processes); the chunks are merged in episode order,
    so the result equals ``collect(n_episodes, seed, noise, config, policy=policy, max_legs=max_legs)`` on
    any engine and worker count (DAgger with ``beta`` 0: the policy is deterministic and each episode is
    seeded on its own)."""
    runner = runner or Runner(workers=workers)
    chunks = _chunks(n_episodes, runner)
    if len(chunks) == 1 and runner.engine_name == "local":
        return collect(n_episodes, seed, noise=noise, config=config, policy=policy, max_legs=max_legs)
    jobs = [(stop - start, seed, noise, start, policy, max_legs, config) for start, stop in chunks]
    return merge(*runner.map(_collect_chunk, jobs))


def merge(*datasets):
    """One dataset from several ``collect`` results (same world grid); the empty ones add nothing, and when
    all are empty the result is the first one's empty arrays, as ``collect`` gives for no decision."""
    if not datasets:
        raise ValueError("merge needs at least one dataset")
    full = [d for d in datasets if len(d["true_pose"])] or datasets[:1]
    out = {k: np.concatenate([d[k] for d in full]) for k in RECORD_KEYS}
    out["cell_m"] = datasets[0]["cell_m"]
    out["policy_decisions"] = np.int64(sum(int(d.get("policy_decisions", 0)) for d in datasets))
    return out


LABEL_FRAMES = ("execution", "estimate")


def _pixel(renderer, pose, point_ne):
    """Fractional (row, col) of a world point in the crop rendered at ``pose``."""
    f, r = renderer.world_to_body(pose, point_ne[0], point_ne[1])
    return renderer.body_to_pixel(f, r)


def execution_point(point_ne, pose, true_pose, label_frame):
    """The world point a crop rendered at ``pose`` is labelled with for the expert's ``point_ne`` (m):
    itself (``estimate``), or shifted by the pose's position error ``pose - true_pose`` (``execution``:
    the point that, driven to on an estimate with that error, brings the true dozer to ``point_ne``)."""
    if label_frame == "estimate":
        return point_ne[0], point_ne[1]
    if label_frame != "execution":
        raise ValueError("label_frame must be one of %s, got %r" % (", ".join(LABEL_FRAMES), label_frame))
    return point_ne[0] + pose[0] - true_pose[0], point_ne[1] + pose[1] - true_pose[1]


def _point(renderer, pose, point_ne):
    """Fractional (row, col) of a world point in the crop at ``pose``, clipped to the crop's cells."""
    row, col = _pixel(renderer, pose, point_ne)
    rows, cols = renderer.cfg["rows"], renderer.cfg["cols"]
    return min(max(row, 0.0), rows - 1.0), min(max(col, 0.0), cols - 1.0)


def pixel_labels(points, cols):
    """int64 [N] labels (row * cols + col of the nearest cell) of fractional (row, col) points [N, 2]."""
    rc = np.rint(np.asarray(points, dtype=np.float64)).astype(np.int64)
    return rc[:, 0] * cols + rc[:, 1]


def label_geometry(data, obs_config=None):
    """Share of expert way-points outside the crop rendered at the true pose (clipped labels),
    and the range of their body-frame offsets (m): {"green": {...}, "red": {...}}."""
    renderer = ObservationRenderer(obs_config)
    rows, cols = renderer.cfg["rows"], renderer.cfg["cols"]
    out = {}
    for name in ("green", "red"):
        inside = 0
        body = []
        for i in range(len(data["true_pose"])):
            pose = tuple(data["true_pose"][i])
            point = data[name + "_ne_m"][i]
            row, col = _pixel(renderer, pose, point)
            inside += int(-0.5 <= row < rows - 0.5 and -0.5 <= col < cols - 0.5)
            body.append(renderer.world_to_body(pose, point[0], point[1]))
        body = np.asarray(body).reshape(-1, 2)
        n = max(1, len(body))
        out[name] = {"outside_fraction": 1.0 - inside / n,
                     "forward_m_range": [float(body[:, 0].min()), float(body[:, 0].max())] if len(body) else [],
                     "right_m_range": [float(body[:, 1].min()), float(body[:, 1].max())] if len(body) else []}
    return out


def eq1_poses(est_pose, est_cov, k, rng):
    """k planar poses (north_m, east_m, yaw_rad) drawn from N(x_est, Sigma) (ag2u eq. 1); est_cov is
    the flat 3x3 Sigma, symmetrised and floored by 1e-12 on the diagonal."""
    cov = np.asarray(est_cov).reshape(3, 3)
    cov = 0.5 * (cov + cov.T) + 1e-12 * np.eye(3)
    return rng.multivariate_normal(est_pose, cov, size=k)


def _render_chunk(items, obs_config, label_frame):
    """Crops and labels of some decisions: [(height_m, cell_m, true_pose, poses, green_ne_m, red_ne_m)]
    -> lists."""
    renderer = ObservationRenderer(obs_config)
    crops, greens, reds = [], [], []
    for height_m, cell_m, true_pose, poses, green_ne_m, red_ne_m in items:
        world = HeightmapView(height_m, cell_m)
        for pose in poses:
            crops.append(renderer.render(world, pose, true_pose))
            greens.append(_point(renderer, pose, execution_point(green_ne_m, pose, true_pose, label_frame)))
            reds.append(_point(renderer, pose, execution_point(red_ne_m, pose, true_pose, label_frame)))
    return crops, greens, reds


def crops_and_labels(data, agent, rng, obs_config=None, k_samples=8, workers=1, label_frame="execution",
                     runner=None):
    """(crops float32 [N, rows, cols], green labels int64 [N], red labels int64 [N]): crops_and_points
    with each way-point at its nearest cell (``pixel_labels``)."""
    crops, greens, reds = crops_and_points(data, agent, rng, obs_config, k_samples, workers, label_frame, runner)
    cols = crops.shape[2]
    return crops, pixel_labels(greens, cols), pixel_labels(reds, cols)


def crops_and_points(data, agent, rng, obs_config=None, k_samples=8, workers=1, label_frame="execution",
                     runner=None):
    """(crops float32 [N, rows, cols], green points float64 [N, 2], red points float64 [N, 2]): the
    way-points as fractional (row, col) in each crop, clipped to its cells; N = (k_samples + 1) *
    decisions for both agents. The eq. 1 poses are drawn from ``rng`` in decision
    order first, then the crops are rendered as jobs of the sweep runner (``runner``; default: ``workers``
    local processes; the result does not depend on either).
    ``label_frame``: see the module docstring (agent1's crops are at the true pose: the same labels)."""
    if agent not in ("agent1", "agent2"):
        raise ValueError("agent must be agent1 or agent2, got %r" % (agent,))
    if label_frame not in LABEL_FRAMES:
        raise ValueError("label_frame must be one of %s, got %r" % (", ".join(LABEL_FRAMES), label_frame))
    n = len(data["true_pose"])
    if not n:
        raise ValueError("no decisions in the dataset")
    cell_m = float(data["cell_m"])
    items = []
    for i in range(n):
        true_pose = tuple(data["true_pose"][i])
        if agent == "agent1":
            poses = [true_pose]                   # rendered once, repeated k_samples + 1 times below
        else:
            draws = eq1_poses(data["est_pose"][i], data["est_cov"][i], k_samples, rng)
            poses = [true_pose] + [tuple(p) for p in draws]
        items.append((data["height_m"][i], cell_m, true_pose, poses, data["green_ne_m"][i], data["red_ne_m"][i]))
    runner = runner or Runner(workers=workers)
    jobs = [(items[start:stop], obs_config, label_frame) for start, stop in _chunks(n, runner)]
    crops, greens, reds = [], [], []
    for c, g, r in runner.map(_render_chunk, jobs):
        crops += c
        greens += g
        reds += r
    if agent == "agent1":
        repeat = k_samples + 1
        crops = [c for c in crops for _ in range(repeat)]
        greens = [g for g in greens for _ in range(repeat)]
        reds = [r for r in reds for _ in range(repeat)]
    return (np.stack(crops), np.asarray(greens, dtype=np.float64).reshape(-1, 2),
            np.asarray(reds, dtype=np.float64).reshape(-1, 2))
