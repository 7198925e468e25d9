"""int8 kernels where the int32 arithmetic of TFLite's reference kernels overflows: the pure kernel against
LiteRT's reference interpreter (and, where both define the same result, the host-compiled AVR C kernel).

A fully-connected layer whose bias plus accumulator leaves int32 wraps in C (LiteRT and the C kernel agree);
one whose real multiplier s_in * s_w / s_out is far above 1 (``shift > 0``) requantizes to a value beyond int32,
which LiteRT's single-rounding reference kernel returns as INT32_MIN before adding the output zero point in
int32."""
import numpy as np
import pytest

from harness.training.c_kernel import HostCPolicy
from harness.training.tflite_builder import TfliteBuilder
from onboard.policy import int8_pure
from onboard.policy.policy import make_policy

ALL_INT8 = list(range(-128, 128))


def _fc(s_out, weights, bias, zp_out=0, s_in=1.0, s_w=1.0, act="NONE"):
    n_out, n_in = len(weights), len(weights[0])
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, n_in], "int8", scale=s_in, zero_point=0)
    w = b.add_tensor("w", [n_out, n_in], "int8", data=np.array(weights), scale=s_w)
    bt = b.add_tensor("b", [n_out], "int32", data=np.array(bias), scale=np.float32(s_in) * np.float32(s_w))
    y = b.add_tensor("y", [1, n_out], "int8", scale=s_out, zero_point=zp_out)
    b.add_op("FULLY_CONNECTED", [x, w, bt], [y], activation=act)
    return b.finish([x], [y])


def _outputs(policy, data_rows):
    return [policy.run([row])[0] for row in data_rows]


@pytest.mark.parametrize("bias", [2 ** 31 - 1, 2 ** 31 - 100, -2 ** 31, -2 ** 31 + 100])
def test_bias_plus_accumulator_wraps_in_int32_like_litert_and_c(bias):
    """acc + bias = 2**31 - 1 + 127 is -2**31 + 126 in C's int32 (a large negative output), not 2**31 + 126."""
    data = _fc(2.0, [[1]], [bias])
    rows = [[x] for x in ALL_INT8]
    ref = _outputs(make_policy(data, None, "litert"), rows)
    assert _outputs(make_policy(data, None, "pure"), rows) == ref
    assert _outputs(HostCPolicy(data), rows) == ref


@pytest.mark.parametrize("zp_out", [-5, 0, 7])
@pytest.mark.parametrize("s_out", [2.0 ** -20, 2.0 ** -8, 1e-6])
def test_requantized_value_beyond_int32_matches_litert(s_out, zp_out):
    """Real multiplier 2**20 (shift 21): an accumulator of 4096 scales to 2**32, beyond int32. LiteRT gives
    the output's minimum for it (zero point >= 0) or its maximum (zero point < 0: INT32_MIN + zp wraps)."""
    data = _fc(s_out, [[1], [127], [-128], [3]], [0, 4000, -5000, 2 ** 31 - 300], zp_out=zp_out)
    rows = [[x] for x in ALL_INT8]
    assert _outputs(make_policy(data, None, "pure"), rows) == _outputs(make_policy(data, None, "litert"), rows)


def test_requantized_value_beyond_int32_random_models_match_litert():
    rng = np.random.default_rng(5)
    for _ in range(6):
        n_in, n_out = 3, 5
        w = rng.integers(-128, 128, (n_out, n_in)).tolist()
        bias = rng.integers(-2 ** 31, 2 ** 31, n_out).tolist()
        data = _fc(float(rng.choice([2.0 ** -12, 3e-5, 1e-3])), w, bias, zp_out=int(rng.integers(-20, 20)),
                   act=str(rng.choice(["NONE", "RELU"])))
        rows = rng.integers(-128, 128, (64, n_in)).tolist()
        assert _outputs(make_policy(data, None, "pure"), rows) == _outputs(make_policy(data, None, "litert"), rows)


def test_single_rounding_requantize_int32_edges():
    mbqm = int8_pure.multiply_by_quantized_multiplier
    assert mbqm(4096, 1 << 30, 21) == int8_pure.INT32_MIN          # 2**32: beyond int32
    assert mbqm(2047, 1 << 30, 21) == 2047 << 20                   # fits: unchanged
    assert mbqm(2048, 1 << 30, 21) == int8_pure.INT32_MIN          # 2**31: beyond int32
    assert mbqm(-2048, 1 << 30, 21) == int8_pure.INT32_MIN         # exactly INT32_MIN fits
    assert mbqm(2 ** 31 + 5, 1 << 30, 0) == mbqm(-2 ** 31 + 5, 1 << 30, 0)   # the accumulator wraps first
    assert int8_pure.wrap_int32(2 ** 31) == -2 ** 31 and int8_pure.wrap_int32(-2 ** 31 - 1) == 2 ** 31 - 1


@pytest.mark.micropython
def test_int32_edges_in_micropython_match_litert():
    """The same wrap / beyond-int32 arithmetic inside real MicroPython (its small ints turn into big ints)."""
    import base64
    import json

    from harness.sim.micropython import available, onboard_files, run_micropython
    if not available():
        pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
    data = _fc(2.0 ** -20, [[1], [127], [-128], [3]], [2 ** 31 - 1, 4000, -5000, 2 ** 31 - 300], zp_out=-5)
    rows = [[x] for x in ALL_INT8]
    files = onboard_files()
    files["/lib/_model_data.py"] = "B64 = %r\nINPUTS = %r\n" % (base64.b64encode(data).decode(), json.dumps(rows))
    code = ("import binascii, json\nfrom onboard.policy.policy import PurePolicy\nimport _model_data\n"
            "policy = PurePolicy(binascii.a2b_base64(_model_data.B64.encode()))\n"
            "for x in json.loads(_model_data.INPUTS):\n    print('OUT ' + json.dumps(policy.run([x])[0]))\n")
    out = run_micropython(code, files)
    mp = [json.loads(line[4:]) for line in out.splitlines() if line.startswith("OUT ")]
    assert mp == _outputs(make_policy(data, None, "litert"), rows)
