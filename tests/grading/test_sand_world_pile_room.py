"""Random piles are centred ``pile_margin_m`` inside the work area (the north side less the spoil band) and the east
side: settings that leave no room (a small world with the default margins) are one settings line, also from the
grading sweep before anything runs; they were NumPy's "high - low < 0" from the first pile's draw."""
import numpy as np
import pytest

from harness.config import ConfigError as HarnessConfigError
from harness.scenarios.grading.sweep import episode_config
from harness.sim.sand_world import SandWorld
from onboard.core.settings import ConfigError


@pytest.mark.parametrize("config", [
    {"size_m": [1.0, 1.0]},                                  # work area 0.5 m north: no room for 2 x 0.5 m
    {"size_m": [2.5, 1.5], "pile_margin_m": 0.8},            # east side 1.5 m < 2 x 0.8 m
    {"size_m": [2.5, 2.5], "spoil_band_m": 2.0},             # work area 0.5 m north
    {"size_m": [1.0, 1.0], "pile_margin_m": 0.255, "spoil_band_m": 0.4875},  # the band: 20 whole cells, not 19.5
])
def test_margins_without_room_for_the_piles_are_one_settings_line(config):
    with pytest.raises(ConfigError, match="room for the piles' centres") as info:
        SandWorld(config, np.random.default_rng(1))
    assert "\n" not in str(info.value)


def test_the_grading_sweep_refuses_them_before_running():
    with pytest.raises(HarnessConfigError, match="room for the piles' centres"):
        episode_config({"world": {"size_m": [1.0, 1.0]}})


@pytest.mark.parametrize("config,north,east", [
    ({"size_m": [1.0, 1.0], "pile_margin_m": 0.25}, (0.25, 0.25), (0.25, 0.75)),
    ({"size_m": [2.5, 2.5], "pile_margin_m": 1.0}, (1.0, 1.0), (1.0, 1.5)),
    ({"size_m": [1.0, 1.0], "piles_min": 0, "piles_max": 0}, None, None),
])
def test_margins_with_room_still_place_the_piles_inside_them(config, north, east):
    world = SandWorld(config, np.random.default_rng(1))
    if north is None:
        assert world.piles == [] and np.all(world.height_m == 0.0)
        return
    assert world.piles
    for p in world.piles:
        assert north[0] <= p["north_m"] <= north[1] and east[0] <= p["east_m"] <= east[1]
