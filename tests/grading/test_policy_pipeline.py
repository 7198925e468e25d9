"""Grading policy pipeline: NumPy FCN, label geometry, decider, model loading (no torch needed)."""
import math

import numpy as np
import pytest

from harness.training.grading_policy import dataset
from harness.scenarios.grading.agents import ModelError, PolicyDecider, load_agent, refined_peak
from harness.training.grading_policy.fcn import conv2d_same, forward_numpy
from harness.scenarios.grading.observation import ObservationRenderer
from harness.scenarios.grading.episode import DEFAULTS as EPISODE_DEFAULTS, GradingEpisode
from harness.sim.sand_world import SandWorld
from harness.training.grading_policy.train_policy import AGENT_OBSERVATION, AGENT_WALL_HEIGHT_M
from harness.sim.rng import RunRandom


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
    assert np.allclose(conv2d_same(x, w, b, dilation), _naive_conv(x, w, b, dilation), atol=1e-5)


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


def test_refined_peak_reads_a_map_to_sub_cell_precision():
    rows, cols = 20, 24
    r, c = np.mgrid[0:rows, 0:cols]
    # a net's log-probabilities around a way-point between cells (10.3, 4.6): the argmax rounds it
    blob = -((r - 10.3) ** 2 + (c - 4.6) ** 2) / (2 * 0.7 ** 2)
    assert refined_peak(blob, 0) == (10, 5)
    row, col = refined_peak(blob)
    assert abs(row - 10.3) < 0.05 and abs(col - 4.6) < 0.05
    # a second, lower mode 6 cells away stays outside the window and does not pull the peak
    two = np.maximum(blob, -((r - 10) ** 2 + (c - 11) ** 2) / (2 * 0.7 ** 2) - 1.0)
    assert refined_peak(two) == pytest.approx((row, col), abs=1e-6)
    # symmetric neighbours keep the cell; two equal top cells meet half way; first argmax on ties
    flat = np.full((rows, cols), -50.0)
    flat[5, 7] = 3.0
    assert refined_peak(flat) == pytest.approx((5.0, 7.0))
    flat[5, 8] = 3.0
    assert refined_peak(flat) == pytest.approx((5.0, 7.5)) and refined_peak(flat, 0) == (5, 7)
    # at the map's corner the window is clipped: the peak stays inside the map
    corner = np.zeros((rows, cols))
    corner[0, 0], corner[0, 1], corner[1, 0] = 4.0, 2.0, 2.0
    row, col = refined_peak(corner)
    assert 0.0 < row < 0.5 and 0.0 < col < 0.5 and row == pytest.approx(col)


def test_decider_reads_float_and_int8_maps_the_same_way():
    """The float decider refines the argmax; with refine_half_window 0 it is the argmax cell; the int8
    decider refines its dequantized maps around the int8 argmax cell (the net's maps alone here: mirror
    averaging is tested below)."""
    from harness.scenarios.grading.agents import argmax_maps_nhwc, load_decider

    flt = load_decider("agent2", "numpy")
    lit = load_decider("agent2", "litert")
    flt.mirror_average = lit.mirror_average = False
    rows, cols = flt.renderer.cfg["rows"], flt.renderer.cfg["cols"]
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    world.add_pile(1.4, 1.1, 0.005, 0.15)
    crop = flt.renderer.render(world, (0.5, 1.0, 0.1), (0.5, 1.0, 0.1))     # the dozer where the crop is
    weights, card = load_agent("agent2")
    cells = PolicyDecider(weights, card, refine_half_window=0, mirror_average=False).way_point_pixels(crop)
    logits = forward_numpy(weights, crop, flt.fcn)
    assert cells == [divmod(int(np.argmax(logits[m])), cols) for m in range(2)]
    refined = flt.way_point_pixels(crop)
    for (r0, c0), (r1, c1) in zip(cells, refined):
        assert isinstance(r1, float) and abs(r1 - r0) <= 2.0 and abs(c1 - c0) <= 2.0
    q = lit.policy.quantize_input(crop.reshape(-1).astype(np.float64).tolist())
    int8_cells = argmax_maps_nhwc(lit.policy.run([q])[0], rows, cols)
    lit_refined = lit.way_point_pixels(crop)
    for (r0, c0), (r1, c1) in zip(int8_cells, lit_refined):
        assert isinstance(r1, float) and abs(r1 - r0) <= 2.0 and abs(c1 - c0) <= 2.0
    assert lit_refined != int8_cells



