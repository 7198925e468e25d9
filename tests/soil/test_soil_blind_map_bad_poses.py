"""Blind mapping at bad inputs: a finite but absurd blade position, a bool or non-finite pose time, and the
erosion window of a non-finite or far-away centre or an infinite region are refused or handled without
wedging the mapper."""
import math

import pytest

from onboard.soil.blind_map import BladePose, BlindMapError, BlindMapper, erosion_window
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap


def _grid():
    return GridMap({"size_m": [4.0, 4.0], "cell_m": 0.1, "elevation_m": 0.1})


@pytest.mark.parametrize("position", [(1e300, 2.0, 0.05), (1.0, -1e200, 0.05), (1.0, 2.0, 1e9)])
def test_an_absurd_blade_position_is_refused_and_the_mapper_goes_on(position):
    g = _grid()
    m = BlindMapper(g)
    m.on_blade_pose(BladePose(0, 1.0, 2.0, 0.05, 0.0, 0.17, 0.0))
    with pytest.raises(BlindMapError, match="within"):
        m.on_blade_pose(BladePose(10000, *position, roll_rad=0.0, pitch_rad=0.17, yaw_rad=0.0))
    recs = [m.on_blade_pose(BladePose(10000 * k, 1.0 + 0.05 * k, 2.0, 0.05, 0.0, 0.17, 0.0)) for k in range(2, 8)]
    assert any(r is not None and r.cut_cells > 0 for r in recs)


@pytest.mark.parametrize("time_us", [True, math.nan, math.inf, "5"])
def test_a_bool_or_non_finite_pose_time_is_refused(time_us):
    with pytest.raises(BlindMapError, match="time_us"):
        BladePose(time_us, 1.0, 2.0, 0.05)


def test_bool_pose_values_are_refused():
    with pytest.raises(BlindMapError):
        BladePose(0, True, 2.0, 0.05)


def test_erosion_window_of_bad_centres_and_regions():
    g = _grid()
    assert erosion_window(g, (math.nan, 1.0), 1.0) is None
    assert erosion_window(g, (1.0, math.inf), 1.0) is None
    assert erosion_window(g, (1e308, 1.0), 1.0) is None
    assert erosion_window(g, (1.0, 1.0), math.nan) is None
    assert erosion_window(g, (1.0, 1.0), math.inf) == (0, g.n_north - 1, 0, g.n_east - 1)
    assert erosion_window(g, (1.05, 2.05), 0.3) == (7, 13, 17, 23)
    assert erosion_window(g, (-0.5, 1.05), 1.0) == (0, 5, 0, 20)


def test_settle_over_the_whole_map_and_at_a_bad_centre():
    g = _grid()
    h, lo = g.layer(ELEVATION), g.layer(LOOSE)
    k = g.flat(20, 20)
    h[k] += 0.3
    lo[k] += 0.3
    total = sum(h)
    m = BlindMapper(g)
    assert m.settle((math.nan, 0.0), 1.0, 5) == 0.0
    assert m.settle((1e308, 0.0), 1.0, 5) == 0.0
    moved = m.settle((0.0, 0.0), math.inf, 50)
    assert moved > 0.0
    assert sum(h) == pytest.approx(total, rel=1e-12)
    assert h[k] < 0.4
