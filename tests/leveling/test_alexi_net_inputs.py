"""Inputs an Alexi network cannot take are one NetInputError line naming the network, for both kinds and both
backends: NaN or inf (the int8 kind cast NaN to an arbitrary int8 code and returned a finite, meaningless
prediction; the float kind returned NaN), a value that overflows once normalised and scaled (as the onboard
Policy refuses it), an input row of the wrong width (a numpy broadcasting message). Finite values beyond the
int8 range saturate, as before."""
import numpy as np
import pytest

from harness.sim.alexi import nets


@pytest.fixture(scope="module", params=[("int8", "pure"), ("int8", "litert"), ("float", "pure")])
def net(request):
    kind, backend = request.param
    return nets.load("v2_speed", kind, backend)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_input_is_refused(net, bad):
    x = np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, bad, 0.0]])
    with pytest.raises(nets.NetInputError) as err:
        net.predict(x)
    msg = str(err.value)
    assert net.model_dir in msg and "row 1, column 2" in msg and "\n" not in msg, msg
    with pytest.raises(nets.NetInputError):
        net.predict_normalised(x)


def test_an_input_that_overflows_once_normalised_is_refused(net):
    with pytest.raises(nets.NetInputError, match="overflows"):
        net.predict(np.array([0.0, 0.0, 1e308, 0.0]))          # / std 0.13: inf


def test_an_int8_input_that_overflows_once_scaled_is_refused():
    net = nets.load("v2_speed", "int8", "pure")
    with pytest.raises(nets.NetInputError, match="scaled by"):
        net.predict_normalised(np.array([[1e307, 0.0, 0.0, 0.0]]))


@pytest.mark.parametrize("shape", [(1, 3), (2, 5), (4,)])
def test_inputs_of_the_wrong_width_are_refused(net, shape):
    with pytest.raises(nets.NetInputError, match=r"inputs must be \[n, 4\]"):
        net.predict(np.zeros(shape) if len(shape) == 2 else np.zeros(3))
    if len(shape) == 2:
        with pytest.raises(nets.NetInputError, match=r"inputs must be \[n, 4\]"):
            net.predict_normalised(np.zeros(shape))


def test_finite_inputs_beyond_the_int8_range_saturate():
    net = nets.load("v2_speed", "int8", "pure")
    big = net.predict(np.array([[1e30, -1e30, 1e6, -1e6]]))
    edge = net.predict_normalised(np.array([[10.0, -10.0, 10.0, -10.0]]))      # 10 / scale 0.0098: saturated
    assert np.all(np.isfinite(big))
    assert np.array_equal(net.quantise(np.array([[1e30, -1e30, 1e6, -1e6]]))[0], [127, -128, 127, -128])
    assert np.array_equal(net.predict_normalised(net.normalise(np.array([[1e30, -1e30, 1e6, -1e6]]))), edge)