def test_mirror_averaging_makes_the_decision_mirror_symmetric():
    """The decider averages each map with the mirrored map of the column-mirrored crop (the sand world
    and the expert are east-west symmetric): its way-points for a mirrored crop are then the mirror
    images of those for the crop, which the committed net alone does not give; int8 backends average
    their dequantized maps the same way."""
    from harness.scenarios.grading.agents import load_decider

    flt = load_decider("agent2", "numpy")
    assert flt.mirror_average
    cols = flt.renderer.cfg["cols"]
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    world.add_pile(1.4, 1.3, 0.005, 0.15)
    world.add_pile(1.7, 0.6, 0.003, 0.12)
    crop = flt.renderer.render(world, (0.5, 1.0, 0.2), (0.52, 0.97, 0.18))  # the dozer a little off the crop
    mirrored = np.ascontiguousarray(crop[:, ::-1])
    for (r0, c0), (r1, c1) in zip(flt.way_point_pixels(crop), flt.way_point_pixels(mirrored)):
        assert r1 == pytest.approx(r0, abs=1e-9) and c1 == pytest.approx(cols - 1 - c0, abs=1e-9)
    raw, raw_mirrored = flt.net_maps(crop), flt.net_maps(mirrored)[:, :, ::-1]
    assert np.abs(raw - raw_mirrored).max() > 0.1                  # the net alone is not symmetric
    assert np.allclose(flt.maps(crop), 0.5 * (raw + raw_mirrored))
    plain = PolicyDecider(*load_agent("agent2"), mirror_average=False)
    assert np.array_equal(plain.maps(crop), raw)
    pixels = [plain.way_point_pixels(c) for c in (crop, mirrored)]
    assert any(abs(c1 - (cols - 1 - c0)) > 1e-6 for (_, c0), (_, c1) in zip(*pixels))
    lit = load_decider("agent2", "litert")
    assert np.allclose(lit.maps(crop), 0.5 * (lit.net_maps(crop) + lit.net_maps(mirrored)[:, :, ::-1]))

def test_labels_point_at_the_world_waypoints():
    data = dataset.collect(2, seed=2)
    assert len(data["true_pose"]) >= 2
    crops, greens, reds = dataset.crops_and_labels(data, "agent2", np.random.default_rng(0), AGENT_OBSERVATION,
                                                   k_samples=3)
    assert crops.shape == (4 * len(data["true_pose"]), AGENT_OBSERVATION["rows"], AGENT_OBSERVATION["cols"])
    r = ObservationRenderer(AGENT_OBSERVATION)
    rows, cols = AGENT_OBSERVATION["rows"], AGENT_OBSERVATION["cols"]
    for i in range(len(data["true_pose"])):                # the true-pose crop comes first per decision
        for labels, key in ((greens, "green_ne_m"), (reds, "red_ne_m")):
            row, col = divmod(int(labels[4 * i]), cols)
            n, e = r.body_to_world(tuple(data["true_pose"][i]), *r.pixel_to_body(row, col))
            p = data[key][i]
            true_row, true_col = r.body_to_pixel(*r.world_to_body(tuple(data["true_pose"][i]), p[0], p[1]))
            if not (-0.5 <= true_row < rows - 0.5 and -0.5 <= true_col < cols - 0.5):
                # a push target beyond the crop (a push from the sandbox's south end, or one turned far
                # aside): labelled on the crop's nearest border cell, at most one cell short
                assert key == "green_ne_m" and (row, col) == (min(max(int(round(true_row)), 0), rows - 1),
                                                         min(max(int(round(true_col)), 0), cols - 1))
                assert true_row > -1.5 and -1.5 < true_col < cols + 0.5
                continue
            assert math.hypot(n - p[0], e - p[1]) <= AGENT_OBSERVATION["cell_m"] * 0.75
    # the agents' crop holds every next-leg start and most push targets (the expert's push ends 0.3 m into the
    # spoil band); the old 2.56 m crop (0.3 m behind) clipped more of both
    geometry = dataset.label_geometry(data, AGENT_OBSERVATION)
    assert geometry["green"]["outside_fraction"] <= 0.2 and geometry["red"]["outside_fraction"] == 0.0
    old = dataset.label_geometry(data, dict(AGENT_OBSERVATION, rows=32, cols=32, cell_m=0.08, behind_m=0.3))
    assert old["red"]["outside_fraction"] > 0.0
    with pytest.raises(ValueError):
        dataset.crops_and_labels(data, "agent3", np.random.default_rng(0))


