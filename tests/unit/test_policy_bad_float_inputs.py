"""int8 policies: huge or infinite float inputs give InputError or a counted saturation, never an OverflowError.

Found in review: ``Policy.quantize_input`` rounded ``v / scale`` with ``math.floor``, which raises
OverflowError (not a ValueError) for a finite observation whose quotient overflows to inf (1e308 / 0.01);
now InputError, as for NaN/inf (large quotients that stay finite saturate and are counted, as before);
``Policy.run`` and ``Int8Graph.invoke`` let an infinite (or beyond-float32) value into a float32 model input, where QUANTIZE's
rounding (or the float32 packing) raised OverflowError instead of the documented InputError.
"""
import os

import pytest

from harness.training.fixtures import op_coverage_model
from onboard.policy import int8_pure
from onboard.policy.policy import load_model_dir, make_policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DQN_DIR = os.path.join(REPO, "models", "pocket-dqn")


@pytest.fixture(scope="module")
def dqn():
    data, card = load_model_dir(DQN_DIR)
    return make_policy(data, card, "pure")


def test_huge_finite_observation_is_input_error(dqn):
    # 1e308 is finite (passes the NaN/inf check) but overflows once normalised and scaled
    for obs in ([1e308] + [0.0] * 6, [0.0] * 6 + [-1e308]):
        with pytest.raises(int8_pure.InputError):
            dqn.quantize_input(obs)
        with pytest.raises(int8_pure.InputError):
            dqn.act(obs)
    assert dqn.inferences == 0


def test_saturation_unchanged_for_ordinary_values(dqn):
    spec = dqn.inputs[0]
    assert dqn.quantize_input([1e9, -1e9, 0.0, 0.0, 0.0, 0.0, 0.0])[:2] == [127, -128]
    q = dqn.quantize_input([0.0] * 7)
    assert all(-128 <= v <= 127 for v in q)
    assert spec["dtype"] == "int8"


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), 1e39, -1e39])
def test_float32_input_out_of_range_is_input_error(bad):
    data = op_coverage_model()
    graph = int8_pure.Int8Graph(data)
    x = [0.1] * 16
    x[3] = bad
    with pytest.raises(int8_pure.InputError):
        graph.invoke([x])
    policy = make_policy(data, None, "pure")
    with pytest.raises(int8_pure.InputError):
        policy.run([x])
    assert policy.inferences == 0
    assert len(policy.run([[0.1] * 16])) == len(graph.outputs)
