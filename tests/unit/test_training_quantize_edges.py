"""harness.training.quantize at the edges of its inputs: weights given as nested lists export with float model
inputs and outputs as they do without, and inputs it cannot quantize (an empty or 1-D calibration set, no layers,
a reversed input range, a range whose float32 scale overflows, weights that are not a 2-D array) are one clear
ValueError instead of a bare numpy error, an AttributeError or a silently wrong scale."""
import numpy as np
import pytest

from harness.training.quantize import activation_qparams, build_mlp_int8, quantize_weights


def _layers(as_lists):
    rng = np.random.default_rng(7)
    layers = [(rng.normal(0.0, 0.5, (3, 2)), np.zeros(3), "RELU"), (rng.normal(0.0, 0.5, (1, 3)), np.array([0.1]),
                                                                   "NONE")]
    if as_lists:
        layers = [(w.tolist(), b.tolist(), a) for w, b, a in layers]
    return layers


def test_list_weights_export_with_float_io_as_arrays_do():
    x = np.random.default_rng(8).uniform(-1.0, 1.0, (20, 2))
    tfl_list, info_list = build_mlp_int8(_layers(True), x, float_io=True)      # before: AttributeError on .shape
    tfl_arr, info_arr = build_mlp_int8(_layers(False), x, float_io=True)
    assert tfl_list == tfl_arr and info_list == info_arr


@pytest.mark.parametrize("calib", [np.zeros((0, 2)), np.zeros(2)])
def test_an_empty_or_flat_calibration_set_is_a_clear_value_error(calib):
    with pytest.raises(ValueError, match="calibration inputs must be a non-empty"):
        build_mlp_int8(_layers(False), calib)
    with pytest.raises(ValueError, match="calibration inputs must be a non-empty"):
        build_mlp_int8(_layers(False), calib, input_range=(-1.0, 1.0))


def test_no_layers_is_a_value_error():
    with pytest.raises(ValueError, match="no layers"):
        build_mlp_int8([], np.zeros((3, 2)))


def test_a_reversed_range_is_refused_not_quantized_as_zero():
    # before: (1.25, -1.25) was nudged to [0, 0] and got scale 1, zero point -128: every input read as ~0
    with pytest.raises(ValueError, match="lo > hi"):
        activation_qparams(1.25, -1.25)
    with pytest.raises(ValueError, match="lo > hi"):
        build_mlp_int8(_layers(False), np.zeros((4, 2)), input_range=(1.25, -1.25))


def test_a_range_whose_scale_overflows_float32_is_refused():
    with pytest.raises(ValueError, match="too wide"):         # before: scale inf, zero point -128
        activation_qparams(-1e300, 1e300)
    scale, zp = activation_qparams(-1e38, 1e38)              # the widest that fits is still quantized
    assert np.isfinite(scale) and -128 <= zp <= 127


@pytest.mark.parametrize("w", [np.zeros(3), np.zeros((3, 0)), np.zeros((0, 3)), np.zeros((2, 2, 2))])
@pytest.mark.parametrize("per_channel", [True, False])
def test_weights_that_are_not_a_matrix_are_a_clear_value_error(w, per_channel):
    with pytest.raises(ValueError, match=r"weights must be a \[out, in\] array"):
        quantize_weights(w, per_channel)


def test_saturation_and_ordinary_scales_are_unchanged():
    w = np.array([[1.0, -1.0, 0.5], [0.0, 0.0, 0.0]])
    q, s = quantize_weights(w, True)
    assert q.tolist() == [[127, -127, 64], [0, 0, 0]] and s.tolist() == [np.float32(1.0 / 127.0), 1.0]
    s = np.float32(4.0 / 255.0)
    assert activation_qparams(-1.0, 3.0) == (s, int(np.round(-128 + 1.0 / s)))
