"""Grading policy pipeline: NumPy FCN, label geometry, decider, model loading (no torch needed)."""
import math

import numpy as np
import pytest

from harness.grading import dataset
from harness.grading.agents import ModelError, PolicyDecider, load_agent
from harness.grading.fcn import _conv2d, forward_numpy
from harness.grading.observation import ObservationRenderer
from harness.grading.sand_world import SandWorld


def _naive_conv(x, w, b, d):
    c, h, wd = x.shape
    o, _, k, _ = w.shape
    out = np.zeros((o, h, wd))
    for oc in range(o):
        for i in range(h):
            for j in range(wd):
                s = b[oc]
                for ci in range(c):
                    for u in range(k):
                        for v in range(k):
                            ii, jj = i + (u - k // 2) * d, j + (v - k // 2) * d
                            if 0 <= ii < h and 0 <= jj < wd:
                                s += w[oc, ci, u, v] * x[ci, ii, jj]
                out[oc, i, j] = s
    return out


@pytest.mark.parametrize("dilation", [1, 2])
def test_im2col_conv_matches_naive_dilated_conv(dilation):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 7, 6)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)
    assert np.allclose(_conv2d(x, w, b, dilation), _naive_conv(x, w, b, dilation), atol=1e-5)


def _peak_picker():
    """A zero-layer network whose two maps are the (scaled, rectified) crop itself."""
    stem = np.zeros((1, 1, 3, 3), dtype=np.float32)
    stem[0, 0, 1, 1] = 1.0
    weights = {"stem.weight": stem, "stem.bias": np.zeros(1, np.float32),
               "head.weight": np.ones((2, 1, 1, 1), np.float32), "head.bias": np.zeros(2, np.float32)}
    card = {"network": {"layers": 0, "channels": 1, "dilation": 2, "input_scale": 10.0},
            "input": {"observation": {"rows": 32, "cols": 32, "cell_m": 0.08, "behind_m": 0.3}}}
    return weights, card


def test_decider_maps_the_argmax_back_to_the_world_through_the_pose():
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    world.add_pile(1.6, 0.9, 0.004, 0.12)
    weights, card = _peak_picker()
    decider = PolicyDecider(weights, card)
    for pose in ((0.8, 1.0, 0.0), (1.2, 1.5, -0.8), (0.5, 0.4, 0.6)):
        crop = decider.renderer.render(world, pose)
        green, red = decider.decide_from_crop(crop, pose)
        assert math.hypot(green[0] - 1.6, green[1] - 0.9) < 0.08
        assert green == red
    logits = forward_numpy(weights, decider.renderer.render(world, (0.8, 1.0, 0.0)), decider.fcn)
    assert logits.shape == (2, 32, 32)


def test_labels_point_at_the_world_waypoints():
    data = dataset.collect(1, seed=2)
    assert len(data["true_pose"]) >= 1
    crops, greens, reds = dataset.crops_and_labels(data, "agent2", np.random.default_rng(0), k_samples=3)
    assert crops.shape[0] == greens.shape[0] == 4 * len(data["true_pose"])
    r = ObservationRenderer()
    row, col = divmod(int(greens[0]), 32)
    n, e = r.body_to_world(tuple(data["true_pose"][0]), *r.pixel_to_body(row, col))
    g = data["green_ne_m"][0]
    assert math.hypot(n - g[0], e - g[1]) < 0.08 or row in (0, 31) or col in (0, 31)
    with pytest.raises(ValueError):
        dataset.crops_and_labels(data, "agent3", np.random.default_rng(0))


def test_missing_or_corrupt_model_is_a_clear_error(tmp_path):
    with pytest.raises(ModelError, match="cannot load grading agent"):
        load_agent("agent1", str(tmp_path))
    (tmp_path / "agent1").mkdir()
    (tmp_path / "agent1" / "card.json").write_text("{not json")
    with pytest.raises(ModelError):
        load_agent("agent1", str(tmp_path))
