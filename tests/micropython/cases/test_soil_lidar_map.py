"""The loader's LIDAR height fusion (onboard.soil.lidar_map: returns placed by the pose and the mount, the blade
self-filter, bad returns counted, the per-cell Kalman update of elevation_mapping_cupy): the same numbers under
CPython and inside MicroPython."""
import math

from onboard.soil.blind_map import BladePose
from onboard.soil.grid_map import ELEVATION, ELEVATION_VAR, LOOSE, GridMap
from onboard.soil.lidar_map import LIDAR_POINTS, LidarFusion, LidarScan

DEP = math.radians(40.0)
MOUNT = {"enabled": True, "position_body_m": [0.0, 0.0, -2.2], "yaw_rad": 0.0, "depression_rad": DEP}


def _fused():
    """Flat ground seen from 2.2 m up at (5, 5), facing north; a blade 1.5 m ahead hides the middle beams;
    beam 0 is NaN, beam 1 +inf."""
    grid = GridMap({"size_m": [10.0, 10.0], "cell_m": 0.1})
    fusion = LidarFusion(grid, {"mounts": {"front": MOUNT}}, blade_width_m=1.8, blade_height_m=1.1)
    blade = BladePose(0, 6.5, 5.0, -0.5, 0.0, 0.0, 0.0)
    angles = [math.radians(-40.0 + 2.0 * k) for k in range(41)]
    ranges = []
    for a in angles:
        east = 1.5 * math.tan(a) / math.cos(DEP)
        ground = 2.2 / (math.cos(a) * math.sin(DEP))
        ranges.append(1.5 / (math.cos(a) * math.cos(DEP)) if abs(east) <= 0.9 else ground + 0.01)
    ranges[0] = float("nan")
    ranges[1] = float("inf")
    scan = LidarScan(0, "front", (5.0, 5.0, 0.0), (0.0, 0.0, 0.0), angles[0], math.radians(2.0), ranges)
    fused = fusion.fuse(scan, blade)
    return grid, fusion, fused


def test_blade_and_bad_returns_are_dropped():
    grid, fusion, fused = _fused()
    c = fusion.counters()
    # beams within 24.7 deg of the boresight meet the blade (1.5 tan(a) / cos(40 deg) <= 0.9): 25 of 41
    assert c["bad"] == 1 and c["no_return"] == 1 and c["blade"] == 25 and fused == 14 and c["fused"] == 14
    assert sum(grid.layer(LIDAR_POINTS)) == 14.0


def golden_fused_cells():
    grid, fusion, _fused_count = _fused()
    out = []
    hits = grid.layer(LIDAR_POINTS)
    for k in range(grid.size):
        if hits[k] > 0:
            out.extend([k, grid.layer(ELEVATION)[k], grid.layer(ELEVATION_VAR)[k], grid.layer(LOOSE)[k]])
    return out
