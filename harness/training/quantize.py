"""Post-training int8 quantization of float MLPs and export to ``.tflite`` + model card.

Scheme (TFLite's full-integer quantization):

- activations: asymmetric int8, range from a representative (calibration) dataset, nudged
  to contain 0 (``scale = (max - min) / 255``, ``zp = round(-128 - min / scale)``); a tensor
  that is 0 over the whole calibration set (a dead ReLU layer) gets scale 1 (as TensorFlow's
  quantizer: any scale holds 0 exactly, and a tiny one would saturate the next layer's int32
  biases, whose scale is s_in * s_w);
- weights: symmetric int8 per output channel (``scale_c = max|w_c| / 127``, zp 0, values in
  [-127, 127]), or per tensor;
- biases: int32 with ``scale = s_in * s_w[c]``, zp 0 (a channel whose bias would not fit gets a wider
  weight scale: :func:`bias_min_weight_scales`);
- model input and output: int8 (``float_io=True`` adds QUANTIZE/DEQUANTIZE ops instead).

``export_mlp`` writes ``<dir>/model.tflite`` and ``<dir>/card.json`` (see
``onboard.policy.card``) and returns the card.
"""
import hashlib
import json
import math
import os

import numpy as np

from harness.training.tflite_builder import TfliteBuilder
from onboard.policy.card import CARD_SCHEMA

INT8_MIN, INT8_MAX = -128, 127


def f32(x):
    return float(np.float32(x))


def activation_qparams(lo, hi):
    """(scale, zero point) of an asymmetric int8 tensor covering [lo, hi] and 0; scale 1 for a range
    under 1e-8 wide (a tensor that is 0). ValueError when lo or hi is NaN or infinite, lo > hi, or the
    range is too wide for a float32 scale."""
    if not (math.isfinite(float(lo)) and math.isfinite(float(hi))):
        raise ValueError("activation range [%r, %r] is not finite (NaN or inf in the calibration data or "
                         "the weights)" % (float(lo), float(hi)))
    if float(lo) > float(hi):
        raise ValueError("activation range [%r, %r] has lo > hi" % (float(lo), float(hi)))
    lo = min(float(lo), 0.0)
    hi = max(float(hi), 0.0)
    if (hi - lo) / 255.0 > float(np.finfo(np.float32).max):
        raise ValueError("activation range [%r, %r] is too wide for an int8 tensor (its scale overflows "
                         "float32)" % (lo, hi))
    scale = f32((hi - lo) / 255.0) if hi - lo >= 1e-8 else f32(1.0)
    zp = int(np.clip(np.round(INT8_MIN - lo / scale), INT8_MIN, INT8_MAX))
    return scale, zp


def quantize_weights(w, per_channel=True, min_scales=None):
    """Symmetric int8 weights [out, in] -> (int8 array, float32 scales [out] or [1]). ``min_scales`` [out]:
    the least scale of each output channel (per tensor: their largest), see :func:`bias_min_weight_scales`.
    ValueError when a weight is NaN or infinite or ``w`` is not a 2-D array with at least one row and column."""
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or 0 in w.shape:
        raise ValueError("weights must be a [out, in] array with out, in >= 1, got shape %s" % (w.shape,))
    if not np.all(np.isfinite(w)):
        raise ValueError("weights hold %d non-finite values (NaN or inf)" % int(np.sum(~np.isfinite(w))))
    if per_channel:
        amax = np.abs(w).max(axis=1)
    else:
        amax = np.array([np.abs(w).max()])
    scales = np.where(amax > 0, amax / 127.0, 1.0)
    if min_scales is not None:
        least = np.asarray(min_scales, dtype=np.float64)
        scales = np.maximum(scales, least if per_channel else least.max())
    scales = scales.astype(np.float32)
    s = scales[:, None] if per_channel else scales[0]
    q = np.clip(np.round(w / s), -127, 127).astype(np.int8)
    return q, scales


def bias_min_weight_scales(bias, in_scale):
    """The least weight scale per output channel at which its bias fits the int32 bias tensor (scale
    ``in_scale * s_w``) with room to spare (|q| <= 2^30): a channel whose weights are ~0 but whose bias is not
    (a unit whose incoming weights decayed) would otherwise get a bias scale so small that the bias saturates
    at 2^31 - 1 steps and the layer's output loses it. TensorFlow's quantizer widens such scales likewise."""
    return np.abs(np.asarray(bias, dtype=np.float64)) / (float(np.float32(in_scale)) * 2.0 ** 30)


def _act(x, name):
    if name == "RELU":
        return np.maximum(x, 0.0)
    if name == "RELU6":
        return np.clip(x, 0.0, 6.0)
    if name == "TANH":
        return np.tanh(x)
    if name == "NONE":
        return x
    raise ValueError("activation %r" % name)


def mlp_forward(layers, x):
    """Float forward pass; ``layers`` = [(W [out, in], b [out], activation name)]."""
    h = np.asarray(x, dtype=np.float64)
    for w, b, act in layers:
        h = _act(h @ np.asarray(w).T + b, act)
    return h


