"""harness.metrics.path_error_m on the smallest polylines: one point is a point (its distance), none is a
clear ValueError."""
import pytest

from harness.metrics import path_error_m


def test_a_polyline_of_one_point_gives_the_distance_to_it():
    assert path_error_m((3.0, 4.0), [(0.0, 0.0)]) == 5.0


def test_an_empty_polyline_is_a_clear_value_error():
    with pytest.raises(ValueError, match="no points"):
        path_error_m((3.0, 4.0), [])


def test_a_segment_is_unchanged():
    assert path_error_m((1.0, 1.0), [(0.0, 0.0), (2.0, 0.0)]) == 1.0
