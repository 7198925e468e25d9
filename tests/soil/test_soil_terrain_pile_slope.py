"""The carried pile's wedge needs a slope: a null ``pile.repose_rad`` takes ``loose.friction_rad``, which its own
rule lets be 0; that pair is refused with one settings line (it was a ZeroDivisionError at the first cut), and a
frictionless loose soil with its own pile slope still cuts and conserves volume."""
import math

import pytest

from harness.scenarios.soil import soil_episode
from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain
from onboard.core.settings import ConfigError, checked
from onboard.soil.blind_map import BladePose


def _fields():
    return sw.build_fields({"size_m": [6.0, 4.0], "cell_m": 0.1, "soil": "loam"})


def _cut(terrain):
    for k in range(121):
        terrain.move_blade(BladePose(k * 16667, 1.0 + k / 60.0, 2.0, 0.1, 0.0, math.radians(10.0), 0.0), 1.85, 0.6)


def test_frictionless_loose_soil_without_a_pile_slope_is_refused():
    with pytest.raises(ConfigError, match="pile.repose_rad, loose.friction_rad") as info:
        SoilTerrain(_fields(), {"loose": {"friction_rad": 0.0}})
    assert "\n" not in str(info.value)


def test_the_soil_scenario_refuses_it_when_its_settings_are_checked():
    with pytest.raises(ConfigError, match="terrain.pile.repose_rad, terrain.loose.friction_rad"):
        checked(soil_episode.DEFAULTS, soil_episode.SETTING_RANGES, {"terrain": {"loose": {"friction_rad": 0.0}}},
                "soil")


def test_frictionless_loose_soil_with_its_own_pile_slope_cuts_and_conserves_volume():
    t = SoilTerrain(_fields(), {"loose": {"friction_rad": 0.0}, "pile": {"repose_rad": 0.5}},
                    RunRandom(1).stream("soil_terrain"))
    before = t.volumes()["bank_equivalent_m3"]
    _cut(t)
    assert t.totals.bank_cut_m3 > 0.1 and t.pile_m3 > 0.0
    assert t.volumes()["bank_equivalent_m3"] == pytest.approx(before, abs=1e-12)
