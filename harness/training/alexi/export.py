"""Export of a trained Alexi network: int8 ``.tflite`` + card (``harness.training.quantize``) and the float
layers (``float_layers.npz``: the same network folded, for the int8-vs-float comparison without torch).

The card's ``inputs[0].normalization`` is the thesis's min-max normalisation (6.2.2: mean = (X_max + X_min)/2,
std = (X_max - X_min)/2), ``outputs[0].normalization`` the same for the target (prediction = output * std +
mean); ``alexi`` holds the preprocessing recipe and the ranges.
"""
import os

import numpy as np

from harness.data_files import npz_bytes
from harness.report.run_report import write_whole
from harness.training.quantize import build_mlp_int8, write_model_dir

from harness.sim.alexi.nets import FLOAT_FILE, load_float_layers  # noqa: F401 (the reader lives with the runtime)


def save_float_layers(model_dir, layers):
    """Write ``model_dir/float_layers.npz`` whole (``write_whole``: never half of one)."""
    data = {}
    for i, (w, b, act) in enumerate(layers):
        data["w%d" % i] = np.asarray(w, dtype=np.float64)
        data["b%d" % i] = np.asarray(b, dtype=np.float64)
        data["act%d" % i] = np.array(act)
    blob = npz_bytes(data)
    os.makedirs(model_dir, exist_ok=True)
    write_whole(os.path.join(model_dir, FLOAT_FILE), blob)


def export(model_dir, name, description, layers, calib_x, in_norm, out_norm, features, output, alexi, training,
           metrics=None, input_range=None):
    """Write ``model_dir/{model.tflite, card.json, float_layers.npz}``; returns the card.

    ``calib_x``: representative inputs in the network's (normalised) space; ``in_norm``/``out_norm``:
    (mean list, std list); ``features``: [{name, unit, meaning}] per input; ``output``: {name, unit, meaning}
    of the (first) output value."""
    tfl, info = build_mlp_int8(layers, calib_x, per_channel=True, description=description, input_range=input_range)
    n_in = int(np.asarray(calib_x).shape[1])
    n_out = int(np.asarray(layers[-1][0]).shape[0])
    ops = ["FULLY_CONNECTED"] + (["TANH"] if any(a == "TANH" for _, _, a in layers) else [])
    card = {
        "name": name, "version": 1, "description": description, "op_set": ops,
        "inputs": [{"name": "input", "shape": [1, n_in], "dtype": "int8",
                    "quantization": {"scale": info["input"]["scale"], "zero_point": info["input"]["zero_point"]},
                    "features": features,
                    "normalization": {"mean": [float(v) for v in in_norm[0]], "std": [float(v) for v in in_norm[1]]}}],
        "outputs": [dict(output, name="output", shape=[1, n_out], dtype="int8",
                         quantization={"scale": info["output"]["scale"], "zero_point": info["output"]["zero_point"]},
                         normalization={"mean": [float(v) for v in out_norm[0]],
                                        "std": [float(v) for v in out_norm[1]]})],
        "alexi": alexi, "training": training, "metrics": metrics or {},
    }
    save_float_layers(model_dir, layers)
    return write_model_dir(model_dir, tfl, card)
