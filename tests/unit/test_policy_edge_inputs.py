"""Policy (every backend's shared base, LiteRT's vectorised float interface, the pure kernel, model cards) at
the edges of its input: observations that are not sequences of numbers, indices naming no input/output, card
fields of the wrong type, QUANTIZE of a float beyond float32 after scaling, and zero quantization scales. Each
raises a clear ValueError subclass (InputError, CardMismatchError, UnsupportedModelError) at the call or at
load, never a TypeError / OverflowError / ZeroDivisionError from deep inside."""
import copy
import os

import numpy as np
import pytest

from harness.training.tflite_builder import TfliteBuilder
from onboard.policy import load_policy
from onboard.policy.card import CardMismatchError
from onboard.policy.int8_pure import InputError, UnsupportedModelError
from onboard.policy.policy import load_model_dir, make_policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DQN_DIR = os.path.join(REPO, "models", "pocket-dqn")
BACKENDS = ["pure", "litert"]


@pytest.fixture(scope="module")
def dqn():
    return load_model_dir(DQN_DIR)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("obs", [5, None, 2.5])
def test_observation_that_is_not_a_sequence_raises_input_error(dqn, backend, obs):
    policy = make_policy(dqn[0], dqn[1], backend)
    for call in (policy.predict, policy.act, policy.quantize_input):
        with pytest.raises(InputError, match="must be a sequence of 7 numbers"):
            call(obs)
    assert policy.inferences == 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", [None, [1.0], 1j, "x", 10 ** 400])
def test_observation_value_that_is_not_a_number_raises_input_error(dqn, backend, bad):
    policy = make_policy(dqn[0], dqn[1], backend)
    with pytest.raises(InputError, match=r"\[6\] = .* is not a number"):
        policy.act([0.1] * 6 + [bad])
    assert policy.inferences == 0


def test_vectorised_litert_path_raises_the_same_input_error_for_an_int_beyond_float():
    policy = load_policy(os.path.join(REPO, "models/swarm/bearing"), "litert")
    assert policy._vectorised
    h = [0.0] * policy.inputs[1]["size"]
    with pytest.raises(InputError, match=r"'h'\[3\] = .* is not a number"):
        policy.predict([0.0] * policy.inputs[0]["size"], h[:3] + [10 ** 400] + h[4:])
    with pytest.raises(InputError, match="no input 2"):
        policy.quantize_input(h, 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("inputs", [5, None])
def test_run_on_a_non_sequence_raises_input_error(dqn, backend, inputs):
    with pytest.raises(InputError, match="inputs must be a sequence"):
        make_policy(dqn[0], dqn[1], backend).run(inputs)


@pytest.mark.parametrize("index", [1, -2, True, 0.0, "0"])
def test_index_naming_no_input_or_output_raises_input_error(dqn, index):
    policy = make_policy(dqn[0], dqn[1], "pure")
    with pytest.raises(InputError, match="no input"):
        policy.quantize_input([0.0] * 7, index)
    with pytest.raises(InputError, match="no output"):
        policy.dequantize_output([0] * 9, index)
    assert policy.quantize_input([0.0] * 7, -1) == policy.quantize_input([0.0] * 7, 0)


def _card_variant(card, edit):
    c = copy.deepcopy(card)
    edit(c)
    return c


@pytest.mark.parametrize("edit, match", [
    (lambda c: c["op_set"].append(3), "op_set must list operator names"),
    (lambda c: c["outputs"][0].__setitem__("actions", "abcdefghi"), "actions must be a list of 9"),
    (lambda c: c["outputs"][0].__setitem__("actions", []), "actions must be a list of 9"),
    (lambda c: c["outputs"][0].__setitem__("actions", c["outputs"][0]["actions"][:8]), "actions must be a list of 9"),
    (lambda c: c["inputs"][0]["quantization"].__setitem__("zero_point", 0.4), "integer zero_point"),
    (lambda c: c["inputs"][0]["quantization"].__setitem__("zero_point", False), "integer zero_point"),
    (lambda c: c["inputs"][0]["quantization"].__setitem__("scale", str(c["inputs"][0]["quantization"]["scale"])),
     "number scale"),
])
def test_card_fields_of_the_wrong_type_are_refused(dqn, edit, match):
    data, card = dqn
    make_policy(data, card, "pure")                                   # the committed card is fine
    with pytest.raises(CardMismatchError, match=match):
        make_policy(data, _card_variant(card, edit), "pure")


def _quantize_model(scale, zero_point=0):
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 6], "float32")
    q = b.add_tensor("q", [1, 6], "int8", scale=scale, zero_point=zero_point)
    b.add_op("QUANTIZE", [x], [q])
    return b.finish([x], [q])


