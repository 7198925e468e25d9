"""The simulated LIDAR (harness.sim.lidar): ranges within noise, occlusion, no water returns, shore, the
planar variant, limits, settings."""
import math

import numpy as np
import pytest

from harness.sim.boat_course import Buoy, Course, generate_course
from harness.sim.lidar import PLANAR, Lidar, LidarConfigError, LidarScene, check_config

SIGMA_M = 0.03


def _scene(buoys, shore=()):
    return LidarScene(Course(0.0, 0.0, 0.0, tuple(buoys), (1.0, 0.0), (), tuple(shore)))


def _axis_dist(pts, n, e):
    """Horizontal distance of body-frame points from a vertical axis at body (n forward, e right)."""
    return np.hypot(pts[:, 0] - n, pts[:, 1] - e)


@pytest.mark.parametrize("yaw_rad", [0.0, 1.0, -2.5])
def test_buoy_at_known_range_within_noise(yaw_rad):
    rng_m, radius_m, height_m = 20.0, 0.5, 1.5
    # the buoy 20 m along the boat's heading, from a boat at (3, -4)
    bn, be = 3.0 + rng_m * math.cos(yaw_rad), -4.0 + rng_m * math.sin(yaw_rad)
    lidar = Lidar({"range_sigma_m": SIGMA_M}, np.random.default_rng(2))
    pts = lidar.sweep(_scene([Buoy(bn, be, radius_m, height_m)]), 3.0, -4.0, yaw_rad)
    assert len(pts) >= 10
    # every point lies on the cylinder's surface (body frame: the buoy 20 m dead ahead) within 4 sigma
    assert np.all(np.abs(_axis_dist(pts, rng_m, 0.0) - radius_m) < 4 * SIGMA_M)
    # and on the near side, between the water and the top, FRD z = -height above water
    assert np.all(pts[:, 0] < rng_m + 0.1)
    assert np.all((-pts[:, 2] > -4 * SIGMA_M) & (-pts[:, 2] < height_m + 4 * SIGMA_M))
    mount = lidar.cfg["mount_forward_m"]
    slant = np.sqrt((pts[:, 0] - mount) ** 2 + pts[:, 1] ** 2 + (pts[:, 2] + lidar.cfg["mount_height_m"]) ** 2)
    assert slant.min() > rng_m - radius_m - mount - 4 * SIGMA_M
    # the noise is there and about sigma: the radial residuals have a spread of the set sigma
    resid = _axis_dist(pts, rng_m, 0.0) - radius_m
    assert 0.3 * SIGMA_M < resid.std() < 2.0 * SIGMA_M


def test_noise_free_points_are_exactly_on_the_surface():
    pts = Lidar({"range_sigma_m": 0.0}).sweep(_scene([Buoy(0.0, 15.0, 0.4, 1.0)]), 0.0, 0.0, 0.0)
    assert len(pts) > 0
    assert np.allclose(_axis_dist(pts, 0.0, 15.0), 0.4, atol=1e-9)


def test_points_behind_a_nearer_buoy_are_not_returned():
    near = Buoy(10.0, 0.0, 0.5, 3.0)        # tall: it covers every beam that reaches the far one
    far = Buoy(25.0, 0.0, 1.5, 1.0)         # wider: its edges stick out of the near one's shadow
    lidar = Lidar({"range_sigma_m": 0.0})
    both = lidar.sweep(_scene([near, far]), 0.0, 0.0, 0.0)
    alone = lidar.sweep(_scene([far]), 0.0, 0.0, 0.0)
    mount = lidar.cfg["mount_forward_m"]
    bearing = np.abs(np.arctan2(both[:, 1], both[:, 0] - mount))
    on_far = np.abs(_axis_dist(both, 25.0, 0.0) - 1.5) < 1e-6
    on_near = np.abs(_axis_dist(both, 10.0, 0.0) - 0.5) < 1e-6
    assert np.all(on_far | on_near)
    shadow = math.asin(0.5 / (10.0 - mount))
    assert on_far.any() and on_near.any()
    assert not np.any(on_far & (bearing < shadow - 1e-9))           # nothing of the far buoy in the shadow
    bearing_alone = np.abs(np.arctan2(alone[:, 1], alone[:, 0] - mount))
    assert np.any(bearing_alone < shadow)                            # which it shows when alone
    assert len(both[on_far]) < len(alone)


def test_no_water_returns_and_top_caps():
    lidar = Lidar({"range_sigma_m": 0.0})
    assert len(lidar.sweep(_scene([]), 0.0, 0.0, 0.0)) == 0                 # open water: nothing at all
    # a low wide buoy close by: the falling beams hit its flat top (z = -height), none go below the water
    pts = lidar.sweep(_scene([Buoy(5.0, 0.0, 2.0, 0.5)]), 0.0, 0.0, 0.0)
    top = np.isclose(-pts[:, 2], 0.5)
    assert top.any() and np.all(-pts[:, 2] >= -1e-9)
    assert np.all(_axis_dist(pts[top], 5.0, 0.0) <= 2.0 + 1e-9)


def test_shore_wall():
    shore = [(50.0, -200.0), (50.0, 200.0)]
    pts = Lidar({"range_sigma_m": 0.0}).sweep(_scene([], shore), 0.0, 0.0, 0.0)
    assert len(pts) > 100
    assert np.allclose(pts[:, 0], 50.0) and np.all((-pts[:, 2] >= 0) & (-pts[:, 2] <= 3.0 + 1e-9))


def test_max_range_and_planar_variant():
    lidar = Lidar({"range_sigma_m": 0.0})
    assert len(lidar.sweep(_scene([Buoy(120.0, 0.0, 1.0, 30.0)]), 0.0, 0.0, 0.0)) == 0
    low = _scene([Buoy(12.0, 0.0, 0.5, 1.0)])
    planar_high = Lidar({"beams": "planar", "range_sigma_m": 0.0})            # at 2 m: over the buoy
    assert len(planar_high.sweep(low, 0.0, 0.0, 0.0)) == 0
    planar = Lidar(dict(PLANAR, range_sigma_m=0.0))
    pts, rings = planar.sweep_rings(low, 0.0, 0.0, 0.0)
    assert len(pts) > 0 and set(rings.tolist()) == {0}
    assert np.allclose(pts[:, 2], -PLANAR["mount_height_m"])
    assert planar.rays_per_sweep * 16 == lidar.rays_per_sweep == 16 * 1800


def test_sweeps_are_seeded():
    course = generate_course(3, "robotx")
    scene = LidarScene(course)
    a = Lidar({}, np.random.default_rng(9)).sweep(scene, 10.0, 5.0, course.start_yaw_rad)
    b = Lidar({}, np.random.default_rng(9)).sweep(scene, 10.0, 5.0, course.start_yaw_rad)
    assert len(a) > 0 and np.array_equal(a, b)


@pytest.mark.parametrize("cfg,key", [({"beams": "vlp32"}, "lidar.beams"), ({"range_sigma_m": -1.0}, "range_sigma"),
                                     ({"azimuth_res_deg": float("nan")}, "azimuth_res_deg"),
                                     ({"max_range_m": "far"}, "max_range_m"), ({"colour": 1}, "lidar.colour"),
                                     ({"min_range_m": 50.0, "max_range_m": 40.0}, "min_range_m")])
def test_bad_settings_one_line(cfg, key):
    with pytest.raises(LidarConfigError) as e:
        check_config(cfg)
    assert key in str(e.value) and "\n" not in str(e.value)
