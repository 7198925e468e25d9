"""Seeded randomness and the INS error models refuse bad input with one clear ValueError: RunRandom's seed
(a negative one failed only at the first stream, a fraction was dropped silently), a stream name that is
not a string, a noise-setting name that is not a string, a negative IMU interval."""
import math
import zlib

import numpy as np
import pytest

from harness.sim.rng import RunRandom
from harness.sim.sensors.ins_errors import ImuErrors, noise_setting
from onboard.core.settings import ConfigError


@pytest.mark.parametrize("seed", [-1, 1.7, math.nan, math.inf, True, "3", None])
def test_bad_seeds_are_refused_at_once(seed):
    with pytest.raises(ValueError, match="seed must be a whole number >= 0"):
        RunRandom(seed)


def test_whole_seeds_give_the_same_streams_as_before():
    a = RunRandom(3).stream("imu").normal(size=4)
    assert np.array_equal(RunRandom(3.0).stream("imu").normal(size=4), a)
    assert np.array_equal(RunRandom(np.int64(3)).stream("imu").normal(size=4), a)
    assert np.array_equal(np.random.default_rng([3, zlib.crc32(b"imu")]).normal(size=4), a)
    assert RunRandom(2 ** 70).seed == 2 ** 70


@pytest.mark.parametrize("name", [3, None, b"imu"])
def test_stream_names_must_be_strings(name):
    with pytest.raises(ValueError, match="name must be a string"):
        RunRandom(1).stream(name)


@pytest.mark.parametrize("name", [["sensor_fusion"], {"a": 1}, 3])
def test_noise_setting_names_that_are_not_strings_are_a_config_error(name):
    with pytest.raises(ConfigError, match="unknown noise setting"):
        noise_setting(name)


@pytest.mark.parametrize("dt_s", [-0.01, math.nan, math.inf])
def test_imu_errors_refuse_a_bad_interval(dt_s):
    errors = ImuErrors.draw(noise_setting("sensor_fusion")["imu"], np.random.default_rng(0))
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="dt_s must be a finite number of seconds >= 0"):
        errors.apply(np.zeros((2, 3)), np.zeros((2, 3)), dt_s, rng)
    assert rng.bit_generator.state == np.random.default_rng(1).bit_generator.state
