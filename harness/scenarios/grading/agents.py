"""Deciders for grading episodes: the trained agents (and the expert, in episode.py).

A policy decider renders the observation at the dozer's *estimated* pose, takes the
peak of each way-point map and maps it back to the world through that same estimated
pose (ag2u fig. 1). The peak is the argmax refined to sub-cell precision (local
soft-argmax, :func:`refined_peak`; not in ag2u, which does not say how a way-point is
read off its map): the maps are 0.16 m a cell, coarser than the way-points the expert labels. Each map
is also averaged with the east-west mirror of the map the net gives for the mirrored crop (test-time
mirror averaging, :meth:`PolicyDecider.maps`; not in ag2u either): the sand world and the expert are
mirror-symmetric (tested), so both are estimates of the same map. What each bought is measured in
docs/experiments/grading.md. The episode ends when the environment says the work area is graded (the
expert's criterion on the true state), not by the agent.

The crop also shows the dozer itself, drawn at its *true* pose (``dozer_body`` in the
observation config): ag2u fig. 1 renders the observation "from the true state and the
estimated poses", and the overhead camera of IV-C sees the machine where it is, while the
crop is cut at the estimated pose. The net can so read the pose error off the image; the
agents are trained on way-points in the execution frame for that reason
(``harness.training.grading_policy.dataset.execution_point``).

Backends (``agent_backend``): ``numpy`` runs the float weights (``fcn.forward_numpy``);
``litert`` runs the int8 export ``models/grading/<agent>/int8`` (see
``harness.training.grading_policy.export_int8``) through ``onboard.policy.load_policy(..., "litert")``
(LiteRT, reference kernels), ``pure-int8`` through the pure int8 kernel
(``backend="pure"``, the MicroPython path; bit-exact with ``litert``), ``litert-xnnpack``
through LiteRT's default XNNPACK path (fastest; +-1 step per layer, not bit-exact).
The int8 maps are dequantized before the refinement (the argmax is the same: dequantization is
monotonic), so every backend reads its maps the same way.
"""
import json
import os

import numpy as np

from harness.data_files import NPZ_READ_ERRORS, not_npz_reason, read_error_reason
from harness.training.grading_policy.fcn import DEFAULTS as FCN_DEFAULTS, forward_numpy
from harness.scenarios.grading.observation import ObservationRenderer

AGENT_BACKENDS = ("numpy", "litert", "litert-xnnpack", "pure-int8")
_POLICY_BACKEND = {"litert": "litert", "litert-xnnpack": "litert-xnnpack", "pure-int8": "pure"}
INT8_SUBDIR = "int8"

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_DIR = os.path.join(REPO, "models", "grading")


class ModelError(ValueError):
    pass


