"""Pure int8 kernel: dilated CONV_2D + residual ADD (the grading FCN's ops), CPython and MicroPython.

The model is ``residual_case_model()`` of tests/grading/test_grading_loop.py (int8 [1, 5, 5, 2]
-> CONV_2D 3x3 dilation 2 SAME RELU -> ADD(input, conv) RELU), embedded as base64 because
only the case files travel to MicroPython; that test checks the bytes still equal the
builder and that LiteRT's reference ADD gives the same integers. golden_* outputs must be
identical in both interpreters.
"""
import binascii

from onboard.policy import int8_pure
from onboard.policy import tflite_pure

RESIDUAL_MODEL_B64 = (
    "DAAAAFRGTDMAAAAAfv///ywAAAAQAAAANAAAADgAAAADAAAAEwAAAHJlc2lkdWFsIGNhc2UgbW9kZWwAAwAAAJwDAABgAwAA"
    "PAMAAAEAAABMAAAAAgAAACgAAAAQAAAAAAAKAAgAAAAAAAQACgAAAAIAAAAMAA4ADQAAAAgABAAMAAAAAwAAAAMAAAAAAw4A"
    "GAAUABAADAAIAAQADgAAABQAAAAsAAAAGAAAABwAAAAsAAAABAAAAG1haW4AAAAAAQAAAAQAAAABAAAAAAAAAAIAAAB8AAAA"
    "LAAAAAUAAABIAgAAzAEAAGABAAAIAQAAtAAAAAAADgAaABQAEAAMAAsABAAOAAAAHAAAAAAAAAscAAAAIAAAAAEAAAAAAAYA"
    "CAAHAAYAAAAAAAABAQAAAAQAAAACAAAAAAAAAAMAAAAAAA4AFAAAABAADAALAAQADgAAACAAAAAAAAABMAAAADQAAAAQABgA"
    "AAAUABAADwAIAAQAEAAAAAIAAAACAAAAAAAAAQEAAAABAAAAAQAAAAMAAAADAAAAAAAAAAEAAAACAAAAiv7//xAAAABAAAAA"
    "AAAACSQAAAB8/v//CAAAABAAAAABAAAAgP////////8BAAAAKVyPPQQAAAABAAAABQAAAAUAAAACAAAAAQAAAHkAAADa/v//"
    "EAAAAEAAAAAAAAAJJAAAAMz+//8IAAAAEAAAAAEAAACA/////////wEAAADNzEw9BAAAAAEAAAAFAAAABQAAAAIAAAAEAAAA"
    "Y29udgAAAACm////FAAAAEQAAAACAAAAAAAAAjAAAAAk////CAAAABgAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAIAAACCqPs5"
    "Yb68OQEAAAACAAAABgAAAGNvbnYvYgAAAAAOABgAFAATAAwACAAEAA4AAAAUAAAAVAAAAAEAAAAAAAAJNAAAAIz///8IAAAA"
    "HAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIAAACmm0Q8vHQTPAQAAAACAAAAAwAAAAMAAAACAAAABgAAAGNvbnYvdwAA"
    "AAAOABQAEAAPAAAACAAEAA4AAAAcAAAATAAAAAAAAAkwAAAADAAMAAAAAAAIAAQADAAAAAgAAAAQAAAAAQAAAPf/////////"
    "AQAAAArXIz0EAAAAAQAAAAUAAAAFAAAAAgAAAAEAAAB4AAAA5v///wQAAAAIAAAA4v///2sBAAAAAAAAAAAGAAgABAAGAAAA"
    "BAAAACQAAADNSOMb9zXYl8whH3u+7HKdM3VqLWSzQSwCfli2e1rgM0i5w7AAAAAABAAEAAQAAAA="
)

N_VALUES = 50          # 5 x 5 x 2


def _model():
    return binascii.a2b_base64(RESIDUAL_MODEL_B64.encode())


def _inputs(k):
    if k == 0:
        return [-9] * N_VALUES                     # the zero point: the conv sees zeros
    if k == 1:
        return [127 if i % 2 else -128 for i in range(N_VALUES)]
    return [((i * 37 + k * 11) % 256) - 128 for i in range(N_VALUES)]


def golden_residual_outputs():
    graph = int8_pure.Int8Graph(_model())
    out = []
    for k in range(6):
        out.extend(graph.invoke([_inputs(k)])[0])
    return out


def golden_add_multipliers():
    graph = int8_pure.Int8Graph(_model())
    add = graph.layers[1]
    return [add.m1[0], add.m1[1], add.m2[0], add.m2[1], add.m_out[0], add.m_out[1], add.act_min, add.act_max]


def test_reader_sees_dilated_conv_and_add():
    m = tflite_pure.read_model(_model())
    ops = [op["op"] for op in m["operators"]]
    assert ops == ["CONV_2D", "ADD"]
    assert m["operators"][0]["options"]["dilation_h"] == 2
    assert m["operators"][1]["options"]["activation"] == "RELU"


def test_add_output_is_relu_clamped():
    graph = int8_pure.Int8Graph(_model())
    for k in range(4):
        for v in graph.invoke([_inputs(k)])[0]:
            assert -128 <= v <= 127


def test_zero_point_input_gives_a_constant_map_per_channel():
    # every tap (padding included) contributes w * 0, so each channel is relu(bias) rescaled,
    # the same at all 25 positions
    graph = int8_pure.Int8Graph(_model())
    out = graph.invoke([_inputs(0)])[0]
    for ch in range(2):
        assert len(set(out[ch::2])) == 1


def test_wrong_input_length_is_refused():
    graph = int8_pure.Int8Graph(_model())
    try:
        graph.invoke([[0] * (N_VALUES - 1)])
    except int8_pure.InputError:
        return
    raise AssertionError("short input accepted")