def test_agents_get_the_same_number_of_crops_per_decision():
    data = dataset.collect(1, seed=4)
    c1, g1, r1 = dataset.crops_and_labels(data, "agent1", np.random.default_rng(0), AGENT_OBSERVATION, k_samples=4)
    c2, g2, r2 = dataset.crops_and_labels(data, "agent2", np.random.default_rng(0), AGENT_OBSERVATION, k_samples=4)
    assert c1.shape == c2.shape and c1.shape[0] == 5 * len(data["true_pose"])
    assert np.array_equal(c1[0], c1[4]) and g1[0] == g1[4]          # agent1: the true-pose crop repeated
    assert np.array_equal(c1[0], c2[0]) and g1[0] == g2[0]          # both start from the true-pose crop
    assert not np.array_equal(c2[0], c2[1])                          # agent2: eq. 1 poses differ


def test_supersampled_crop_reports_the_mean_height_of_each_cell():
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    world.add_pile(1.5, 1.1, 0.004, 0.12)
    sand_only = dict(AGENT_OBSERVATION, dozer_body=None, wall_height_m=0.0)
    coarse = ObservationRenderer(sand_only)
    crop = coarse.render(world, (1.0, 1.0, 0.3))
    cell_area = AGENT_OBSERVATION["cell_m"] ** 2
    assert float(crop.sum()) * cell_area == pytest.approx(0.004, rel=0.03)   # box filter keeps the volume
    sampled = ObservationRenderer(dict(sand_only, supersample=1)).render(world, (1.0, 1.0, 0.3))
    assert sampled.shape == crop.shape and not np.allclose(sampled, crop)
    with pytest.raises(ValueError):
        ObservationRenderer(dict(AGENT_OBSERVATION, supersample=0))


def test_the_sandbox_walls_fill_what_of_the_crop_lies_outside_the_world():
    world = SandWorld({"piles_min": 0, "piles_max": 0})          # flat, at the target level
    wall_m = AGENT_WALL_HEIGHT_M
    renderer = ObservationRenderer(dict(AGENT_OBSERVATION, dozer_body=None, wall_height_m=wall_m))
    # facing north 0.4 m short of the north edge, mid-way between the east and west walls (1.25 m from each):
    # the rows more than 0.4 m ahead see the north wall, the rest the floor (inside the side walls)
    north_edge_m = world.rows * world.cell_m
    crop = renderer.render(world, (north_edge_m - 0.4, 1.25, 0.0))
    inside = [col for col in range(crop.shape[1]) if abs(renderer.pixel_to_body(0, col)[1]) < 1.1]
    assert np.allclose(crop[:, 0], wall_m) and np.allclose(crop[:, -1], wall_m)      # the side walls
    for row in range(crop.shape[0]):
        forward_m, _ = renderer.pixel_to_body(row, 0)
        near_m = forward_m - 0.5 * renderer.cfg["cell_m"]
        far_m = forward_m + 0.5 * renderer.cfg["cell_m"]
        if near_m >= 0.4:
            assert np.allclose(crop[row], wall_m)
        elif far_m <= 0.4 - world.cell_m:
            assert np.allclose(crop[row, inside], 0.0)
    # the world's east-west mirror mirrors the crop's columns, walls included (the agents' mirror averaging)
    east_m = 0.3
    left = renderer.render(world, (1.0, east_m, 0.4))
    right = renderer.render(world, (1.0, world.cols * world.cell_m - east_m, -0.4))
    assert np.allclose(left, right[:, ::-1], atol=1e-6)
    assert np.all(renderer.render(world, (-5.0, -5.0, 0.0)) == np.float32(wall_m))   # all outside: all wall
    flat = ObservationRenderer(dict(AGENT_OBSERVATION, dozer_body=None, wall_height_m=0.0))
    assert np.all(flat.render(world, (-5.0, -5.0, 0.0)) == 0.0)                     # 0: the floor, as before
    assert np.array_equal(ObservationRenderer(dict(AGENT_OBSERVATION, dozer_body=None)).render(world, (-5.0, -5.0, 0.0)),
                          flat.render(world, (-5.0, -5.0, 0.0)))                   # no key: no walls
    with pytest.raises(ValueError):
        ObservationRenderer(dict(AGENT_OBSERVATION, wall_height_m=-0.1))