def load_agent(name, model_dir=MODEL_DIR):
    """(weights dict, card dict) of a committed agent; clear error (one line) when missing, corrupt, or when the
    weights do not run the card's network on a crop of the card's shape."""
    folder = os.path.join(model_dir, name)
    where = "cannot load grading agent %r from %s" % (name, folder)
    try:
        with open(os.path.join(folder, "card.json")) as fh:
            card = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ModelError("%s: card.json: %s" % (where, read_error_reason(exc)))
    path = os.path.join(folder, "weights.npz")
    reason = not_npz_reason(path)
    if reason:
        raise ModelError("%s: weights.npz: %s" % (where, reason))
    try:
        with np.load(path, allow_pickle=False) as data:
            weights = {k: data[k] for k in data.files}
    except NPZ_READ_ERRORS as exc:
        raise ModelError("%s: weights.npz: %s" % (where, read_error_reason(exc)))
    try:
        shape = tuple(int(n) for n in card["input"]["shape"])
        fcn = dict(FCN_DEFAULTS, **card["network"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError("%s: card.json: no input shape or network settings (%s)" % (where, read_error_reason(exc)))
    try:       # one forward pass on a zero crop: every array the network reads is there and fits
        logits = forward_numpy(weights, np.zeros(shape, dtype=np.float32), fcn)
        fits = logits.shape == (2,) + shape
    except KeyError as exc:
        raise ModelError("%s: weights.npz has no array %s" % (where, read_error_reason(exc)))
    except (TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelError("%s: the weights do not fit the card's network: %s" % (where, read_error_reason(exc)))
    if not fits:
        raise ModelError("%s: the network gives maps of shape %s for a %s crop (expected %s)"
                         % (where, "x".join(map(str, logits.shape)), "x".join(map(str, shape)),
                            "x".join(map(str, (2,) + shape))))
    return weights, card


REFINE_HALF_WINDOW = 2      # cells each side of the argmax the soft-argmax averages over (5 x 5; 0: argmax)
MIRROR_AVERAGE = True       # average each map with the mirrored map of the mirrored crop (PolicyDecider.maps)


def refined_peak(logits, half_window=REFINE_HALF_WINDOW):
    """(row, col) of a way-point map's peak, fractional (cells): the argmax cell (first on ties) moved
    to the softmax-weighted centroid of the (2 half_window + 1)^2 cells around it, clipped at the map's
    border (a local soft-argmax, as heatmap keypoint detectors read their peaks). The net was trained
    with cross-entropy on the cell nearest each expert way-point, so its probabilities around the peak
    spread like the sub-cell position of such labels; their centroid recovers it where the argmax
    rounds to a cell (0.16 m here). A distant second mode stays outside the window. ``half_window`` 0
    returns the argmax cell."""
    logits = np.asarray(logits, dtype=np.float64)
    rows, cols = logits.shape
    row, col = divmod(int(np.argmax(logits)), cols)
    if half_window <= 0:
        return row, col
    r0, r1 = max(0, row - half_window), min(rows, row + half_window + 1)
    c0, c1 = max(0, col - half_window), min(cols, col + half_window + 1)
    window = logits[r0:r1, c0:c1]
    w = np.exp(window - window.max())
    w /= w.sum()
    return (float(np.dot(w.sum(axis=1), np.arange(r0, r1))), float(np.dot(w.sum(axis=0), np.arange(c0, c1))))


def argmax_maps_nhwc(flat, rows, cols):
    """[(row, col) of the green map's argmax, (row, col) of the red map's] of an int8 model's flat
    NHWC output (first on ties)."""
    a = np.asarray(flat).reshape(rows, cols, 2)
    return [divmod(int(np.argmax(a[:, :, m])), cols) for m in range(2)]


def load_int8_policy(name, backend, model_dir=MODEL_DIR):
    """The int8 export of agent ``name`` as an onboard.policy Policy; clear error when missing."""
    from onboard.policy import load_policy

    folder = os.path.join(model_dir, name, INT8_SUBDIR)
    try:
        return load_policy(folder, backend=_POLICY_BACKEND[backend])
    except (OSError, ValueError) as exc:
        raise ModelError("cannot load the int8 grading model of %r from %s (export it with "
                         "`python -m harness.training.grading_policy.export_int8 --agent %s`): %s" % (name, folder, name, exc))


def load_decider(name, backend="numpy", model_dir=MODEL_DIR):
    """A PolicyDecider for agent ``name`` on ``backend`` (one of AGENT_BACKENDS)."""
    if backend not in AGENT_BACKENDS:
        raise ModelError("agent_backend must be one of %s, got %r" % (", ".join(AGENT_BACKENDS), backend))
    weights, card = load_agent(name, model_dir)
    policy = None if backend == "numpy" else load_int8_policy(name, backend, model_dir)
    return PolicyDecider(weights, card, policy=policy)


class PolicyDecider:
    """Way-points from a trained agent: float weights (``policy`` None) or an int8 onboard.policy Policy.
    ``refine_half_window``: see :func:`refined_peak` (0: the argmax cell); ``mirror_average``: see
    :meth:`maps` (False: the net's maps of the crop alone)."""

    def __init__(self, weights, card, policy=None, refine_half_window=REFINE_HALF_WINDOW,
                 mirror_average=MIRROR_AVERAGE):
        self.refine_half_window = int(refine_half_window)
        self.mirror_average = bool(mirror_average)
        self.weights = weights
        self.fcn = dict(FCN_DEFAULTS, **card["network"])
        self.renderer = ObservationRenderer(card["input"]["observation"])
        self.policy = policy
        self.backend = "numpy" if policy is None else policy.backend
        if policy is not None:
            rows, cols = self.renderer.cfg["rows"], self.renderer.cfg["cols"]
            if policy.inputs[0]["size"] != rows * cols or policy.outputs[0]["size"] != 2 * rows * cols:
                raise ModelError("int8 model I/O %r -> %r does not fit %dx%d crops and 2 maps"
                                 % (policy.inputs[0]["shape"], policy.outputs[0]["shape"], rows, cols))

    def net_maps(self, crop):
        """The net's way-point logits for one crop, (2, rows, cols) float: green, red (int8 backends:
        dequantized)."""
        rows, cols = crop.shape
        if self.policy is None:
            return forward_numpy(self.weights, crop, self.fcn)
        q = self.policy.quantize_input(np.asarray(crop, dtype=np.float64).reshape(-1).tolist())
        flat = self.policy.dequantize_output(self.policy.run([q])[0])
        return np.asarray(flat, dtype=np.float64).reshape(rows, cols, 2).transpose(2, 0, 1)    # NHWC

    def maps(self, crop):
        """The way-point logits the decider reads, (2, rows, cols): with ``mirror_average`` the mean of
        the net's maps of the crop and the column-mirrored maps of the column-mirrored crop. Mirroring
        the crop's columns is what an east-west mirror of the world (and of the dozer's pose) does to
        it, and the expert's way-points mirror with the world (tests/grading/test_sand_world.py), so
        both maps estimate the same expert map; averaging the logits of the two
        (test-time augmentation) cancels part of the net's error that is not mirror-symmetric. Twice
        the inference per decision."""
        maps = self.net_maps(crop)
        if self.mirror_average:
            mirrored = self.net_maps(np.ascontiguousarray(crop[:, ::-1]))
            maps = 0.5 * (maps + mirrored[:, :, ::-1])
        return maps

    def way_point_pixels(self, crop):
        """[(row, col) of the green map's peak, (row, col) of the red map's] for one crop (fractional
        cells, :func:`refined_peak` of :meth:`maps`; integer cells with ``refine_half_window`` 0)."""
        maps = self.maps(crop)
        return [refined_peak(maps[m], self.refine_half_window) for m in range(2)]

    def decide_from_crop(self, crop, pose_ne_yaw):
        points = []
        for row, col in self.way_point_pixels(crop):
            f, r = self.renderer.pixel_to_body(row, col)
            points.append(self.renderer.body_to_world(pose_ne_yaw, f, r))
        return points[0], points[1]

    def __call__(self, episode):
        if episode.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2]) is None:
            return None                                   # environment: area graded
        pose = episode.estimated_pose()
        # the camera's heightmap shows the dozer where it truly is (used when the card's observation has a
        # dozer_body); the crop is cut at the estimated pose
        crop = self.renderer.render(episode.world, pose, episode.true_pose())
        return self.decide_from_crop(crop, pose)