@pytest.mark.parametrize("zero_point", [0, -3])
def test_quantize_of_a_value_beyond_float32_once_scaled_saturates(zero_point):
    # 3.4e38 is a finite float32 input; / 0.01 it is beyond float32: struct.pack raised OverflowError
    policy = make_policy(_quantize_model(0.01, zero_point), None, "pure")
    assert policy.run([[3.4e38, -3.4e38, 1e10, -1e10, 0.5, -0.5]]) == \
        [[127, -128, 127, -128, 50 + zero_point, -50 + zero_point]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_quantize_with_zero_scale_is_refused_at_load(backend):
    with pytest.raises(UnsupportedModelError, match="QUANTIZE output scale 0.0"):
        make_policy(_quantize_model(0.0), None, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_int8_input_with_zero_scale_is_refused_at_load(backend):
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 2], "int8", scale=0.0, zero_point=0)
    w = b.add_tensor("w", [2, 2], "int8", data=np.array([[1, 2], [3, 4]]), scale=0.01)
    y = b.add_tensor("y", [1, 2], "int8", scale=0.1, zero_point=0)
    b.add_op("FULLY_CONNECTED", [x, w], [y])
    data = b.finish([x], [y])
    with pytest.raises(UnsupportedModelError, match="input 'x' has quantization scale 0.0"):
        make_policy(data, None, backend)          # predict() divided by it: ZeroDivisionError


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rounding", ["bogus", None, ["single"]])
def test_unknown_rounding_raises_value_error_on_every_backend(dqn, backend, rounding):
    with pytest.raises(ValueError, match="rounding must be"):
        make_policy(dqn[0], dqn[1], backend, rounding=rounding)


def _one_op_model(op, s_in, s_out, out_dtype="int8"):
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 4], "int8", scale=s_in, zero_point=0)
    if out_dtype == "int8":
        y = b.add_tensor("y", [1, 4], "int8", scale=s_out, zero_point=0)
    else:
        y = b.add_tensor("y", [1, 4], out_dtype)
    b.add_op(op, [x], [y])
    return b.finish([x], [y])


def test_dequantize_beyond_float32_gives_inf_like_litert():
    # 3e38 * 127 is beyond float32: struct.pack raised OverflowError at inference; LiteRT's float32 gives inf
    data = _one_op_model("DEQUANTIZE", 3e38, None, "float32")
    x = [[1, -1, 127, -128]]
    got = make_policy(data, None, "pure").run(x)
    assert got == make_policy(data, None, "litert").run(x)
    assert got[0][2] == float("inf") and got[0][3] == float("-inf")


@pytest.mark.parametrize("op, s_in, s_out", [("TANH", 3e38, 1 / 128), ("LOGISTIC", 0.1, 1e-45)])
def test_lut_whose_scales_overflow_float32_is_refused_at_load(op, s_in, s_out):
    with pytest.raises(UnsupportedModelError, match="overflow float32"):
        make_policy(_one_op_model(op, s_in, s_out), None, "pure")


def test_int8_graph_refuses_bools_as_int8_codes_like_policy_run(dqn):
    from onboard.policy.int8_pure import Int8Graph
    graph = Int8Graph(dqn[0])
    with pytest.raises(InputError, match="True is not an int8 value"):
        graph.invoke([[0] * 6 + [True]])
    with pytest.raises(InputError, match="True is not an int8 value"):
        make_policy(dqn[0], dqn[1], "pure").run([[0] * 6 + [True]])


def _const_operand_model(op):
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 4], "int8", scale=0.1, zero_point=0)
    c = b.add_tensor("c", [1, 4], "int8", data=np.array([[1, -5, 100, -128]]), scale=0.05, zero_point=3)
    y = b.add_tensor("y", [1, 4], "int8", scale=0.2, zero_point=-1)
    b.add_op(op, [x, c], [y])
    return b.finish([x], [y])


@pytest.mark.parametrize("op", ["ADD", "MUL"])
def test_constant_operand_runs_like_litert(op):
    # a constant second operand (valid TFLite, LiteRT runs it) raised KeyError at inference
    data = _const_operand_model(op)
    rows = [[a, -1 - a, (a * 37) % 256 - 128, 127 - a if a >= 0 else a] for a in range(-128, 128, 5)]
    pure, lit = make_policy(data, None, "pure"), make_policy(data, None, "litert")
    assert [pure.run([r]) for r in rows] == [lit.run([r]) for r in rows]


