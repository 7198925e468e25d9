"""The drive path's acceleration (onboard.soil.machine_forces.speed_slope_mps2) around dropped samples: with
the samples' stamps each sample sits at its own time in the slope fit."""
import numpy as np
import pytest

from onboard.soil import machine_forces

DT_S = 1.0 / 60.0


def _stamps(n):
    return [int(round(k * DT_S * 1e6)) for k in range(n)]         # 60 Hz in whole us: 16666 / 16667 apart


def test_a_constant_acceleration_with_dropped_samples_reads_as_that_acceleration():
    stamps = _stamps(80)
    del stamps[30:34]                                              # four samples lost
    t_s = np.array(stamps) * 1e-6
    speed = 0.5 + 0.8 * t_s                                        # 0.8 m/s^2 throughout
    acc = machine_forces.speed_slope_mps2(speed, DT_S, time_us=stamps)
    assert acc == pytest.approx(np.full(len(stamps), 0.8), abs=1e-6)


def test_even_stamps_give_the_numbers_without_stamps_bit_for_bit():
    speed = 1.0 + 0.2 * np.sin(np.arange(120) / 20.0)
    with_stamps = machine_forces.speed_slope_mps2(speed, DT_S, time_us=_stamps(120))
    assert with_stamps.tobytes() == machine_forces.speed_slope_mps2(speed, DT_S).tobytes()


def test_a_repeated_stamp_does_not_divide_by_zero():
    stamps = _stamps(20)
    stamps[10] = stamps[9]
    acc = machine_forces.speed_slope_mps2(np.linspace(1.0, 2.0, 20), DT_S, time_us=stamps)
    assert np.all(np.isfinite(acc))


def test_stamps_that_do_not_match_the_speeds_are_refused():
    with pytest.raises(ValueError, match="one per speed"):
        machine_forces.speed_slope_mps2([1.0, 1.1, 1.2], DT_S, time_us=[0, 16667])