def build_mlp_int8(layers, calib_x, per_channel=True, float_io=False, description="int8 MLP",
                   input_range=None):
    """Quantize a float MLP (``layers`` as in :func:`mlp_forward`) and serialise it.

    ``calib_x`` [n, in]: representative inputs (already normalized as the model sees them).
    ``input_range`` (lo, hi): overrides the calibrated input range. Activations RELU, RELU6
    and NONE are fused into FULLY_CONNECTED; TANH becomes a separate TANH operator with
    TFLite's fixed output quantization (1/128, 0).
    Returns (tflite bytes, quantization info dict). ValueError when a weight, a bias or a calibration
    value is NaN or infinite (the model would be silently wrong), when ``calib_x`` is not a non-empty
    [n, in] array or ``layers`` is empty.
    """
    calib_x = np.asarray(calib_x, dtype=np.float64)
    if calib_x.ndim != 2 or calib_x.shape[0] == 0:
        raise ValueError("calibration inputs must be a non-empty [n, in] array, got shape %s" % (calib_x.shape,))
    if len(layers) == 0:
        raise ValueError("the MLP has no layers")
    b = TfliteBuilder(description)
    lo, hi = input_range if input_range is not None else (calib_x.min(), calib_x.max())
    in_scale, in_zp = activation_qparams(lo, hi)
    info = {"input": {"scale": in_scale, "zero_point": in_zp}, "layers": []}
    n_in = calib_x.shape[1]
    if float_io:
        x_float = b.add_tensor("input_float", [1, n_in], "float32")
        cur = b.add_tensor("input_q", [1, n_in], "int8", scale=in_scale, zero_point=in_zp)
        b.add_op("QUANTIZE", [x_float], [cur])
        graph_in = x_float
    else:
        cur = b.add_tensor("input", [1, n_in], "int8", scale=in_scale, zero_point=in_zp)
        graph_in = cur
    cur_scale = in_scale
    h = calib_x
    for li, (w, bias, act) in enumerate(layers):
        w = np.asarray(w, dtype=np.float64)
        if not np.all(np.isfinite(bias)):
            raise ValueError("layer %d: a bias is not finite (NaN or inf)" % li)
        n_out = w.shape[0]
        pre = h @ w.T + bias
        wq, wscales = quantize_weights(w, per_channel, bias_min_weight_scales(bias, cur_scale))
        bias_scales = (np.float32(cur_scale) * wscales).astype(np.float32)
        bq = np.round(np.asarray(bias, dtype=np.float64) / bias_scales.astype(np.float64))
        bq = np.clip(bq, -(2 ** 31), 2 ** 31 - 1).astype(np.int32)
        wt = b.add_tensor("fc%d/weights" % li, [n_out, w.shape[1]], "int8", data=wq,
                          scale=wscales, zero_point=0)
        bt = b.add_tensor("fc%d/bias" % li, [n_out], "int32", data=bq, scale=bias_scales,
                          zero_point=0)
        fused = act if act in ("RELU", "RELU6", "NONE") else "NONE"
        post_fc = _act(pre, fused)
        o_scale, o_zp = activation_qparams(post_fc.min(), post_fc.max())
        last = li == len(layers) - 1
        name = "output" if (last and act in ("RELU", "RELU6", "NONE") and not float_io) else "fc%d" % li
        out = b.add_tensor(name, [1, n_out], "int8", scale=o_scale, zero_point=o_zp)
        b.add_op("FULLY_CONNECTED", [cur, wt, bt], [out], activation=fused)
        cur, cur_scale = out, o_scale
        layer_info = {"n_in": int(w.shape[1]), "n_out": int(n_out), "activation": act,
                      "weight_scales": [float(s) for s in wscales],
                      "output": {"scale": o_scale, "zero_point": o_zp}}
        if act == "TANH":
            t_name = "output" if (last and not float_io) else "tanh%d" % li
            t_out = b.add_tensor(t_name, [1, n_out], "int8", scale=1.0 / 128.0, zero_point=0)
            b.add_op("TANH", [cur], [t_out])
            cur, cur_scale = t_out, f32(1.0 / 128.0)
            layer_info["tanh_output"] = {"scale": f32(1.0 / 128.0), "zero_point": 0}
        info["layers"].append(layer_info)
        h = _act(pre, act)
    graph_out = cur
    if float_io:
        graph_out = b.add_tensor("output_float", [1, n_out], "float32")
        b.add_op("DEQUANTIZE", [cur], [graph_out])
    last_q = b.tensors[cur]["quant"]
    info["output"] = {"scale": float(last_q["scale"][0]), "zero_point": int(last_q["zero_point"][0])}
    return b.finish([graph_in], [graph_out]), info


def write_model_dir(model_dir, tflite_bytes, card):
    """Write ``model.tflite`` and ``card.json`` (filling file, size and sha256 into the card).

    The card is serialised before either file is touched (a value JSON cannot hold, NaN or inf
    included, raises and leaves the folder as it was), and each file is written whole
    (``write_whole``): never a half-written card, nor a new model beside a card that fails."""
    from harness.report.run_report import write_whole
    card = dict(card)
    card["schema"] = CARD_SCHEMA
    card["file"] = "model.tflite"
    card["size_bytes"] = len(tflite_bytes)
    card["sha256"] = hashlib.sha256(tflite_bytes).hexdigest()
    text = json.dumps(card, indent=2, sort_keys=True, allow_nan=False) + "\n"   # NaN: ValueError
    os.makedirs(model_dir, exist_ok=True)
    write_whole(os.path.join(model_dir, "model.tflite"), bytes(tflite_bytes))
    write_whole(os.path.join(model_dir, "card.json"), text)
    return card