class _FixedPolicy:
    def __init__(self, decision):
        self.decision = decision
        self.calls = 0

    def __call__(self, episode):
        self.calls += 1
        return self.decision


def test_dagger_decider_labels_visited_states_with_the_expert_and_executes_the_policy():
    fixed = ((1.9, 0.4), (0.6, 0.4))
    rec = {k: [] for k in dataset.RECORD_KEYS}
    policy = _FixedPolicy(fixed)
    decider = dataset.DaggerDecider(policy, rec, beta=0.0)
    cfg = dict(EPISODE_DEFAULTS, noise="noise_less", max_legs=3)
    ep = GradingEpisode(cfg, RunRandom(11))
    ep.run(decider)
    assert len(ep.legs) == 3 and policy.calls == 3 and len(rec["true_pose"]) == 3
    assert all(tuple(leg["green_ne_m"]) == fixed[0] for leg in ep.legs)         # the policy drove
    assert all(tuple(g) != fixed[0] for g in rec["green_ne_m"])                # the expert labelled
    assert rec["true_pose"][1] != rec["true_pose"][0]
    # beta = 1: the expert drives, the policy is never asked
    rec1 = {k: [] for k in dataset.RECORD_KEYS}
    policy1 = _FixedPolicy(fixed)
    ep1 = GradingEpisode(dict(cfg), RunRandom(11))
    ep1.run(dataset.DaggerDecider(policy1, rec1, beta=1.0))
    assert policy1.calls == 0 and [tuple(l["green_ne_m"]) for l in ep1.legs] == [tuple(g) for g in rec1["green_ne_m"]]


def test_missing_or_corrupt_model_is_a_clear_error(tmp_path):
    with pytest.raises(ModelError, match="cannot load grading agent"):
        load_agent("agent1", str(tmp_path))
    (tmp_path / "agent1").mkdir()
    (tmp_path / "agent1" / "card.json").write_text("{not json")
    with pytest.raises(ModelError):
        load_agent("agent1", str(tmp_path))


def test_soft_targets_are_normalised_gaussians_centred_on_the_exact_way_point():
    from harness.training.grading_policy.train_policy import soft_targets

    rows, cols = 5, 4
    cells = np.array([divmod(k, cols) for k in range(rows * cols)], dtype=np.float64)
    t = soft_targets(cells, rows, cols, 1.0)
    assert t.shape == (rows * cols, rows * cols) and t.dtype == np.float32
    assert np.allclose(t.sum(axis=1), 1.0)
    assert all(int(np.argmax(t[k])) == k for k in range(rows * cols))           # peak on the label cell
    k = 2 * cols + 1                                                            # cell (2, 1): inside the crop
    up, down, left, right = t[k, k - cols], t[k, k + cols], t[k, k - 1], t[k, k + 1]
    assert up == pytest.approx(down) and left == pytest.approx(right) and up == pytest.approx(left)
    assert up / t[k, k] == pytest.approx(math.exp(-0.5), rel=1e-6)             # one cell away, sigma 1 cell
    assert np.allclose(soft_targets(cells, rows, cols, 0.05), np.eye(rows * cols), atol=1e-6)   # narrow: one-hot
    # a way-point between cells: the target's centroid is the way-point, not its nearest cell
    between = soft_targets(np.array([[4.0, 4.3]]), 9, 9, 1.0)[0].reshape(9, 9)
    assert int(np.argmax(between)) == 4 * 9 + 4
    assert float((between.sum(axis=0) * np.arange(9)).sum()) == pytest.approx(4.3, abs=0.01)
    assert float((between.sum(axis=1) * np.arange(9)).sum()) == pytest.approx(4.0, abs=0.01)


@pytest.mark.parametrize("sigma", ["-1", "nan"])
def test_training_rejects_a_bad_label_sigma_before_anything_runs(sigma, capsys):
    from harness.training.grading_policy import train_policy

    with pytest.raises(SystemExit) as exc:
        train_policy.main(["--label-sigma-cells", sigma])
    assert exc.value.code == 2 and "argument --label-sigma-cells: expected a number >= 0" in capsys.readouterr().err


