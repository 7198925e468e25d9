"""Pure int8 kernel (onboard.policy): runs under CPython (pytest) and inside MicroPython.

The model below is ``harness.training.fixtures.op_coverage_model()`` (QUANTIZE, RESHAPE,
CONV_2D SAME/VALID/dilated, FULLY_CONNECTED per-tensor and per-channel, fused RELU6/RELU/
RELU_N1_TO_1, TANH, LOGISTIC, DEQUANTIZE), embedded as base64 because only the case files
travel to MicroPython; tests/unit/test_policy_kernels.py checks it still equals the builder.
golden_* outputs must be identical in both interpreters.
"""
import binascii

from onboard.policy import int8_pure
from onboard.policy import tflite_pure
from onboard.policy.policy import PurePolicy, argmax

OP_COVERAGE_MODEL_B64 = (
    "CAAAAFRGTDPm/v//MAAAABAAAABYAAAAXAAAAAMAAAAWAAAAb3AgY292ZXJhZ2UgdGVzdCBtb2RlbAAACwAAAJwNAABwDQAA"
    "TA0AABgNAAD0DAAAoAwAAHwMAAA4DAAABAwAANALAACsCwAAAQAAAMAAAAAHAAAAnAAAAIAAAABgAAAAQAAAACwAAAAYAAAA"
    "BAAAAMD///8GAAAAAgAAAAAAAAbQ////DgAAAAIAAAAAAAAO4P///xwAAAACAAAAAAAAHPD///8JAAAABQAAAAAAAAkMABAA"
    "DwAAAAgABAAMAAAAAwAAAAMAAAAAAAADDAAMAAsAAAAAAAQADAAAABYAAAAAAAAWDAAOAA0AAAAIAAQADAAAAHIAAAACAAAA"
    "AHIOABgAFAAQAAwACAAEAA4AAAAUAAAALAAAABgAAAAcAAAAUAAAAAQAAABtYWluAAAAAAEAAAAVAAAAAQAAAAAAAAALAAAA"
    "BAMAALACAABQAgAA/AEAAKQBAABkAQAAIAEAAOwAAACoAAAAhAAAAGAAAAAWAAAAVAoAAOwJAACECQAAHAkAALAIAABYCAAA"
    "4AcAAHQHAAAcBwAAtAYAAFgGAAAABgAArAUAAFQFAAAABQAAsAQAAFwEAADkAwAAcAMAACADAADMAgAAnAIAAIr///8MAAAA"
    "EAAAAAYAAAABAAAAFQAAAAEAAAAUAAAAqv///wwAAAAQAAAABQAAAAEAAAAUAAAAAQAAABMAAAAi/v//FAAAAAAAAAgQAAAA"
    "FAAAAAMAAABw9P//AQAAABMAAAADAAAAEAAAABEAAAASAAAAAAAKABAADAAIAAQACgAAAAwAAAAQAAAABAAAAAEAAAAQAAAA"
    "AQAAAA8AAAAAAA4AGgAUABAADAALAAQADgAAABwAAAAAAAAIHAAAACAAAAADAAAAAAAGAAgABwAGAAAAAAAAAgEAAAAPAAAA"
    "AwAAAAwAAAANAAAADgAAANL+//8UAAAAAAAAESAAAAAkAAAAAQAAAEr1//8EAAAAAgAAAAEAAAAIAAAAAQAAAAwAAAABAAAA"
    "CwAAAA7///8kAAAAAAAAATAAAAA0AAAAAgAAABAAFAAAABAADAAAAAgABAAQAAAAAgAAAAIAAAABAAAAAQAAAAEAAAALAAAA"
    "AwAAAAgAAAAJAAAACgAAAGL///8gAAAAAAAAASwAAAAwAAAAAgAAAAwAFAATAAwACAAHAAwAAAAAAAABAgAAAAIAAAAAAAAB"
    "AQAAAAgAAAADAAAABQAAAAYAAAAHAAAAsv///yAAAAAAAAABKAAAACwAAAACAAAADAAQAAAADAAIAAcADAAAAAAAAAMBAAAA"
    "AQAAAAEAAAAFAAAAAwAAAAIAAAADAAAABAAAAAAADgAYABQAEAAMAAsABAAOAAAAFAAAAAAAABEoAAAALAAAAAEAAACG9v//"
    "BAAAAAQAAAABAAAABAAAAAQAAAABAAAAAQAAAAIAAAABAAAAAQAAAAAACgAMAAAACAAEAAoAAAAIAAAADAAAAAEAAAABAAAA"
    "AQAAAAAAAACo+P//FAAAAAQAAAACAAAAAQAAAAQAAAAMAAAAb3V0cHV0X2Zsb2F0AAAAADr5//8QAAAAOAAAAAAAAAkkAAAA"
    "LPn//wgAAAAQAAAAAQAAAID/////////AQAAAAAAgDsCAAAAAQAAAAQAAAAIAAAAbG9naXN0aWMAAAAAivn//xAAAAA8AAAA"
    "AAAACSgAAAB8+f//CAAAABQAAAABAAAA9v////////8AAAAAAQAAAArXozwCAAAAAQAAAAQAAAADAAAAZmMyAJ76//8UAAAA"
    "XAAAAAoAAAAAAAACSAAAAMz5//8IAAAAKAAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQAAAAK16M4"
    "CtcjOY/C9TgK1yM4AQAAAAQAAAAFAAAAZmMyL2IAAAAO+///FAAAAGAAAAAJAAAAAAAACUgAAAA8+v//CAAAACgAAAAEAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAACtcjPArXozyPwnU8CtejOwIAAAAEAAAABgAAAAUAAABmYzIv"
    "dwAAALr6//8QAAAAPAAAAAAAAAkoAAAArPr//wgAAAAUAAAAAQAAAAAAAAAAAAAAAAAAAAEAAAAAAAA8AgAAAAEAAAAGAAAA"
    "BAAAAHRhbmgAAAAACvv//xAAAAA8AAAAAAAACSgAAAD8+v//CAAAABQAAAABAAAAAgAAAAAAAAAAAAAAAQAAALx0EzwCAAAA"
    "AQAAAAYAAAADAAAAZmMxAB78//8UAAAAPAAAAAgAAAAAAAACKAAAAEz7//8IAAAAFAAAAAEAAAAAAAAAAAAAAAAAAAABAAAA"
    "rcWnOQEAAAAGAAAABQAAAGZjMS9iAAAAbvz//xQAAABAAAAABwAAAAAAAAkoAAAAnPv//wgAAAAUAAAAAQAAAAAAAAAAAAAA"
    "AAAAAAEAAABvEoM7AgAAAAYAAAAIAAAABQAAAGZjMS93AAAA+vv//xAAAAA8AAAAAAAACSgAAADs+///CAAAABQAAAABAAAA"
    "BQAAAAAAAAAAAAAAAQAAAArXoz0CAAAAAQAAAAgAAAAEAAAAZmxhdAAAAABK/P//EAAAAEAAAAAAAAAJJAAAADz8//8IAAAA"
    "EAAAAAEAAAAFAAAAAAAAAAEAAAAK16M9BAAAAAEAAAACAAAAAgAAAAIAAAAFAAAAY29udjMAAABm/f//FAAAAEQAAAAGAAAA"
    "AAAAAjAAAACU/P//CAAAABgAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAIAAABRSR06Yr48OgEAAAACAAAABwAAAGNvbnYzL2IA"
    "vv3//xQAAABQAAAABQAAAAAAAAkwAAAA7Pz//wgAAAAYAAAAAgAAAAAAAAAAAAAAAAAAAAAAAAACAAAACtcjPKabRDwEAAAA"
    "AgAAAAMAAAADAAAAAwAAAAcAAABjb252My93AFr9//8QAAAAQAAAAAAAAAkkAAAATP3//wgAAAAQAAAAAQAAAID/////////"
    "AQAAAI/CdT0EAAAAAQAAAAIAAAACAAAAAwAAAAUAAABjb252MgAAAHb+//8UAAAAVAAAAAQAAAAAAAACQAAAAKT9//8IAAAA"
    "JAAAAAMAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwAAAFFJHTr67es5UUmdOQEAAAADAAAABwAAAGNvbnYyL2IA"
    "3v7//xQAAABgAAAAAwAAAAAAAAlAAAAADP7//wgAAAAkAAAAAwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADAAAA"
    "CtejPI/CdTwK1yM8BAAAAAMAAAACAAAAAgAAAAIAAAAHAAAAY29udjIvdwCK/v//EAAAAEAAAAAAAAAJJAAAAHz+//8IAAAA"
    "EAAAAAEAAACA/////////wEAAACPwvU8BAAAAAEAAAAEAAAABAAAAAIAAAAFAAAAY29udjEAAACm////FAAAAEQAAAACAAAA"
    "AAAAAjAAAADU/v//CAAAABgAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAIAAADgLRA6NYC3OQEAAAACAAAABwAAAGNvbnYxL2IA"
    "AAAOABgAFAATAAwACAAEAA4AAAAUAAAAUAAAAAEAAAAAAAAJMAAAADz///8IAAAAGAAAAAIAAAAAAAAAAAAAAAAAAAAAAAAA"
    "AgAAAFg5NDxCYOU7BAAAAAIAAAADAAAAAwAAAAEAAAAHAAAAY29udjEvdwCq////EAAAAEQAAAAAAAAJKAAAAJz///8IAAAA"
    "FAAAAAEAAAD9/////////wAAAAABAAAAzcxMPQQAAAABAAAABAAAAAQAAAABAAAABQAAAGltYWdlAA4AFAAQAA8AAAAIAAQA"
    "DgAAABwAAABEAAAAAAAACTAAAAAMAAwAAAAAAAgABAAMAAAACAAAABAAAAABAAAA/f////////8BAAAAzcxMPQIAAAABAAAA"
    "EAAAAAcAAABpbnB1dF9xAAwADAAIAAAAAAAEAAwAAAAUAAAABAAAAAIAAAABAAAAEAAAAAsAAABpbnB1dF9mbG9hdABm/v//"
    "BAAAABAAAAANAgAAAAEAAMsGAADNAQAAAAAAAIb+//8EAAAAGAAAAE+dp9w2/Flx5+0OJfsadTzR7eengUrs2gAAAAAAAAAA"
    "AAAAALb+//8EAAAAGAAAAMECAAAcAQAAEgMAALsAAABlAQAAOf///wAAAAAAAAAAAAAAAOb+//8EAAAAMAAAAFj03npzLea2"
    "b8UOLb7RPrMscS8l93e52yQnnKoxVyNv4dVMi7Ky5KlMWOKINpwdrAAAAAAm////BAAAAAgAAABh/v//VwEAAAAAAAAAAAAA"
    "AAAAAEb///8EAAAANgAAAJHgLqBe17oLZWJfz4VHNUWBigHW8G60B9PMTqjRn6fIMxTzrExMvZDSpkwFAssCd71EhNFuXwAA"
    "AAAAAAAAAAAAAAAAlv///wQAAAAMAAAAdf///3sBAADG/v//AAAAAAAAAAC2////BAAAABgAAACxJ0C8yO/Eea5lTFie5SH+"
    "Ki0qkHUOZ8YAAAAAAAAAAAAAAADm////BAAAAAgAAAAt////KwEAAAAAAAAAAAYACAAEAAYAAAAEAAAAEgAAACxOhk/4BCHJ"
    "eo7H4hLpooyBjQAAAAAAAAQABAAEAAAA"
)


