"""A grading episode with motors = vesc whose set-up fails after its simulated VESCs opened their ptys
releases them (ptys, the Pi app's serial links, the temporary folder) before the error goes on: run()
would close them, but it is never reached."""
import copy
import os

import pytest

from harness.scenarios.grading import episode as episode_mod
from harness.sim.ground_world import GroundWorld
from harness.sim.rng import RunRandom


def _open_fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("fail_at", ["start", "drive"])
def test_failed_setup_releases_the_vesc_ptys(monkeypatch, fail_at):
    made = []

    class Recorded(episode_mod.SimVescTracks):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    def broken(*_args, **_kwargs):
        raise KeyboardInterrupt          # e.g. Ctrl-C while the episode is being set up

    monkeypatch.setattr(episode_mod, "SimVescTracks", Recorded)
    monkeypatch.setattr(GroundWorld, fail_at, broken)
    config = copy.deepcopy(episode_mod.DEFAULTS)
    config["motors"] = "vesc"
    before = _open_fds()
    with pytest.raises(KeyboardInterrupt):
        episode_mod.GradingEpisode(config, RunRandom(1))
    assert len(made) == 1
    assert made[0].ports == [] and not os.path.exists(made[0].tmpdir)
    assert _open_fds() - before == set()
