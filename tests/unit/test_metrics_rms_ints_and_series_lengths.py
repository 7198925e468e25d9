"""harness.metrics: the rms of a NumPy array of integers is taken in float64 (its squares do not wrap around in the
array's own integer type); tracking_errors refuses recorded series of different lengths (pairing a sample with
another sample's estimate) instead of cutting them to the shortest."""
import numpy as np
import pytest

from harness.metrics import rms, tracking_errors


@pytest.mark.parametrize("dtype, value", [(np.uint8, 200), (np.int16, -30000), (np.uint16, 60000),
                                          (np.int32, -50000), (np.int64, 4 * 10 ** 9)])
def test_the_rms_of_integers_does_not_wrap_around(dtype, value):
    values = np.array([value, value], dtype=dtype)
    assert rms(values) == float(abs(value)) == rms([value, value])


def test_float_arrays_are_reduced_as_before():
    values = np.array([0.1, 0.2, 0.3])
    assert rms(values) == float(np.sqrt(np.mean(values * values)))
    single = np.array([3.0, 4.0], dtype=np.float32)
    assert rms(single) == float(np.sqrt(np.mean(single * single)))
    assert rms(np.array([True, False])) == float(np.sqrt(0.5))


def _rec(n_truth, n_est):
    return {"truth": [(0.0, float(i)) for i in range(n_truth)], "est": [(0.0, float(i)) for i in range(n_est)],
            "yaw_true": [0.0] * n_truth, "yaw_est": [0.0] * n_truth}


def test_series_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="differ in length: truth 3, est 2"):
        tracking_errors(_rec(3, 2), (0.0, 0.0), [(0.0, 5.0)])


def test_series_of_equal_lengths_give_one_error_per_sample():
    path_err, est_err, yaw_err = tracking_errors(_rec(3, 3), (0.0, 0.0), [(0.0, 5.0)])
    assert path_err == est_err == yaw_err == [0.0, 0.0, 0.0]
