"""The grading FCN's int8 export keeps the bias of a filter whose weights are ~0 (a channel whose incoming
weights decayed but whose bias did not): before, its int32 bias (scale s_in * s_w, s_w ~ 1e-11) saturated at
2^31 - 1 steps, the channel read ~0 instead of its bias, and the logits were some 130 output steps off."""
import numpy as np

from harness.training.grading_policy import export_int8 as ex
from onboard.policy.policy import make_policy

C, ROWS, COLS = 3, 6, 6


def _net(rng):
    w = {"stem.weight": rng.normal(0.0, 0.4, (C, 1, 3, 3)), "stem.bias": rng.normal(0.0, 0.1, C),
         "body.0.weight": rng.normal(0.0, 0.3, (C, C, 3, 3)), "body.0.bias": rng.normal(0.0, 0.1, C),
         "body.1.weight": rng.normal(0.0, 0.3, (C, C, 3, 3)), "body.1.bias": rng.normal(0.0, 0.1, C),
         "head.weight": rng.normal(0.0, 0.5, (2, C, 1, 1)), "head.bias": np.zeros(2)}
    return w, {"layers": 2, "dilation": 1, "input_scale": 1.0}


def _max_error_steps(w, net, crops):
    data, info = ex.build_int8(w, net, crops)
    pol = make_policy(data, None, "pure")
    s, zp, o = info["input"]["scale"], info["input"]["zero_point"], info["output"]
    worst = 0.0
    for crop in crops[:4]:
        q = [int(np.clip(np.round(v / s) + zp, -128, 127)) for v in crop.reshape(-1)]
        y = o["scale"] * (np.array(pol.run([q])[0]) - o["zero_point"])
        f = ex.float_forward(w, net, crop)                                  # [2, rows, cols]
        worst = max(worst, float(np.abs(y.reshape(ROWS, COLS, 2).transpose(2, 0, 1) - f).max()))
    return worst / o["scale"]


def test_a_filter_with_near_zero_weights_keeps_its_bias():
    rng = np.random.default_rng(0)
    w, net = _net(rng)
    crops = rng.uniform(-0.3, 0.3, (20, ROWS, COLS)).astype(np.float32)
    ordinary = _max_error_steps(w, net, crops)
    w["stem.weight"][1] = 1e-9 * rng.normal(size=(1, 3, 3))
    w["stem.bias"][1] = 0.5
    decayed = _max_error_steps(w, net, crops)
    assert ordinary < 5.0 and decayed < 5.0, (ordinary, decayed)