@pytest.mark.parametrize("noise", ["sensor_fusion,noisy", "quiet", "noise_less,"])
def test_training_rejects_an_unknown_dagger_noise_before_anything_runs(noise, capsys):
    from harness.training.grading_policy import train_policy

    with pytest.raises(SystemExit) as exc:
        train_policy.main(["--dagger-noise", noise])
    assert exc.value.code == 2 and "argument --dagger-noise: expected noise scenarios from" in capsys.readouterr().err


def test_training_refuses_agent2_on_noise_free_data_before_anything_runs(capsys):
    from harness.training.grading_policy import train_policy

    with pytest.raises(SystemExit) as exc:
        train_policy.main(["--data-noise", "noise_less", "--agents", "agent1,agent2"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--data-noise noise_less: agent2's eq. 1 poses" in err


@pytest.mark.slow
def test_training_smoke_behaviour_cloning_then_dagger_writes_a_loadable_agent(tmp_path):
    """Reduced `make train-grading`: both stages (BC, then DAgger resumed from it) end to end."""
    pytest.importorskip("torch")
    from harness.training.grading_policy import train_policy

    common = ["--episodes", "2", "--val-episodes", "1", "--threads", "1", "--agents", "agent2",
              "--data", str(tmp_path / "data.npz"), "--mirror", "--workers", "2", "--device", "cpu"]
    assert train_policy.main(common + ["--epochs", "1", "--dagger-rounds", "0", "--out", str(tmp_path / "bc")]) == 0
    assert (tmp_path / "data.npz").exists()
    other = ["--episodes", "3"] + common[2:]          # the cache holds 2 episodes, so it is refused
    with pytest.raises(SystemExit, match="was collected with"):
        train_policy.main(other + ["--epochs", "0", "--dagger-rounds", "0", "--out", str(tmp_path / "x")])
    assert train_policy.main(common + ["--epochs", "0", "--init", str(tmp_path / "bc"), "--dagger-rounds", "2",
                                       "--dagger-episodes", "1", "--dagger-epochs", "1", "--dagger-max-legs", "2",
                                       "--label-sigma-cells", "1.0", "--dagger-noise", "noise_less,sensor_fusion",
                                       "--out", str(tmp_path / "dag")]) == 0
    weights, card = load_agent("agent2", str(tmp_path / "dag"))
    assert card["input"]["observation"] == AGENT_OBSERVATION
    assert card["training"]["epochs"] == 1 and card["training"]["behaviour_cloning"]["epochs"] == 1
    assert card["training"]["mirror_augmentation"] is True and card["training"]["device"] == "cpu"
    assert card["training"]["software"]["torch"] == pytest.importorskip("torch").__version__
    assert card["training"]["software"]["numpy"] == np.__version__
    assert card["training"]["label_sigma_cells"] == 1.0 and [d["noise"] for d in card["training"]["dagger"]] == [
        "noise_less", "sensor_fusion"]
    assert card["training"]["label_frame"] == "execution"
    assert card["training"]["dagger"][0]["visited_decisions"] >= 1
    assert card["training"]["aggregated_decisions"] > card["training"]["decisions"]
    assert 0.0 <= card["metrics"]["heldout_true_pose"]["green"]["lateral_within_0.2m"] <= 1.0
    bc_weights, _ = load_agent("agent2", str(tmp_path / "bc"))
    assert any(not np.array_equal(weights[k], bc_weights[k]) for k in weights)     # DAgger trained on
    green, red = PolicyDecider(weights, card).decide_from_crop(
        np.zeros((AGENT_OBSERVATION["rows"], AGENT_OBSERVATION["cols"]), np.float32), (1.0, 1.0, 0.0))
    assert all(np.isfinite(green)) and all(np.isfinite(red))


@pytest.mark.slow
def test_training_agent1_on_noise_free_data_keeps_its_own_cache(tmp_path):
    """--data-noise noise_less (agent1 from the paper's noise-free trajectory): the expert drives on the true
    pose, the card says so, and a sensor-fusion cache at the same path is refused, not mixed in."""
    pytest.importorskip("torch")
    from harness.training.grading_policy import train_policy

    common = ["--episodes", "2", "--val-episodes", "1", "--threads", "1", "--agents", "agent1", "--workers", "1",
              "--device", "cpu", "--epochs", "1", "--dagger-rounds", "0", "--data", str(tmp_path / "data.npz")]
    assert train_policy.main(common + ["--data-noise", "noise_less", "--out", str(tmp_path / "nl")]) == 0
    _, card = load_agent("agent1", str(tmp_path / "nl"))
    assert card["training"]["dataset_noise"].startswith("noise_less")
    with np.load(tmp_path / "data.npz") as f:
        assert np.allclose(f["train_est_pose"], f["train_true_pose"], atol=1e-3)     # no pose error (sub-mm lag)
    with pytest.raises(SystemExit, match="was collected with"):
        train_policy.main(common + ["--out", str(tmp_path / "sf")])


FAST_ESKF = dict(EPISODE_DEFAULTS, estimator_impl="cython")     # the compiled ES-EKF: the pure path's bits


def test_episode_chunks_collected_separately_equal_one_collection():
    whole = dataset.collect(2, seed=1, config=FAST_ESKF)
    parts = dataset.merge(dataset.collect(1, seed=1, config=FAST_ESKF),
                          dataset.collect(1, seed=1, first_episode=1, config=FAST_ESKF))
    for key in dataset.RECORD_KEYS:
        assert np.array_equal(whole[key], parts[key])


def test_mirror_augmentation_flips_crops_and_way_point_labels_together():
    from harness.training.grading_policy.train_policy import mirrored
    rng = np.random.default_rng(4)
    rows, cols = AGENT_OBSERVATION["rows"], AGENT_OBSERVATION["cols"]
    crops = rng.normal(size=(3, rows, cols)).astype(np.float32)
    greens = rng.integers(0, rows * cols, 3)
    reds = rng.integers(0, rows * cols, 3)
    m_crops, m_greens, m_reds = mirrored(crops, greens, reds, cols)
    assert m_crops.shape == (6, rows, cols)
    assert np.array_equal(m_crops[:3], crops) and np.array_equal(m_greens[:3], greens)
    for labels, m_labels in ((greens, m_greens), (reds, m_reds)):
        for i, label in enumerate(labels):
            # the mirrored label marks the same sand in the mirrored crop
            assert m_crops[3 + i].reshape(-1)[m_labels[3 + i]] == crops[i].reshape(-1)[label]
            row, col = divmod(int(label), cols)
            assert divmod(int(m_labels[3 + i]), cols) == (row, cols - 1 - col)
    # fractional (row, col) way-points (the soft targets' centres) flip their column the same way
    points = rng.uniform(0, rows - 1, size=(3, 2))
    _, m_points, _ = mirrored(crops, points, points, cols)
    assert np.array_equal(m_points[:3], points)
    assert np.allclose(m_points[3:], np.stack([points[:, 0], cols - 1 - points[:, 1]], axis=1))


def test_dataset_collected_in_worker_processes_equals_one_collection():
    from harness.training.grading_policy import dataset
    one = dataset.collect(3, seed=5, config=FAST_ESKF)
    split = dataset.collect_parallel(3, 5, workers=2, config=FAST_ESKF)
    assert len(one["true_pose"]) > 0
    for key in dataset.RECORD_KEYS:
        assert np.array_equal(one[key], split[key]), key


def test_dagger_episodes_and_crops_from_worker_processes_equal_one_process():
    policy = PolicyDecider(*load_agent("agent1"))
    one = dataset.collect(2, seed=6, noise="noise_less", policy=policy, max_legs=2)
    split = dataset.collect_parallel(2, 6, noise="noise_less", workers=2, policy=policy, max_legs=2)
    assert int(one["policy_decisions"]) == int(split["policy_decisions"]) == len(one["true_pose"]) > 0
    for key in dataset.RECORD_KEYS:
        assert np.array_equal(one[key], split[key]), key
    for agent in ("agent1", "agent2"):
        a = dataset.crops_and_labels(one, agent, np.random.default_rng(2), AGENT_OBSERVATION, k_samples=2)
        b = dataset.crops_and_labels(one, agent, np.random.default_rng(2), AGENT_OBSERVATION, k_samples=2,
                                     workers=2)
        assert all(np.array_equal(x, y) for x, y in zip(a, b)), agent
