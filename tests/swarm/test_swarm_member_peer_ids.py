"""The swarm member's neighbour list: an id listed twice or a bool is refused before the member flies (listed
twice, every range of that neighbour was fed to the agent twice per period)."""
import numpy as np
import pytest

from onboard.core.settings import ConfigError
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.swarm.member import SwarmMember


class _Always:
    def act(self, obs):
        return 0


class _NoNet:
    def new_state(self):
        return np.zeros(1)

    def step_probs(self, h, x):
        raise AssertionError("mode pf steps no estimator")


class _Driver:
    def command(self, sp):
        return True


def _member(peers):
    return SwarmMember(_Always(), _NoNet(), NumpyDraws(np.random.default_rng(1)), peers, _Driver(),
                       agent_config={"mode": "pf", "n_particles": 20})


@pytest.mark.parametrize("peers,needle", [
    ([1, 2, 1], "peer id 1 is listed twice"),
    ([True], "peer ids must be whole numbers"),
    ([1, 2.0], "peer ids must be whole numbers"),
])
def test_a_bad_neighbour_list_is_refused(peers, needle):
    with pytest.raises(ConfigError) as exc:
        _member(peers)
    assert needle in str(exc.value)


def test_distinct_ids_fly():
    mem = _member([3, 1, 2])
    assert mem.decision.peers == [3, 1, 2]
