"""The swarm networks' float runners refuse weights whose shapes do not chain when they are built: the DQN's
layers (a layer that does not take the previous one's outputs raised a matmul error only at the first act; a 1-D
w0 even ran), and the bearing estimator's biases and input scaling (a one-element in_scale or b_out was
broadcast and ran; another size failed at every step, where the agent counts each range as bad input)."""
import numpy as np
import pytest

from onboard.swarm.bearing_net import BearingNet
from onboard.swarm.dqn import DqnFloat

H = 4


def _dqn(**bad):
    w = {"w0": np.ones((7, 5)), "b0": np.zeros(5), "w1": np.ones((5, 3)), "b1": np.zeros(3), "w2": np.ones((3, 9)),
         "b2": np.zeros(9)}
    w.update(bad)
    return w


def _bearing(**bad):
    w = {"w_ih": np.ones((3 * H, 6)), "w_hh": np.ones((3 * H, H)), "b_ih": np.zeros(3 * H), "b_hh": np.zeros(3 * H),
         "w_out": np.ones((36, H)), "b_out": np.zeros(36), "in_scale": np.ones(6)}
    w.update(bad)
    return w


@pytest.mark.parametrize("bad,needle", [
    ({"w0": np.ones(7)}, "w0 must be a [7, H] matrix"),
    ({"w1": np.ones((4, 3))}, "w1 (4, 3) and b1 (3,) do not take 5 inputs"),
    ({"b0": np.zeros(4)}, "w0 (7, 5) and b0 (4,) do not take 7 inputs"),
    ({"b2": np.zeros(1)}, "w2 (3, 9) and b2 (1,) do not take 3 inputs"),
    ({"w2": np.ones((3, 9, 1))}, "w2 (3, 9, 1)"),
])
def test_dqn_weights_that_do_not_chain_are_refused_when_built(bad, needle):
    with pytest.raises(ValueError) as exc:
        DqnFloat(_dqn(**bad))
    assert "DQN weights have the wrong shape" in str(exc.value) and needle in str(exc.value)


def test_dqn_weights_that_chain_run():
    assert DqnFloat(_dqn()).q_values([0.1] * 7).shape == (9,)


@pytest.mark.parametrize("key,shape", [("in_scale", (1,)), ("in_scale", (5,)), ("b_out", (1,)), ("b_ih", (H,)),
                                       ("b_hh", (1,)), ("w_hh", (H, H))])
def test_bearing_weights_of_the_wrong_shape_are_refused_when_built(key, shape):
    with pytest.raises(ValueError, match="bearing net weights have the wrong shapes: %s is" % key):
        BearingNet(_bearing(**{key: np.ones(shape)}))


@pytest.mark.parametrize("cell_rows", [H, 3 * H])
def test_bearing_weights_of_either_cell_run(cell_rows):
    net = BearingNet(_bearing(w_ih=np.ones((cell_rows, 6)), w_hh=np.ones((cell_rows, H)), b_ih=np.zeros(cell_rows),
                              b_hh=np.zeros(cell_rows)))
    h, probs = net.step_probs(net.new_state(), [0.1, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert h.shape == (H,) and probs.shape == (2, 18)
