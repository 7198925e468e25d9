"""The loader's front/rear single-beam LIDARs (harness.sim.soil_lidar) and their fusion into the onboard
elevation map (onboard.soil.lidar_map, through the loader app's entry point ``lidar``): exact ranges against
planar and step terrain, the terrain and the blade hiding what lies behind them, bad returns counted and
dropped, and a short seeded episode with the LIDARs on that repeats bit for bit and replays from its recording
(``harness replay``, recipe ``soil_loader``) with zero differences."""
import json
import math

import numpy as np
import pytest

from harness.config import ConfigError, merge
from harness.replay import EXIT_IDENTICAL, main_replay, read_recording
from harness.scenarios.soil import soil_episode as ep
from harness.sim import soil_lidar
from harness.sim.rng import RunRandom
from onboard.runtime.mcap_log import McapLog
from onboard.soil import loader_app
from onboard.soil.blind_map import BladePose
from onboard.soil.grid_map import ELEVATION, ELEVATION_VAR, LOOSE, GridMap
from onboard.soil.lidar_map import LIDAR_POINTS, LidarFusion, LidarScan

CELL_M = 0.1


def _grid_heights(shape, fn):
    ii, jj = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    return fn((ii + 0.5) * CELL_M, (jj + 0.5) * CELL_M)


def test_ray_cast_against_a_planar_terrain_is_exact():
    a, b, c = 0.3, 0.05, -0.02
    h = _grid_heights((60, 40), lambda n, e: a + b * n + c * e)
    origin = np.array([1.0, 1.5, 2.5])
    rng = np.random.default_rng(3)
    d = rng.normal(size=(300, 3))
    d[:, 2] = -np.abs(d[:, 2]) - 0.2
    d /= np.linalg.norm(d, axis=1)[:, None]
    t = soil_lidar.raycast_heightfield(h, CELL_M, origin, d, 0.0, 50.0)
    expect = (origin[2] - a - b * origin[0] - c * origin[1]) / (b * d[:, 0] + c * d[:, 1] - d[:, 2])
    pn, pe = origin[0] + expect * d[:, 0], origin[1] + expect * d[:, 1]
    inside = (pn >= 0.5 * CELL_M) & (pn <= 59.5 * CELL_M) & (pe >= 0.5 * CELL_M) & (pe <= 39.5 * CELL_M)
    assert 50 < inside.sum() < 300
    np.testing.assert_allclose(t[inside], expect[inside], rtol=0, atol=1e-12)
    assert np.all(np.isinf(t[~inside]))            # no terrain beyond the cell centres' extent
    # a ray cut short by the range limits returns nothing
    short = soil_lidar.raycast_heightfield(h, CELL_M, origin, d[inside][:5], 0.0, 0.5 * expect[inside][:5].min())
    assert np.all(np.isinf(short))


def test_ray_cast_against_a_step_is_exact_and_the_step_hides_the_ground_behind_it():
    step_m, row = 0.5, 30                        # rows >= 30 (north >= 3.0 m) are 0.5 m higher
    h = np.zeros((60, 40))
    h[row:, :] = step_m
    origin = np.array([0.5, 2.0, 0.2])
    # level ray below the step's top: it meets the ramp between the centres of rows 29 and 30
    t = soil_lidar.raycast_heightfield(h, CELL_M, origin, np.array([[1.0, 0.0, 0.0]]), 0.0, 10.0)
    north = (row - 1 + 0.2 / step_m + 0.5) * CELL_M
    assert t[0] == pytest.approx(north - origin[0], abs=1e-12)
    # descending rays from 1 m up: without the step they would reach the ground at 2..5 m north;
    # those aimed behind the step meet its face (the ramp) or its top instead
    origin = np.array([0.5, 2.0, 1.0])
    ground_n = np.array([2.0, 3.2, 4.0, 5.0])
    d = np.stack([ground_n - origin[0], np.zeros(4), -np.full(4, origin[2])], axis=1)
    d /= np.linalg.norm(d, axis=1)[:, None]
    t = soil_lidar.raycast_heightfield(h, CELL_M, origin, d, 0.0, 20.0)
    flat = np.zeros((60, 40))
    t_flat = soil_lidar.raycast_heightfield(flat, CELL_M, origin, d, 0.0, 20.0)
    np.testing.assert_allclose(t_flat, np.hypot(ground_n - origin[0], origin[2]), atol=1e-12)
    assert t[0] == pytest.approx(t_flat[0], abs=1e-12)           # short of the ramp: the ground
    for k in (1, 2, 3):                                           # behind it: hidden, the step is hit first
        assert t[k] < t_flat[k] - 0.1
        p = origin + t[k] * d[k]
        u = p[0] / CELL_M - 0.5                                   # on the ramp or the plateau, exactly
        surface = step_m * min(max(u - (row - 1), 0.0), 1.0)
        assert p[2] == pytest.approx(surface, abs=1e-12)


