"""Scenario `fil-avr`: a way-point mission closed through the real AVR firmware in simavr."""
import copy

import pytest

from harness.scenarios import load
from harness.scenarios.context import RunContext

pytestmark = [pytest.mark.fil, pytest.mark.scenario]


def run(seed=1, **overrides):
    mod = load("fil-avr")
    cfg = copy.deepcopy(mod.DEFAULTS)
    for k, v in overrides.items():
        cfg[k] = v
    return mod.run(cfg, RunContext(seed))


def assert_clean_link(m):
    fw = m["firmware"]
    assert fw["crc_errors"] == fw["cobs_errors"] == fw["oversize"] == fw["seq_gaps"] == 0
    assert fw["imu_errors"] == 0 and fw["enc_errors_left"] == fw["enc_errors_right"] == 0
    link = m["link"]
    assert link["rx_crc_errors"] == link["rx_cobs_errors"] == link["rx_seq_gaps"] == 0
    assert link["protocol_errors"] == 0 and link["imu_gaps"] == 0
    # every command went signed and the firmware dropped none of them
    assert link["signing"] and link["signed_commands"] > 0
    assert fw["sig_unsigned"] == fw["sig_bad_tag"] == fw["sig_replayed"] == fw["sig_bad_len"] == 0
    assert m["bridge"]["tx_dropped"] == 0 and m["bridge"]["resets"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("board", ["uno", "leonardo"])
def test_mission_through_the_firmware(board, fil_built):
    m = run(board=board)
    assert m["success"], m
    assert m["mcu"] == {"uno": "atmega328p", "leonardo": "atmega32u4"}[board]
    assert m["path_error_rms_m"] < 0.10
    assert m["final_position_error_m"] < 0.25
    assert m["estimate_position_error_rms_m"] < 0.10
    assert m["firmware"]["failsafe_trips"] == 0 and m["runtime_failsafe_engagements"] == 0
    assert_clean_link(m)
    # every wheel command reached the firmware and was echoed in its telemetry
    assert m["cmd_to_telemetry_latency_us"]["n"] >= 0.95 * m["link"]["tx_frames"] - 5
    assert m["cmd_to_telemetry_latency_us"]["max"] <= 20000


@pytest.mark.slow
def test_link_dropout_trips_firmware_failsafe_and_mission_resumes(fil_built):
    m = run(board="uno", link_dropout={"start_s": 4.0, "duration_s": 1.0})
    assert m["commands_dropped_by_dropout"] >= 45            # 1 s of 50 Hz commands
    assert m["firmware"]["failsafe_trips"] == 1
    assert m["success"], m
    assert_clean_link(m)


def test_lockstep_runs_are_deterministic(fil_built):
    a = run(seed=3, max_duration_s=2.0)
    b = run(seed=3, max_duration_s=2.0)
    for key in ("distance_travelled_m", "path_error_rms_m", "estimate_position_error_rms_m",
                "final_position_error_m", "firmware", "link", "bridge", "cmd_to_telemetry_latency_us"):
        assert a[key] == b[key], key


def test_listed_imu_settings_are_the_ones_it_uses():
    """The firmware's MPU-6050 refreshes at plant.imu_update_hz and the host reads the IMU at the telemetry
    rate, so the IMU block lists only the chip's errors (ag2u eq. 10): an IMU rate is an unknown setting."""
    from harness.config import ConfigError
    from harness.scenarios import prepare

    mod, cfg = prepare("fil-avr")
    assert "rate_hz" not in cfg["imu"] and set(cfg["imu"]) <= set(mod.IMU_DEFAULTS)
    with pytest.raises(ConfigError, match="imu.rate_hz"):
        prepare("fil-avr", {"imu": {"rate_hz": 300}})
