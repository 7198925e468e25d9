"""The fil-leveler plant erodes its terrain at most once per physics step (LevelerPlant.step), so an erosion
period shorter than the step eroded less often than configured, silently: the settings now refuse it, one line
naming terrain.erosion_period_s and plant.physics_hz, before anything runs (checked at the settings level: no
AVR firmware is built or started)."""
import pytest

from harness.cli import main
from harness.scenarios import prepare
from harness.sim.fil_leveler_world import (LEVELER_PLANT_DEFAULTS, TERRAIN_DEFAULTS, check_erosion_step,
                                           erosion_period_us)
from onboard.core.settings import ConfigError

NEEDLE = "terrain.erosion_period_s, config.plant.physics_hz must be an erosion period of at least one physics step"


@pytest.mark.parametrize("period_s", [0.0005, 0.000999, 1e-7])
def test_the_scenario_refuses_an_erosion_period_shorter_than_the_physics_step(period_s):
    with pytest.raises(ConfigError, match=NEEDLE) as info:
        prepare("fil-leveler", {"terrain": {"erosion_period_s": period_s}})
    assert "\n" not in str(info.value)


def test_a_faster_physics_step_takes_the_shorter_period_and_the_defaults_pass():
    for reduced in (False, True):
        _module, config = prepare("fil-leveler", reduced=reduced)
        assert config["terrain"]["erosion_period_s"] == TERRAIN_DEFAULTS["erosion_period_s"]
    prepare("fil-leveler", {"terrain": {"erosion_period_s": 0.001}})            # exactly one 1 ms step
    prepare("fil-leveler", {"terrain": {"erosion_period_s": 0.0005},
                            "plant": {"physics_hz": 2000, "bridge_window_us": 5000}})
    with pytest.raises(ConfigError, match=NEEDLE):
        prepare("fil-leveler", {"terrain": {"erosion_period_s": 0.0005},
                                "plant": {"physics_hz": 1000}})


def test_the_plant_and_the_rig_apply_the_same_rule():
    """LevelerPlant and LevelerRig check it with check_erosion_step (the rig before its firmware starts)."""
    check_erosion_step(TERRAIN_DEFAULTS, LEVELER_PLANT_DEFAULTS)
    with pytest.raises(ConfigError, match=r"^LevelerRig settings terrain.erosion_period_s, plant.physics_hz must be "):
        check_erosion_step(dict(TERRAIN_DEFAULTS, erosion_period_s=0.0002), LEVELER_PLANT_DEFAULTS, "LevelerRig")
    assert erosion_period_us(TERRAIN_DEFAULTS["erosion_period_s"]) == 100000


def test_the_cli_refuses_it_with_one_line_and_exit_2(capsys):
    code = main(["run", "fil-leveler", "--quiet", "--set", "terrain.erosion_period_s=0.0005"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and NEEDLE in err, err