def _front_geometry():
    """Flat ground, the chassis at (5, 5) facing north, the front scanner 2.2 m up tilted 40 deg down, a
    vertical blade 1.5 m ahead spanning 1.8 m across from 0.5 m to 1.6 m above the ground."""
    dep = math.radians(40.0)
    mount = {"enabled": True, "position_body_m": [0.0, 0.0, -2.2], "yaw_rad": 0.0, "depression_rad": dep}
    cfg = soil_lidar.checked_config({"mounts": {"front": mount}, "range_sigma_m": 0.0, "bad_return_rate": 0.0})
    chassis = (5.0, 5.0, 0.0, 0.0, 0.0, 0.0)
    blade = BladePose(0, 6.5, 5.0, -0.5, 0.0, 0.0, 0.0)
    angles = np.radians(np.arange(-45.0, 45.5, 1.0))
    return cfg, mount, chassis, blade, angles, dep


def test_the_blade_occludes_the_beams_it_should():
    cfg, mount, chassis, blade, angles, dep = _front_geometry()
    flat = np.zeros((100, 100))
    t = soil_lidar.true_ranges(flat, CELL_M, chassis, blade, 1.8, 1.1, cfg, mount, angles)
    # every beam crosses north 6.5 at 2.2 - 1.5 tan(40 deg) = 0.94 m up; there it is east 1.5 tan(a) / cos(40)
    # of the centre: within the blade's 0.9 m half width it stops on the blade, else it reaches the ground
    on_blade = np.abs(1.5 * np.tan(angles) / math.cos(dep)) <= 0.9
    assert 10 < on_blade.sum() < angles.size - 10
    np.testing.assert_allclose(t[on_blade], 1.5 / (np.cos(angles[on_blade]) * math.cos(dep)), atol=1e-12)
    np.testing.assert_allclose(t[~on_blade], 2.2 / (np.cos(angles[~on_blade]) * math.sin(dep)), atol=1e-12)
    # raised above the beams' height there, the blade hides nothing
    high = BladePose(0, 6.5, 5.0, -1.0, 0.0, 0.0, 0.0)
    t_high = soil_lidar.true_ranges(flat, CELL_M, chassis, high, 1.8, 1.1, cfg, mount, angles)
    np.testing.assert_allclose(t_high, 2.2 / (np.cos(angles) * math.sin(dep)), atol=1e-12)
    # onboard, the blade's returns are told from the soil's by the blade pose and dropped
    grid = GridMap({"size_m": [10.0, 10.0], "cell_m": CELL_M})
    fusion = LidarFusion(grid, {"mounts": {"front": mount}}, blade_width_m=1.8, blade_height_m=1.1)
    scan = LidarScan(0, "front", chassis[:3], chassis[3:], float(angles[0]), math.radians(1.0), t.tolist())
    assert fusion.fuse(scan, blade) == int((~on_blade).sum())
    assert fusion.blade == int(on_blade.sum()) and fusion.bad == 0 and fusion.no_return == 0
    hits = np.array(grid.layer(LIDAR_POINTS)).reshape(100, 100)
    assert hits.sum() == (~on_blade).sum() and np.all(hits[60:70, :] == 0)   # nothing fused at the blade


