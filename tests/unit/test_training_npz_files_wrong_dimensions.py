"""harness.training.npz_files.read_npz: a weights file whose arrays have too few dimensions (a 0-d or 1-d array
where the network reads a matrix's shape) is the one-line ConfigError naming the file, as a missing array or a
wrong shape is. Before, the network's IndexError ("tuple index out of range") escaped as a traceback."""
import numpy as np
import pytest

from harness.config import ConfigError
from harness.training.npz_files import read_npz
from onboard.swarm.bearing_net import BearingNet
from onboard.swarm.dqn import DqnFloat

DQN_KEYS = ("w0", "b0", "w1", "b1", "w2", "b2")
BEARING_KEYS = ("w_ih", "w_hh", "b_ih", "b_hh", "w_out", "b_out", "in_scale")


@pytest.mark.parametrize("build,keys,bad,shape", [(DqnFloat, DQN_KEYS, "w0", ()),
                                                   (BearingNet, BEARING_KEYS, "w_hh", ()),
                                                   (BearingNet, BEARING_KEYS, "w_hh", (3,))])
def test_arrays_with_too_few_dimensions_are_one_config_error(tmp_path, build, keys, bad, shape):
    arrays = {k: np.zeros((3, 3)) for k in keys}
    arrays[bad] = np.zeros(shape)
    path = str(tmp_path / "weights.npz")
    np.savez(path, **arrays)
    with pytest.raises(ConfigError) as err:
        read_npz(path, "DQN weights", build)
    msg = str(err.value)
    assert msg.startswith("DQN weights %s: " % path) and "wrong shape" in msg and "\n" not in msg


def test_a_missing_array_is_still_named(tmp_path):
    path = str(tmp_path / "weights.npz")
    np.savez(path, **{k: np.zeros((7, 3)) for k in DQN_KEYS[:-1]})
    with pytest.raises(ConfigError, match="b2"):
        read_npz(path, "DQN weights", DqnFloat)


def test_a_good_file_builds(tmp_path):
    path = str(tmp_path / "weights.npz")
    np.savez(path, w0=np.ones((7, 4)), b0=np.zeros(4), w1=np.ones((4, 4)), b1=np.zeros(4), w2=np.ones((4, 2)),
             b2=np.zeros(2))
    q = read_npz(path, "DQN weights", DqnFloat).q_values([0.1] * 7)
    assert q.shape == (2,)
