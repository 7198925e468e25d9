"""The camera's heightmap shows the dozer where it truly is, and agent2's eq. 1 crops are labelled with
where to drive on that estimate (dataset.execution_point): the two things that let a policy trained under
pose uncertainty act right for the true state (ag2u III-A, III-B)."""
import math

import numpy as np
import pytest

from harness.training.grading_policy import dataset
from harness.scenarios.grading.observation import ObservationRenderer, with_dozer
from harness.sim.sand_world import SandWorld
from harness.training.grading_policy.train_policy import AGENT_OBSERVATION, DOZER_BODY


def _dozer_centroid_body_m(renderer, crop):
    """(forward_m, right_m) of the crop's height-weighted centroid (a flat world: the dozer alone)."""
    rows, cols = crop.shape
    w = crop.astype(np.float64) / crop.sum()
    row = float((w.sum(axis=1) * np.arange(rows)).sum())
    col = float((w.sum(axis=0) * np.arange(cols)).sum())
    return renderer.pixel_to_body(row, col)


def test_the_dozer_is_drawn_at_its_true_pose_and_keeps_the_sand_elsewhere():
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    world.add_pile(2.0, 1.25, 0.003, 0.15)
    seen = with_dozer(world, (1.0, 1.25, 0.0), DOZER_BODY)
    assert seen.height_m is not world.height_m and world.height_m.max() < DOZER_BODY["height_m"]
    i, j = world.index_of(1.0, 1.25)
    assert seen.height_m[i, j] == pytest.approx(world.target_level_m + DOZER_BODY["height_m"])
    # footprint: 0.45 m long (0.25 behind, 0.2 ahead) x 0.4 m wide, on 2.5 cm cells
    covered = np.count_nonzero(seen.height_m >= DOZER_BODY["height_m"] - 1e-12) * world.cell_area_m2
    assert covered == pytest.approx(0.45 * 0.4, rel=0.08)
    far = world.index_of(2.0, 1.25)                     # the pile ahead is untouched
    assert seen.height_m[far] == world.height_m[far]
    # turned east, the box is long east-west
    east = with_dozer(world, (1.0, 1.25, math.pi / 2), DOZER_BODY)
    rows_hit = np.nonzero((east.height_m >= DOZER_BODY["height_m"] - 1e-12).any(axis=1))[0]
    cols_hit = np.nonzero((east.height_m >= DOZER_BODY["height_m"] - 1e-12).any(axis=0))[0]
    assert (rows_hit.size, cols_hit.size) == (16, 18)   # 0.4 m north-south, 0.45 m east-west


def test_a_pose_error_moves_the_dozer_off_the_crops_origin_by_that_error():
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    r = ObservationRenderer(dict(AGENT_OBSERVATION, wall_height_m=0.0))    # the dozer alone raised in the crop
    true_pose = (1.0, 1.25, 0.0)
    at_truth = _dozer_centroid_body_m(r, r.render(world, true_pose, true_pose))
    for d_north, d_east in ((0.0, 0.08), (0.05, -0.05), (-0.08, 0.0)):
        estimate = (true_pose[0] + d_north, true_pose[1] + d_east, 0.0)
        forward, right = _dozer_centroid_body_m(r, r.render(world, estimate, true_pose))
        # heading north: body forward = north, right = east; the dozer shows up where it truly is
        assert forward - at_truth[0] == pytest.approx(-d_north, abs=0.01)
        assert right - at_truth[1] == pytest.approx(-d_east, abs=0.01)


def test_a_view_of_the_dozer_needs_its_pose_and_a_whole_body():
    world = SandWorld({"piles_min": 0, "piles_max": 0})
    with pytest.raises(ValueError, match="true pose"):
        ObservationRenderer(AGENT_OBSERVATION).render(world, (1.0, 1.0, 0.0))
    with pytest.raises(ValueError, match="dozer_body"):
        ObservationRenderer(dict(AGENT_OBSERVATION, dozer_body={"behind_m": 0.2, "ahead_m": 0.2}))
    with pytest.raises(ValueError, match="dozer_body"):
        ObservationRenderer(dict(AGENT_OBSERVATION, dozer_body=dict(DOZER_BODY, height_m=-0.1)))
    sand_only = ObservationRenderer(dict(AGENT_OBSERVATION, dozer_body=None))
    assert np.array_equal(sand_only.render(world, (1.0, 1.0, 0.0)), sand_only.render(world, (1.0, 1.0, 0.0),
                                                                                         (1.0, 1.0, 0.0)))


def test_execution_labels_bring_the_true_dozer_to_the_experts_way_points():
    data = dataset.collect(2, seed=3)                 # sensor fusion, held aiding error: est != true
    n = len(data["true_pose"])
    assert n >= 2
    k = 4
    r = ObservationRenderer(AGENT_OBSERVATION)
    for frame in dataset.LABEL_FRAMES:
        rng = np.random.default_rng(5)
        poses = [[tuple(data["true_pose"][i])] + [tuple(p) for p in dataset.eq1_poses(
            data["est_pose"][i], data["est_cov"][i], k, rng)] for i in range(n)]
        crops, greens, reds = dataset.crops_and_points(data, "agent2", np.random.default_rng(5), AGENT_OBSERVATION,
                                                       k_samples=k, label_frame=frame)
        assert crops.shape[0] == (k + 1) * n and greens.shape == reds.shape == ((k + 1) * n, 2)
        shifts = []
        checked = clipped = 0
        for i in range(n):
            true_pose = poses[i][0]
            for s, pose in enumerate(poses[i]):
                for points, key in ((greens, "green_ne_m"), (reds, "red_ne_m")):
                    north, east = r.body_to_world(pose, *r.pixel_to_body(*points[i * (k + 1) + s]))
                    target = data[key][i]
                    row, col = dataset._pixel(r, pose, dataset.execution_point(target, pose, true_pose, frame))
                    if not (0.0 <= row <= r.cfg["rows"] - 1 and 0.0 <= col <= r.cfg["cols"] - 1):
                        clipped += 1              # beyond the crop: labelled on its border (label_geometry)
                        continue
                    checked += 1
                    if frame == "execution":
                        # driven to on an estimate at `pose`, the true dozer ends up off by pose - true
                        north, east = north - (pose[0] - true_pose[0]), east - (pose[1] - true_pose[1])
                    assert math.hypot(north - target[0], east - target[1]) < 1e-6
                shifts.append(math.hypot(pose[0] - true_pose[0], pose[1] - true_pose[1]))
        assert max(shifts) > 0.03                     # the eq. 1 poses err by centimetres: the frames differ
        assert checked > 3 * clipped
    with pytest.raises(ValueError, match="label_frame"):
        dataset.crops_and_points(data, "agent2", np.random.default_rng(5), AGENT_OBSERVATION, label_frame="body")
    # agent1 sees the true pose only: both frames give the same labels
    a = dataset.crops_and_labels(data, "agent1", np.random.default_rng(1), AGENT_OBSERVATION, k_samples=1,
                                 label_frame="execution")
    b = dataset.crops_and_labels(data, "agent1", np.random.default_rng(1), AGENT_OBSERVATION, k_samples=1,
                                 label_frame="estimate")
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
