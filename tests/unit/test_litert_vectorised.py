"""LiteRTPolicy's vectorised float interface (quantize, predict, act) against Policy's element loops, which the
pure backend and MicroPython run: the same int8 inputs, outputs, saturation counts and errors on every
committed int8 model that LiteRT runs."""
import math
import os

import numpy as np
import pytest

from onboard.policy import load_policy
from onboard.policy.int8_pure import InputError
from onboard.policy import int8_pure
from onboard.policy.litert import round_half_away
from onboard.policy.policy_base import Policy, argmax

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["models/pocket-dqn", "models/swarm/dqn", "models/swarm/bearing", "models/alexi/v2_speed",
          "models/alexi/terrain"]


def loop_predict(policy, *observations):
    """Policy.predict through the base class's loops only (what the override must equal)."""
    q = [Policy.quantize_input(policy, o, i) for i, o in enumerate(observations)]
    outs = Policy.run(policy, q)
    return q, [Policy.dequantize_output(policy, v, i) for i, v in enumerate(outs)]


def test_round_half_away_matches_the_scalar_rule():
    ties = [k + 0.5 for k in range(-300, 300)]
    edges = [0.0, -0.0, 0.49999999999999994, -0.49999999999999994, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
             1e15 + 0.5, -(1e15 + 0.5), 4503599627370495.5, 1e300, -1e300, 127.49999999999999, -128.5]
    rng = np.random.default_rng(3)
    values = np.array(ties + edges + list(rng.normal(0, 200, 5000)))
    got = round_half_away(values)
    want = [int8_pure.round_half_away(float(v)) for v in values]
    assert [int(g) for g in got] == want


def vectorised(model):
    """The model's LiteRT policy on the NumPy path whatever its size (small models take the loops)."""
    policy = load_policy(os.path.join(REPO, model), "litert")
    policy._vectorised = True
    return policy


def test_the_numpy_path_is_taken_from_its_size_on():
    assert not load_policy(os.path.join(REPO, "models/swarm/dqn"), "litert")._vectorised
    assert load_policy(os.path.join(REPO, "models/swarm/bearing"), "litert")._vectorised


@pytest.mark.parametrize("model", MODELS)
def test_predict_equals_the_element_loops(model):
    fast = vectorised(model)
    slow = load_policy(os.path.join(REPO, model), "litert")
    probe = vectorised(model)     # quantize_input and act
    rng = np.random.default_rng(7)
    for trial in range(60):
        obs = []
        for spec in fast.inputs:
            norm = spec["normalization"]
            mean = np.asarray(norm["mean"]) if norm else 0.0
            std = np.asarray(norm["std"]) if norm else 1.0
            # within the range, far outside it (saturating) and exactly on quantisation ties
            x = mean + std * rng.normal(0, 4.0 if trial % 3 else 40.0, spec["size"])
            if spec["dtype"] == "int8" and trial % 5 == 0:
                k = rng.integers(-140, 140, spec["size"])
                x = mean + std * ((k - spec["zero_point"] + 0.5) * spec["scale"])
            obs.append(x if trial % 2 else x.tolist())
        q_slow, want = loop_predict(slow, *obs)
        assert [probe.quantize_input(o, i) for i, o in enumerate(obs)] == q_slow
        got = fast.predict(*obs)
        got = [got] if len(fast.outputs) == 1 else got
        assert got == want
        assert all(type(v) is float for out in got for v in out)
        if fast.outputs[0]["actions"] is not None:
            assert probe.act(*obs) == argmax(Policy.run(slow, q_slow)[0])
    assert fast.saturated_inputs == slow.saturated_inputs > 0
    assert fast.inferences == 60


@pytest.mark.parametrize("bad", [[math.nan], [math.inf], ["x"], [[1.0, 2.0]], [1.7e308]])
def test_bad_observations_raise_the_loops_error_after_the_same_counts(bad):
    """A saturating value before the bad one: the loops count it, then raise; so must the NumPy path. 1.7e308
    is finite but overflows once scaled (OverflowError in the loops)."""
    policy = vectorised("models/pocket-dqn")
    loops = load_policy(os.path.join(REPO, "models/pocket-dqn"), "litert")
    size = policy.inputs[0]["size"]
    obs = [1e6] + [0.1] * (size - 2) + bad
    with pytest.raises((InputError, TypeError, ValueError, OverflowError)) as fast_err:
        policy.predict(obs)
    with pytest.raises(type(fast_err.value)) as loop_err:
        Policy.quantize_input(loops, obs)
    assert str(fast_err.value) == str(loop_err.value)
    assert policy.saturated_inputs == loops.saturated_inputs == 1
    with pytest.raises(type(fast_err.value)):
        policy.act(obs)
    with pytest.raises(InputError):
        policy.predict([0.1] * (size + 1))
    with pytest.raises(InputError):
        policy.act([0.1] * size, [0.1] * size)
    assert policy.inferences == 0


@pytest.mark.filterwarnings("ignore:Warning. converting a masked element to nan")
def test_masked_and_iterator_observations_take_the_loops_values():
    policy = vectorised("models/pocket-dqn")
    loops = load_policy(os.path.join(REPO, "models/pocket-dqn"), "litert")
    size = policy.inputs[0]["size"]
    masked = np.ma.masked_array([0.2] * size, mask=[False] * (size - 1) + [True])
    with pytest.raises(InputError) as fast_err:
        policy.predict(masked)
    with pytest.raises(InputError) as loop_err:
        Policy.quantize_input(loops, masked)
    assert str(fast_err.value) == str(loop_err.value)
    values = [0.3 * k - 1.0 for k in range(size)]
    assert policy.predict(iter(values)) == Policy.predict(loops, values)
