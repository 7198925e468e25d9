"""Small deterministic test models that exercise every operator of the int8 kernel.

``op_coverage_model()``: float32 [1, 16] -> QUANTIZE -> RESHAPE [1, 4, 4, 1] -> CONV_2D
(2 channels, 3x3, SAME, dilation 1, RELU6, per-channel) -> CONV_2D (3 channels, 2x2, VALID,
stride 2, RELU; [1, 2, 2, 3]) -> CONV_2D (2 channels, 3x3, SAME, dilation 2, NONE; [1, 2, 2, 2])
-> RESHAPE [1, 8] -> FULLY_CONNECTED per-tensor (RELU_N1_TO_1) -> TANH -> FULLY_CONNECTED
per-channel (NONE) -> LOGISTIC -> DEQUANTIZE -> float32 [1, 4]. Its bytes are embedded in
``tests/micropython/cases/test_policy_int8.py`` (a test checks they still match this builder).

``chain_model(activations)``: int8 7 -> 12 -> 5 FULLY_CONNECTED chain with the given fused
activations and optional TANH/LOGISTIC after the first layer (for the C kernel tests).
"""
import numpy as np

from harness.training.tflite_builder import TfliteBuilder


def _w(rng, shape):
    return rng.integers(-127, 128, shape)


def op_coverage_model(seed=5):
    rng = np.random.default_rng(seed)
    b = TfliteBuilder("op coverage test model")
    x_f = b.add_tensor("input_float", [1, 16], "float32")
    x_q = b.add_tensor("input_q", [1, 16], "int8", scale=0.05, zero_point=-3)
    b.add_op("QUANTIZE", [x_f], [x_q])
    img = b.add_tensor("image", [1, 4, 4, 1], "int8", scale=0.05, zero_point=-3)
    b.add_op("RESHAPE", [x_q], [img], new_shape=[1, 4, 4, 1])
    # conv 1: 2 channels, 3x3, SAME, RELU6, per-channel
    w1_s = np.array([0.011, 0.007], dtype=np.float32)
    w1 = b.add_tensor("conv1/w", [2, 3, 3, 1], "int8", data=_w(rng, (2, 3, 3, 1)), scale=w1_s)
    b1 = b.add_tensor("conv1/b", [2], "int32", data=rng.integers(-300, 300, 2),
                      scale=(np.float32(0.05) * w1_s).astype(np.float32))
    c1 = b.add_tensor("conv1", [1, 4, 4, 2], "int8", scale=0.03, zero_point=-128)
    b.add_op("CONV_2D", [img, w1, b1], [c1], padding="SAME", stride_w=1, stride_h=1,
             activation="RELU6")
    # conv 2: 3 channels, 2x2, VALID, stride 2, dilation 1, RELU -> [1, 2, 2, 3]
    w2_s = np.array([0.02, 0.015, 0.01], dtype=np.float32)
    w2 = b.add_tensor("conv2/w", [3, 2, 2, 2], "int8", data=_w(rng, (3, 2, 2, 2)), scale=w2_s)
    b2 = b.add_tensor("conv2/b", [3], "int32", data=rng.integers(-500, 500, 3),
                      scale=(np.float32(0.03) * w2_s).astype(np.float32))
    c2 = b.add_tensor("conv2", [1, 2, 2, 3], "int8", scale=0.06, zero_point=-128)
    b.add_op("CONV_2D", [c1, w2, b2], [c2], padding="VALID", stride_w=2, stride_h=2,
             activation="RELU")
    # conv 3: dilated 3x3 (dilation 2) SAME on a 2x2 map, 2 channels, NONE
    w3_s = np.array([0.01, 0.012], dtype=np.float32)
    w3 = b.add_tensor("conv3/w", [2, 3, 3, 3], "int8", data=_w(rng, (2, 3, 3, 3)), scale=w3_s)
    b3 = b.add_tensor("conv3/b", [2], "int32", data=rng.integers(-500, 500, 2),
                      scale=(np.float32(0.06) * w3_s).astype(np.float32))
    c3 = b.add_tensor("conv3", [1, 2, 2, 2], "int8", scale=0.08, zero_point=5)
    b.add_op("CONV_2D", [c2, w3, b3], [c3], padding="SAME", stride_w=1, stride_h=1,
             dilation_w=2, dilation_h=2)
    flat = b.add_tensor("flat", [1, 8], "int8", scale=0.08, zero_point=5)
    b.add_op("RESHAPE", [c3], [flat], new_shape=[1, 8])
    # FC per-tensor, RELU_N1_TO_1
    f1 = b.add_tensor("fc1/w", [6, 8], "int8", data=_w(rng, (6, 8)), scale=0.004)
    f1b = b.add_tensor("fc1/b", [6], "int32", data=rng.integers(-800, 800, 6),
                       scale=float(np.float32(0.08) * np.float32(0.004)))
    h1 = b.add_tensor("fc1", [1, 6], "int8", scale=0.009, zero_point=2)
    b.add_op("FULLY_CONNECTED", [flat, f1, f1b], [h1], activation="RELU_N1_TO_1")
    t1 = b.add_tensor("tanh", [1, 6], "int8", scale=1.0 / 128, zero_point=0)
    b.add_op("TANH", [h1], [t1])
    # FC per-channel, NONE
    f2_s = np.array([0.01, 0.02, 0.015, 0.005], dtype=np.float32)
    f2 = b.add_tensor("fc2/w", [4, 6], "int8", data=_w(rng, (4, 6)), scale=f2_s)
    f2b = b.add_tensor("fc2/b", [4], "int32", data=rng.integers(-2000, 2000, 4),
                       scale=(np.float32(1.0 / 128) * f2_s).astype(np.float32))
    h2 = b.add_tensor("fc2", [1, 4], "int8", scale=0.02, zero_point=-10)
    b.add_op("FULLY_CONNECTED", [t1, f2, f2b], [h2])
    s2 = b.add_tensor("logistic", [1, 4], "int8", scale=1.0 / 256, zero_point=-128)
    b.add_op("LOGISTIC", [h2], [s2])
    y = b.add_tensor("output_float", [1, 4], "float32")
    b.add_op("DEQUANTIZE", [s2], [y])
    return b.finish([x_f], [y])