def test_bad_returns_and_scans_are_counted_and_dropped_and_good_ones_fused_by_the_kalman_update():
    cfg, mount, chassis, blade, angles, dep = _front_geometry()
    grid = GridMap({"size_m": [10.0, 10.0], "cell_m": CELL_M, "elevation_var_m2": 1e-4})
    fusion = LidarFusion(grid, {"mounts": {"front": mount}, "range_sigma_m": 0.01, "angle_sigma_rad": 0.0})
    r0 = 2.2 / math.sin(dep)                      # the centre beam to flat ground; the map says 0.03 m higher
    k = grid.flat(*grid.index_of(5.0 + 2.2 / math.tan(dep), 5.0))
    grid.layers[ELEVATION][k] = 0.03
    grid.layers[LOOSE][k] = 0.08
    before = {name: list(grid.layer(name)) for name in (ELEVATION, ELEVATION_VAR, LOOSE)}
    ranges = [float("nan"), -1.0, 0.1, 100.0, float("inf"), float("-inf"), r0]
    scan = LidarScan(0, "front", chassis[:3], chassis[3:], 0.0, 0.0, ranges)
    assert fusion.fuse(scan) == 1
    assert fusion.counters() == {"scans": 1, "rejected_scans": 0, "fused": 1, "gated": 0, "no_return": 1, "bad": 5,
                                 "blade": 0, "pile": 0, "outside": 0}
    v, s2 = 0.01 ** 2, 1e-4                      # eq. of add_points_kernel: h+ = (h v + z s2) / (s2 + v)
    assert grid.layers[ELEVATION][k] == pytest.approx((0.03 * v + 0.0 * s2) / (s2 + v), abs=1e-15)
    assert grid.layers[ELEVATION_VAR][k] == pytest.approx(s2 * v / (s2 + v), rel=1e-12)
    assert grid.layers[LOOSE][k] == pytest.approx(0.08 - 0.015, abs=1e-12)   # the fall comes off the loose soil
    changed = [i for i in range(grid.size) if grid.layers[ELEVATION][i] != before[ELEVATION][i]]
    assert changed == [k]
    # a scan with a NaN pose, from an unknown mount or not a scan at all: rejected whole, the map kept
    state = {name: list(grid.layer(name)) for name in (ELEVATION, ELEVATION_VAR, LOOSE)}
    assert fusion.fuse(LidarScan(1, "front", (float("nan"), 5.0, 0.0), chassis[3:], 0.0, 0.0, [r0])) == 0
    assert fusion.fuse(LidarScan(2, "roof", chassis[:3], chassis[3:], 0.0, 0.0, [r0])) == 0
    assert fusion.rejected_scans == 2 and fusion.scans == 1
    assert {name: list(grid.layer(name)) for name in state} == state
    # a far-off return is gated: the cell's variance grows, its height stays
    fusion.fuse(LidarScan(3, "front", (chassis[0], chassis[1], -1.0), chassis[3:], 0.0, 0.0, [r0]))
    assert fusion.gated == 1 and grid.layers[ELEVATION][k] == state[ELEVATION][k]
    assert grid.layers[ELEVATION_VAR][k] == pytest.approx(state[ELEVATION_VAR][k] + 0.01)
    # through the app's entry point: garbage is counted, not queued
    app = loader_app.loader_app(GridMap({"size_m": [4.0, 4.0]}), {"estimation": False, "lidar": {"enabled": True}})
    mapping = app.part("mapping")
    mapping.on_lidar(LidarScan(0, "front", (float("inf"), 0.0, 0.0), (0.0, 0.0, 0.0), 0.0, 0.0, [1.0]))
    assert mapping.scans == [] and app.report()["mapping"]["lidar"]["rejected_scans"] == 1


def test_settings_are_checked_and_off_by_default():
    assert soil_lidar.DEFAULTS["enabled"] is False and loader_app.DEFAULTS["lidar"]["enabled"] is False
    with pytest.raises(ConfigError, match="rate_hz"):
        soil_lidar.checked_config({"rate_hz": 7})
    with pytest.raises(ConfigError, match="min_range_m"):
        soil_lidar.checked_config({"min_range_m": 5.0, "max_range_m": 2.0})
    app = loader_app.loader_app(GridMap({"size_m": [4.0, 4.0]}), {"estimation": False})
    assert app.part("mapping").on_lidar is None and "lidar" not in app.entries


def _short_episode(mcap=None):
    """A 1.2 m lane on a 5 m x 4 m world with both LIDARs on (the rear one looks off the map)."""
    lanes = {"count": 1, "start_ne_m": [0.5, 2.0], "length_m": 1.2}
    cfg = merge(ep.DEFAULTS, {"world": {"size_m": [5.0, 4.0]}, "terrain": {"relief": {"count": 1}},
                              "app": {"estimation": False}, "loader": {"operator": {"lanes": lanes}}},
                "test", ep.SETTING_RANGES)
    return ep.run_episode(cfg, RunRandom(5), mcap=mcap, lidar=soil_lidar.checked_config({"enabled": True}))


def test_a_short_seeded_run_with_the_lidars_on_is_deterministic_and_replays(tmp_path, capsys):
    path = tmp_path / "log.mcap"
    log = McapLog(str(path))
    try:
        recorded = _short_episode(log)
    finally:
        log.close()
    runs = [recorded, _short_episode()]
    maps = [{name: np.array(e.grid.layer(name)) for name in e.grid.layer_names()} for e in runs]
    for name in maps[0]:
        np.testing.assert_array_equal(maps[0][name], maps[1][name], err_msg=name)
    counters = [e.app.report()["mapping"]["lidar"] for e in runs]
    assert counters[0] == counters[1]
    c = counters[0]
    assert c["scans"] > 20 and c["fused"] > 500 and c["bad"] > 0 and c["no_return"] > 0, c
    assert np.count_nonzero(maps[0][LIDAR_POINTS]) > 100
    # the app recorded its scans at its boundary: ``harness replay`` rebuilds it and gets the same sweeps
    events, _ = read_recording(str(path))
    scans = [e for e in events if e[0] == "/app/in/lidar"]
    assert len(scans) == c["scans"] + c["rejected_scans"]
    code = main_replay([str(path), "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == EXIT_IDENTICAL and "identical" in out, out
    rep = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert rep["topics"]["sweep"]["replayed"] == rep["topics"]["sweep"]["logged"] > 0