def _model():
    return binascii.a2b_base64(OP_COVERAGE_MODEL_B64.encode())


def _inputs(k):
    """Deterministic float inputs: a ramp, large values that saturate int8, zeros, halves."""
    if k == 0:
        return [0.0] * 16
    if k == 1:
        return [1e6 * (1 if i % 2 else -1) for i in range(16)]
    if k == 2:
        return [0.025 * (2 * i + 1) for i in range(16)]        # exact ties of the 0.05 scale
    return [((i * 37 + k * 11) % 23 - 11) * 0.173 for i in range(16)]


def golden_op_coverage_outputs():
    graph = int8_pure.Int8Graph(_model())
    out = []
    for k in range(8):
        out.extend(graph.invoke([_inputs(k)])[0])
    return out


def golden_quantize_multiplier():
    cases = [(0.05, 0.011, 0.03), (0.015748966, 0.0123, 0.0308), (1.0, 1.0, 0.3),
             (0.0078125, 0.004, 0.02), (3e-5, 2e-4, 7e-3), (0.5, 0.5, 1e-6)]
    out = []
    for a, b, c in cases:
        bits = [int8_pure.struct.unpack("<I", int8_pure.struct.pack("<f", v))[0] for v in (a, b, c)]
        m, s = int8_pure.quantize_multiplier(bits[0], bits[1], bits[2])
        out.extend([m, s])
    return out


