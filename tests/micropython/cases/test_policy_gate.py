"""Pure int8 kernel: LOGISTIC -> MUL -> ADD (a GRU's state update) and a RELU MUL, CPython and MicroPython.

The model is ``gate_case_model()`` of harness/training/fixtures.py (inputs a: 16 gate
pre-activations, h: 16 state values on the 1/128 grid), embedded as base64 because only the
case files travel to MicroPython; tests/unit/test_policy_kernels.py checks the bytes still equal
the builder and that LiteRT's reference kernels give the same integers. golden_* outputs must be
identical in both interpreters (the MUL multiplier is computed in float32 steps, see
onboard/policy/int8_pure.py, _Mul).
"""
import binascii

from onboard.policy import int8_pure
from onboard.policy import tflite_pure

GATE_MODEL_B64 = (
    "CAAAAFRGTDNq////KAAAABAAAAAoAAAALAAAAAMAAAAPAAAAZ2F0ZSBjYXNlIG1vZGVsAAEAAACUAwAAAQAAAGwAAAADAAAA"
    "SAAAACgAAAAQAAAAAAAKAAgAAAAAAAQACgAAAAIAAAAMABAADwAAAAgABAAMAAAAEgAAAAIAAAAAAAASDAAOAA0AAAAIAAQA"
    "DAAAAA4AAAACAAAAAA4OABgAFAAQAAwACAAEAA4AAAAUAAAANAAAABgAAAAgAAAAPAAAAAQAAABtYWluAAAAAAIAAAAEAAAA"
    "BQAAAAIAAAAAAAAAAQAAAAQAAAD0AAAAtAAAAHAAAAAwAAAABgAAAHACAAAYAgAAzAEAAIABAAA0AQAA6AAAAAAADgAaABQA"
    "EAAMAAsABAAOAAAAHAAAAAAAABUcAAAAIAAAAAEAAAAAAAYACAAHAAYAAAAAAAABAQAAAAUAAAACAAAAAQAAAAEAAADO////"
    "FAAAAAAAAAsQAAAAFAAAAAIAAAC0/f//AQAAAAQAAAACAAAAAwAAAAEAAAAAAA4AGAAUABAADAALAAQADgAAABQAAAAAAAAV"
    "EAAAABQAAAABAAAA9P3//wEAAAADAAAAAgAAAAIAAAABAAAAAAAKAAwAAAAIAAQACgAAAAgAAAAMAAAAAQAAAAIAAAABAAAA"
    "AAAAAJr+//8QAAAAOAAAAAAAAAkkAAAAjP7//wgAAAAQAAAAAQAAAJz/////////AQAAALN7cjsCAAAAAQAAABAAAAABAAAA"
    "bQAAAOL+//8QAAAAOAAAAAAAAAkkAAAA1P7//wgAAAAQAAAAAQAAABQAAAAAAAAAAQAAAFg5NDwCAAAAAQAAABAAAAABAAAA"
    "eQAAACr///8QAAAAOAAAAAAAAAkkAAAAHP///wgAAAAQAAAAAQAAAAAAAAAAAAAAAQAAAAAAADwCAAAAAQAAABAAAAACAAAA"
    "emgAAHL///8QAAAAOAAAAAAAAAkkAAAAZP///wgAAAAQAAAAAQAAAID/////////AQAAAAAAgDsCAAAAAQAAABAAAAABAAAA"
    "egAAALr///8QAAAAOAAAAAAAAAkkAAAArP///wgAAAAQAAAAAQAAAAAAAAAAAAAAAQAAAAAAADwCAAAAAQAAABAAAAABAAAA"
    "aAAOABQAEAAPAAAACAAEAA4AAAAcAAAASAAAAAAAAAk0AAAADAAMAAAAAAAIAAQADAAAAAgAAAAUAAAAAQAAAAcAAAAAAAAA"
    "AAAAAAEAAADNzEw9AgAAAAEAAAAQAAAAAQAAAGEAAAAEAAQABAAAAA=="
)

N_VALUES = 16


def _model():
    return binascii.a2b_base64(GATE_MODEL_B64.encode())


def _inputs(k):
    """(a, h) for case k: extremes first, then a spread over the int8 range."""
    if k == 0:
        return [[-128] * N_VALUES, [127] * N_VALUES]
    if k == 1:
        return [[127] * N_VALUES, [-128] * N_VALUES]
    a = [((i * 53 + k * 29) % 256) - 128 for i in range(N_VALUES)]
    h = [((i * 71 + k * 17) % 256) - 128 for i in range(N_VALUES)]
    return [a, h]


def golden_gate_outputs():
    graph = int8_pure.Int8Graph(_model())
    out = []
    for k in range(8):
        y, m = graph.invoke(_inputs(k))
        out.extend(y)
        out.extend(m)
    return out


def golden_mul_multipliers():
    graph = int8_pure.Int8Graph(_model())
    return [v for layer in graph.layers if layer.op == "MUL" for v in layer.m]


def test_reader_sees_logistic_mul_add():
    m = tflite_pure.read_model(_model())
    assert [op["op"] for op in m["operators"]] == ["LOGISTIC", "MUL", "ADD", "MUL"]
    assert m["operators"][3]["options"]["activation"] == "RELU"


def test_relu_mul_output_is_clamped_at_its_zero_point():
    graph = int8_pure.Int8Graph(_model())
    for k in range(8):
        for v in graph.invoke(_inputs(k))[1]:
            assert -100 <= v <= 127


def test_full_gate_keeps_the_state():
    # a = 127: z = sigma(6) ~ 0.9975 (255 of 256 steps), so zh ~ h and y = 2h on the 0.011 grid
    graph = int8_pure.Int8Graph(_model())
    h = [-64, -32, 0, 32, 64] + [0] * (N_VALUES - 5)
    y, _ = graph.invoke([[127] * N_VALUES, h])
    for hv, yv in zip(h[:5], y[:5]):
        expect = 2.0 * hv / 128.0 / 0.011 + 20
        assert abs(yv - expect) <= 1.5, (hv, yv, expect)


def test_wrong_input_count_is_refused():
    graph = int8_pure.Int8Graph(_model())
    try:
        graph.invoke([[0] * N_VALUES])
    except int8_pure.InputError:
        return
    raise AssertionError("one input accepted for a two-input model")
