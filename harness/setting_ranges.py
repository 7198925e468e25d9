"""Value ranges (harness.config rules) of the settings blocks several scenarios share.

Each block's defaults live with its module (vehicle, IMU, aiding pose, runtime, follower, VESC);
the scenarios mount these rules where they mount the block (``harness.config.under``) and check
them before anything runs, so a bad value is a one-line config error rather than a traceback
from deep inside the simulation.
"""
from harness.config import (ANY_NUMBER, BOOLEAN, NON_NEGATIVE, POSITIVE, UNIT_OPEN, int_at_least, one_of, pair, under,
                            vector)
from harness.sim.sensors.pose import ERROR_MODELS

RATE_HZ = int_at_least(1)                       # the runtime scheduler runs whole numbers of Hz

VEHICLE = {"wheelbase_m": POSITIVE, "wheel_radius_m": POSITIVE, "motor_time_constant_s": POSITIVE,
           "max_wheel_radps": POSITIVE, "turn_efficiency": UNIT_OPEN, "start_ne_m": pair(ANY_NUMBER),
           "start_yaw_deg": ANY_NUMBER}
IMU = {"rate_hz": RATE_HZ, "accel_bias_sigma_mps2": NON_NEGATIVE, "gyro_bias_sigma_dps": NON_NEGATIVE,
       "accel_rw_mps_per_sqrt_s": NON_NEGATIVE, "gyro_rw_dps_per_sqrt_s": NON_NEGATIVE,
       "gyro_noise_dps": NON_NEGATIVE, "accel_noise_mps2": NON_NEGATIVE}
AIDING = {"rate_hz": RATE_HZ, "pos_sigma_m": NON_NEGATIVE, "att_sigma_deg": vector(3, NON_NEGATIVE),
          "dropout_start_s": ANY_NUMBER, "dropout_duration_s": NON_NEGATIVE,      # dropout_start_s < 0: none
          "error_model": one_of(*ERROR_MODELS)}
RUNTIME = {"control_rate_hz": RATE_HZ, "imu_timeout_us": int_at_least(1), "aiding_timeout_us": int_at_least(1),
           "latching_failsafe": BOOLEAN}
FOLLOWER = {"cruise_speed_mps": POSITIVE, "accept_radius_m": POSITIVE, "slow_radius_m": POSITIVE,
            "max_yaw_rate_radps": POSITIVE, "heading_kp": NON_NEGATIVE, "heading_ki": NON_NEGATIVE,
            "heading_kd": NON_NEGATIVE}
VESC_SIM = {"speed_time_constant_s": POSITIVE, "coast_time_constant_s": POSITIVE, "accel_erpm_per_s_per_a": POSITIVE,
            "current_limit_a": POSITIVE, "max_erpm": POSITIVE, "timeout_ms": int_at_least(0),
            "timeout_brake_current_a": NON_NEGATIVE, "v_in_v": POSITIVE, "kv_erpm_per_v": POSITIVE,
            "motor_resistance_ohm": POSITIVE, "temp_fet_degc": ANY_NUMBER, "temp_motor_degc": ANY_NUMBER}
VESC_DRIVE = {"gear_ratio": POSITIVE, "pole_pairs": int_at_least(1), "telemetry_rate_hz": RATE_HZ,
              "stop_brake_current_a": NON_NEGATIVE}


def mounted(defaults, *blocks):
    """The rules of shared blocks where a scenario's ``defaults`` mount them: ``blocks`` are (prefix, rules)
    pairs, e.g. ("imu", IMU); each keeps the rules of the settings that scenario's block has."""
    out = {}
    for prefix, rules in blocks:
        node = defaults
        for part in prefix.split("."):
            node = node[part]
        out.update(under(prefix, rules, node))
    return out