def golden_requantize():
    out = []
    for x in (-2147483, -65536, -1001, -1, 0, 1, 999, 65535, 2147483):
        out.append(int8_pure.multiply_by_quantized_multiplier(x, 1518500250, -8))
        out.append(int8_pure.multiply_by_quantized_multiplier(x, 1073741824, -1))   # exact ties
        out.append(int8_pure.multiply_by_quantized_multiplier_double(x, 1518500250, -8))
        out.append(int8_pure.multiply_by_quantized_multiplier_double(x, 1073741824, -1))
    return out


def golden_op_coverage_double_rounding():
    graph = int8_pure.Int8Graph(_model(), "double")
    out = []
    for k in range(4):
        out.extend(graph.invoke([_inputs(k)])[0])
    return out


def golden_lut_tables():
    t = int8_pure.lut_int8(0.009, 2, 1.0 / 128, 0, int8_pure._tanh)
    s = int8_pure.lut_int8(0.02, -10, 1.0 / 256, -128, int8_pure._logistic)
    return t + s


def test_reader_sees_ops_and_io():
    m = tflite_pure.read_model(_model())
    ops = [op["op"] for op in m["operators"]]
    assert ops[0] == "QUANTIZE" and ops[-1] == "DEQUANTIZE"
    assert "CONV_2D" in ops and "TANH" in ops and "LOGISTIC" in ops
    assert m["tensors"][m["inputs"][0]]["shape"] == [1, 16]
    assert m["tensors"][m["outputs"][0]]["dtype"] == "float32"


def test_outputs_are_logistic_range():
    graph = int8_pure.Int8Graph(_model())
    for k in range(4):
        for v in graph.invoke([_inputs(k)])[0]:
            assert 0.0 <= v <= 1.0


def test_truncated_model_is_refused():
    data = _model()
    for n in (0, 7, 16, len(data) // 2, len(data) - 1):
        try:
            int8_pure.Int8Graph(data[:n])
        except ValueError:
            continue
        raise AssertionError("truncated model (%d bytes) was accepted" % n)


def test_bad_inputs_are_refused():
    policy = PurePolicy(_model())
    for bad in ([0.0] * 15, [float("nan")] + [0.0] * 15):
        try:
            policy.run([bad])
        except ValueError:
            continue
        raise AssertionError("bad input accepted: %r" % (bad,))
    assert policy.inferences == 0


def test_argmax_first_on_ties():
    assert argmax([3, 7, 7, 1]) == 1
    assert argmax([-128]) == 0