def chain_model(first_activation="RELU", lut=None, last_activation="NONE", per_channel=True,
                seed=3, extra_op=None):
    """int8 7 -> 12 -> 5 chain; ``lut`` 'TANH'/'LOGISTIC' after layer 1; ``extra_op`` appends
    an operator the C kernel lacks (e.g. 'SOFTMAX') for the refusal tests."""
    rng = np.random.default_rng(seed)
    b = TfliteBuilder("chain test model")
    x = b.add_tensor("input", [1, 7], "int8", scale=0.04, zero_point=-7)
    cur, cur_s = x, np.float32(0.04)
    for li, (n_in, n_out, act) in enumerate([(7, 12, first_activation), (12, 5, last_activation)]):
        ws = (rng.uniform(0.002, 0.02, n_out) if per_channel else np.array([0.01])).astype(np.float32)
        w = b.add_tensor("fc%d/w" % li, [n_out, n_in], "int8", data=_w(rng, (n_out, n_in)), scale=ws)
        bias = b.add_tensor("fc%d/b" % li, [n_out], "int32", data=rng.integers(-3000, 3000, n_out),
                            scale=(cur_s * ws).astype(np.float32))
        o = b.add_tensor("fc%d" % li, [1, n_out], "int8", scale=0.05 + 0.02 * li,
                         zero_point=-128 if act in ("RELU", "RELU6") else 3)
        b.add_op("FULLY_CONNECTED", [cur, w, bias], [o], activation=act)
        cur, cur_s = o, np.float32(0.05 + 0.02 * li)
        if li == 0 and lut is not None:
            scale, zp = (1.0 / 128, 0) if lut == "TANH" else (1.0 / 256, -128)
            t = b.add_tensor(lut.lower(), [1, n_out], "int8", scale=scale, zero_point=zp)
            b.add_op(lut, [cur], [t])
            cur, cur_s = t, np.float32(scale)
    if extra_op is not None:
        t = b.add_tensor("extra", [1, 5], "int8", scale=1.0 / 256, zero_point=-128)
        b.add_op(extra_op, [cur], [t])
        cur = t
    return b.finish([x], [cur])


def gate_case_model():
    """The GRU state update in miniature (int8, 16 lanes): inputs a (the gate pre-activation, scale
    0.05) and h (the state, 1/128); ``z = LOGISTIC(a)``, ``zh = MUL(z, h)``, ``y = ADD(zh, h)`` and
    ``m = MUL(h, h)`` at an off-grid output scale. Embedded in tests/micropython/cases/test_policy_gate.py."""
    b = TfliteBuilder("gate case model")
    a = b.add_tensor("a", [1, 16], "int8", scale=0.05, zero_point=7)
    h = b.add_tensor("h", [1, 16], "int8", scale=1.0 / 128.0, zero_point=0)
    z = b.add_tensor("z", [1, 16], "int8", scale=1.0 / 256.0, zero_point=-128)
    b.add_op("LOGISTIC", [a], [z])
    zh = b.add_tensor("zh", [1, 16], "int8", scale=1.0 / 128.0, zero_point=0)
    b.add_op("MUL", [z, h], [zh])
    y = b.add_tensor("y", [1, 16], "int8", scale=0.011, zero_point=20)
    b.add_op("ADD", [zh, h], [y])
    m = b.add_tensor("m", [1, 16], "int8", scale=0.0037, zero_point=-100)
    b.add_op("MUL", [h, h], [m], activation="RELU")
    return b.finish([a, h], [y, m])