def test_tensor_read_before_any_operator_writes_it_is_refused_at_load():
    from onboard.policy.tflite_pure import ModelFormatError
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 4], "int8", scale=0.1, zero_point=0)
    z = b.add_tensor("z", [1, 4], "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", [1, 4], "int8", scale=0.2, zero_point=-1)
    b.add_op("TANH", [z], [y])
    with pytest.raises(ModelFormatError, match="TANH reads tensor 'z', which no operator writes"):
        make_policy(b.finish([x], [y]), None, "pure")


@pytest.mark.micropython
def test_constant_operand_and_quantize_saturation_in_micropython():
    """The constant-operand path and QUANTIZE beyond float32 inside real MicroPython, against CPython."""
    import base64
    import json

    from harness.sim.micropython import available, onboard_files, run_micropython
    if not available():
        pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
    cases = [(_const_operand_model("ADD"), [[1, 2, -50, 127], [-128, 0, 5, 99]]),
             (_quantize_model(0.01, -3), [[3.4e38, -3.4e38, 1e10, -1e10, 0.5, -0.5]])]
    files = onboard_files()
    files["/lib/_cases.py"] = "CASES = %r\n" % ([(base64.b64encode(d).decode(), json.dumps(r)) for d, r in cases],)
    code = ("import binascii, json\nfrom onboard.policy.policy import PurePolicy\nimport _cases\n"
            "for b64, rows in _cases.CASES:\n"
            "    p = PurePolicy(binascii.a2b_base64(b64.encode()))\n"
            "    for x in json.loads(rows):\n        print('OUT ' + json.dumps(p.run([x])[0]))\n")
    out = run_micropython(code, files)
    mp = [json.loads(line[4:]) for line in out.splitlines() if line.startswith("OUT ")]
    want = [make_policy(d, None, "pure").run([x])[0] for d, rows in cases for x in rows]
    assert mp == want


ADD_SCALES = [(1 / 256, -128), (1 / 128, 0), (0.0123, 5), (0.2, -3), (0.1, 0), (0.05, 3)]


@pytest.mark.parametrize("s1", ADD_SCALES)
def test_add_bit_exact_with_litert_reference_on_a_scale_grid(s1):
    """int8 ADD on the pure kernel (default, single-rounding mode) equals LiteRT's reference ADD on every sum of
    a scale grid; its requantization rounds twice (gemmlowp), as MUL's does: with single rounding ~1.2 % of these
    sums (negative ones on a tie) were one step above LiteRT's."""
    import itertools
    rng = np.random.default_rng(1)
    for (s2, z2), (so, zo) in itertools.product(ADD_SCALES, ADD_SCALES):
        b = TfliteBuilder()
        x1 = b.add_tensor("a", [1, 256], "int8", scale=s1[0], zero_point=s1[1])
        x2 = b.add_tensor("b", [1, 256], "int8", scale=s2, zero_point=z2)
        y = b.add_tensor("y", [1, 256], "int8", scale=so, zero_point=zo)
        b.add_op("ADD", [x1, x2], [y])
        data = b.finish([x1, x2], [y])
        try:
            pure = make_policy(data, None, "pure")
        except UnsupportedModelError:          # output scale too small for ADD's rescaling
            continue
        a = (rng.permutation(256) - 128).tolist()
        bb = rng.integers(-128, 128, 256).tolist()
        assert pure.run([a, bb]) == make_policy(data, None, "litert").run([a, bb])


@pytest.mark.parametrize("x_q, match", [
    (np.full((1, 7), 200), "whole numbers in"),            # wrapped to -56 and ran
    (np.full((1, 7), 1.7), "whole numbers in"),            # truncated to 1 and ran
    (np.ones((1, 6), dtype=np.int8), r"\[n, 7\] array"),
    ([[1] * 7, [1] * 8], r"\[n, 7\] array"),
])
def test_litert_run_batch_q_refuses_what_it_would_wrap_or_truncate(dqn, x_q, match):
    policy = make_policy(dqn[0], dqn[1], "litert")
    with pytest.raises(InputError, match=match):
        policy.run_batch_q(x_q)
    ok = np.array([[-128, 127, 0, 1, -1, 5, 100]])
    assert policy.run_batch_q(ok).tolist() == policy.run(ok.tolist())


def test_litert_run_batch_q_refuses_a_model_of_two_inputs():
    b = TfliteBuilder()
    x1 = b.add_tensor("a", [1, 4], "int8", scale=0.1, zero_point=0)
    x2 = b.add_tensor("b", [1, 4], "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", [1, 4], "int8", scale=0.2, zero_point=0)
    b.add_op("ADD", [x1, x2], [y])
    data = b.finish([x1, x2], [y])
    with pytest.raises(InputError, match="one-input models"):
        make_policy(data, None, "litert").run_batch_q(np.zeros((2, 4), dtype=np.int8))
