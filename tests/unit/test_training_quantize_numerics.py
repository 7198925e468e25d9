"""harness.training.quantize: a dead (all-zero) ReLU layer keeps the next layer's bias, so does a unit whose
incoming weights decayed to ~0 (its bias no longer saturates the int32 bias tensor), non-finite weights or
calibration ranges are a clear ValueError (never a silently wrong int8 model), and write_model_dir leaves the
folder as it was when the card cannot be written (never a half-written card.json beside a new model)."""
import json
import os

import numpy as np
import pytest

from harness.training.quantize import activation_qparams, build_mlp_int8, mlp_forward, quantize_weights, write_model_dir
from onboard.policy.policy import make_policy


def _int8_predict(tfl, info, x):
    """Dequantized outputs of the pure int8 kernel for float model inputs ``x`` [n, in]."""
    pol = make_policy(tfl, None, "pure")
    s, zp = info["input"]["scale"], info["input"]["zero_point"]
    o = info["output"]
    out = []
    for row in x:
        q = [int(np.clip(np.round(v / s) + zp, -128, 127)) for v in row]
        out.append([o["scale"] * (v - o["zero_point"]) for v in pol.run([q])[0]])
    return np.array(out)


def test_a_dead_relu_layer_keeps_the_next_layers_bias():
    rng = np.random.default_rng(0)
    # layer 0 is 0 on every calibration input (its ReLU never opens): its output range is [0, 0]
    layers = [(rng.normal(0.0, 0.3, (4, 3)), np.full(4, -5.0), "RELU"),
              (rng.normal(0.0, 0.3, (2, 4)), np.array([0.5, -0.25]), "NONE")]
    x = rng.uniform(-1.0, 1.0, (50, 3))
    tfl, info = build_mlp_int8(layers, x)
    assert info["layers"][0]["output"]["scale"] == 1.0
    y_float = mlp_forward(layers, x)
    y_int8 = _int8_predict(tfl, info, x[:5])
    # before: the int32 biases of layer 1 (scale s_in * s_w ~ 1e-13) saturated and the model answered 0
    assert np.max(np.abs(y_int8 - y_float[:5])) < 2 * info["output"]["scale"], (y_int8, y_float[:5])


def test_a_unit_with_near_zero_weights_keeps_its_bias():
    rng = np.random.default_rng(4)
    w0, b0 = rng.normal(0.0, 0.5, (4, 3)), rng.normal(0.0, 0.1, 4)
    w0[2], b0[2] = 1e-9 * rng.normal(size=3), 0.8        # incoming weights decayed to ~0, the bias did not
    layers = [(w0, b0, "RELU"), (rng.normal(0.0, 0.5, (2, 4)), np.array([0.1, -0.2]), "NONE")]
    x = rng.uniform(-1.0, 1.0, (300, 3))
    tfl, info = build_mlp_int8(layers, x, per_channel=True)        # (one per-tensor scale is not ~0)
    err = np.abs(_int8_predict(tfl, info, x[:40]) - mlp_forward(layers, x[:40]))
    # before: unit 2's bias (0.8 over a scale s_in * 1e-11) saturated at 2^31 - 1 steps, ~1e-4: 120 output steps off
    assert err.max() < 2 * info["output"]["scale"], (err.max(), info["output"]["scale"])


def test_ordinary_layers_keep_their_weight_scales():
    rng = np.random.default_rng(5)
    w = rng.normal(0.0, 0.5, (6, 4))
    q, scales = quantize_weights(w, True, min_scales=np.zeros(6))
    q0, scales0 = quantize_weights(w, True)
    assert np.array_equal(q, q0) and np.array_equal(scales, scales0)
    assert np.array_equal(scales0, (np.abs(w).max(axis=1) / 127.0).astype(np.float32))


def test_an_all_zero_range_still_represents_zero_exactly():
    scale, zp = activation_qparams(0.0, 0.0)
    assert scale > 0 and -128 <= zp <= 127 and scale * (zp - zp) == 0.0
    scale, zp = activation_qparams(-1.0, 3.0)              # ordinary ranges unchanged
    assert scale == pytest.approx(4.0 / 255.0) and zp == int(round(-128 + 1.0 / scale))


@pytest.mark.parametrize("lo,hi", [(0.0, np.inf), (-np.inf, 1.0), (np.nan, 1.0), (0.0, np.nan)])
def test_a_non_finite_activation_range_is_a_value_error(lo, hi):
    with pytest.raises(ValueError, match="not finite"):
        activation_qparams(lo, hi)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("per_channel", [True, False])
def test_non_finite_weights_are_a_value_error(bad, per_channel):
    w = np.array([[bad, 1.0], [0.5, 0.2]])
    with pytest.raises(ValueError, match="non-finite"):
        quantize_weights(w, per_channel)


@pytest.mark.parametrize("where", ["calibration", "bias"])
def test_build_mlp_int8_refuses_non_finite_data(where):
    rng = np.random.default_rng(1)
    layers = [(rng.normal(0.0, 0.3, (3, 2)), np.zeros(3), "RELU"), (rng.normal(0.0, 0.3, (1, 3)), np.zeros(1), "NONE")]
    x = rng.uniform(-1.0, 1.0, (20, 2))
    if where == "calibration":
        x[3, 1] = np.nan
    else:
        layers[1] = (layers[1][0], np.array([np.inf]), "NONE")
    with pytest.raises(ValueError, match="not finite"):
        build_mlp_int8(layers, x)


@pytest.mark.parametrize("bad_metric", [np.int64(3), float("nan")])
def test_write_model_dir_leaves_the_folder_as_it_was_when_the_card_cannot_be_written(tmp_path, bad_metric):
    folder = str(tmp_path / "model")
    good = write_model_dir(folder, b"old model", {"name": "m", "metrics": {"n": 1}})
    before = {n: open(os.path.join(folder, n), "rb").read() for n in ("model.tflite", "card.json")}
    with pytest.raises((TypeError, ValueError)):
        write_model_dir(folder, b"new model bytes", {"name": "m", "metrics": {"n": bad_metric}})
    after = {n: open(os.path.join(folder, n), "rb").read() for n in ("model.tflite", "card.json")}
    assert after == before
    assert sorted(os.listdir(folder)) == ["card.json", "model.tflite"]        # no temporary file left
    assert json.loads(after["card.json"])["sha256"] == good["sha256"]
