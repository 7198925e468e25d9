"""The UWB channel refuses settings that no physical radio has, with one line naming the setting, instead of
dividing by zero later: a clock drift of magnitude 1e5 ppm or more (a clock at -1e6 ppm stands still, below it
runs backwards) and a motion area that is not > 0 (BouncingMotion folds positions modulo 2 area_m), on every
built implementation of the motion model."""
import math

import pytest

from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel import (MAX_CLOCK_DRIFT_PPM, RADIO_DEFAULTS, TRUTH_MODULES, UwbNetwork,
                                           merged_radio, truth_module)
from harness.sim.rng import RunRandom
from onboard.core.settings import ConfigError
from onboard.impl import available

IMPLS = [i for i in ("pure", "cython") if i in available(TRUTH_MODULES)]


@pytest.mark.parametrize("drift_ppm", [-1e6, -2e6, 1e6, -MAX_CLOCK_DRIFT_PPM, MAX_CLOCK_DRIFT_PPM])
def test_a_drift_beyond_any_crystal_is_refused_before_the_channel_runs(drift_ppm):
    with pytest.raises(ConfigError, match=r"^radio setting clock_drifts_ppm must be null or a table"):
        merged_radio({"clock_drifts_ppm": {0: 0.0, 1: drift_ppm}})
    # the channel itself refuses it when built (it used to divide by zero once the nodes ran)
    with pytest.raises(ConfigError, match="clock_drifts_ppm"):
        UwbNetwork(SimClock(), range(2), RunRandom(1), radio={"clock_drifts_ppm": {0: 0.0, 1: drift_ppm}})


@pytest.mark.parametrize("drift_ppm_max", [1e6, 2e6, MAX_CLOCK_DRIFT_PPM, -1.0])
def test_a_drift_range_beyond_any_crystal_is_refused(drift_ppm_max):
    with pytest.raises(ConfigError, match=r"^radio setting clock_drift_ppm_max must be a number in \[0, 100000\)"):
        merged_radio({"clock_drift_ppm_max": drift_ppm_max})


def test_the_defaults_and_real_crystals_pass():
    assert merged_radio()["clock_drift_ppm_max"] == RADIO_DEFAULTS["clock_drift_ppm_max"]
    assert merged_radio({"clock_drifts_ppm": {0: -40.0, "1": 99999.0}, "clock_drift_ppm_max": 0})
    clock = SimClock()
    net = UwbNetwork(clock, range(2), RunRandom(1), radio={"clock_drifts_ppm": {0: -99999.0, 1: 50.0}})
    net.set_state(0, (0.0, 0.0))
    net.set_state(1, (3.0, 0.0))
    net.start()
    clock.advance_to(200000)
    assert net.drift_ppm(0) == -99999.0


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("area_m", [0.0, 0, -4.0, math.inf, math.nan])
def test_bouncing_motion_refuses_an_area_without_walls(impl, area_m):
    with pytest.raises(ConfigError, match=r"^BouncingMotion area_m must be a finite number > 0 \(m\), got "):
        truth_module(impl).BouncingMotion(3, RunRandom(2).stream("m"), area_m, 1.0)


@pytest.mark.parametrize("impl", IMPLS)
def test_bouncing_motion_takes_a_small_area(impl):
    motion = truth_module(impl).BouncingMotion(3, RunRandom(2).stream("m"), 0.01, 1.0)
    for (x, y), _v in motion(123456789).values():
        assert 0.0 <= x <= 0.01 and 0.0 <= y <= 0.01


def test_uwb_ranging_refuses_a_drift_range_beyond_any_crystal_before_the_run(tmp_path):
    """The scenario's radio settings carry the channel's rules: a drift range of 1e5 ppm or more is one line and
    exit 2 before anything runs (it got NON_NEGATIVE and failed in UwbNetwork once the run had started)."""
    import subprocess
    import sys
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "uwb-ranging", "--reduced",
                           "--set", "radio.clock_drift_ppm_max=200000", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: setting config.radio.clock_drift_ppm_max must be a number in [0, 100000) (ppm), got 200000.0"]
    assert not (out / "metrics.json").exists()
