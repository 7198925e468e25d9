"""Error models of the INS simulation (ag2u section IV-A, eqs. 10-13) and the paper's noise settings.

- IMU (eq. 10): q_v^e = q_v^t + b_c dt + a_rw sqrt(dt) n,  q_t^e = q_t^t + d_c dt + g_rw sqrt(dt) n,
  constant biases b_c (m/s^2), d_c (rad/s) and unit normal n per sample and axis.
- Initial conditions (eqs. 11-12): p_IC^e = p_IC^t + dp_IC, v_IC^e = v_IC^t + dv_IC,
  Psi_IC^e = h(F(Psi_IC^t) F(dPsi_IC)).
- Aiding pose (eq. 13): p_m^e = p_m^t + dp_err, Psi_m^e = h(F(Psi_m^t) F(dPsi_err)).

F/h are onboard.core.rotations.e2d/d2e (eqs. 3, 7). With this codebase's F (= D_ned_to_body),
h(F(Psi) F(dPsi)) is the attitude rotated by dPsi about the *navigation* axes,
R^e = F(dPsi)^T R^t: exactly eq. 12. Eq. 13b is printed with F(Psi_m^t)^T, which under
this F would invert the attitude; we use eq. 12's form for the aiding attitude too, which
is also the frame in which the filter's attitude error and R are defined.

The paper's values are given per axis; here they are 1-sigma of zero-mean Gaussian
draws (``ic_mode="random"``, needed for Monte Carlo consistency) or, for the IC
errors, applied as fixed offsets (``ic_mode="fixed"``).
"""
import math

import numpy as np

from harness.sim.sensors.imu import DEFAULTS as IMU_DEFAULTS, SETTING_RANGES as IMU_SETTING_RANGES
from onboard.core.rotations import d2e, dcm_mul, e2d
from onboard.core.settings import NON_NEGATIVE, ConfigError, checked, closest, under, vector

# ag2u section IV-B. IMU errors: the paper models constant bias + random walk without
# values; these are a consumer MEMS IMU (the simulated IMU's, harness.sim.sensors.imu).
_IMU = {k: IMU_DEFAULTS[k] for k in ("accel_bias_sigma_mps2", "gyro_bias_sigma_dps",
                                     "accel_rw_mps_per_sqrt_s", "gyro_rw_dps_per_sqrt_s")}
_NO_IMU = {k: 0.0 for k in _IMU}
NOISE_SETTINGS = {
    "noise_less": {"ic_pos_m": [0.0, 0.0, 0.0], "ic_vel_mps": [0.0, 0.0, 0.0], "ic_att_deg": [0.0, 0.0, 0.0],
                   "aiding_pos_m": [0.0, 0.0, 0.0], "aiding_att_deg": [0.0, 0.0, 0.0], "imu": dict(_NO_IMU)},
    "sensor_fusion": {"ic_pos_m": [0.05, 0.05, 0.05], "ic_vel_mps": [0.01, 0.01, 0.01],
                      "ic_att_deg": [4.0, 4.0, 5.0],
                      "aiding_pos_m": [0.05, 0.05, 0.05], "aiding_att_deg": [1.0, 1.0, 5.0],
                      "imu": dict(_IMU)},
    "extreme": {"ic_pos_m": [0.05, 0.05, 0.05], "ic_vel_mps": [0.01, 0.01, 0.01],
                "ic_att_deg": [4.0, 4.0, 5.0],
                "aiding_pos_m": [0.08, 0.08, 0.08], "aiding_att_deg": [1.0, 1.0, 10.0],
                "imu": dict(_IMU)},
}


# the value ranges of a noise setting: 1-sigma per axis (m, m/s, deg) and the IMU's error block
SETTING_RANGES = dict({key: vector(3, NON_NEGATIVE) for key in ("ic_pos_m", "ic_vel_mps", "ic_att_deg", "aiding_pos_m",
                                                               "aiding_att_deg")},
                      **under("imu", IMU_SETTING_RANGES, _IMU))


def noise_setting(name, overrides=None):
    """A copy of one of NOISE_SETTINGS (noise_less, sensor_fusion, extreme), with ``overrides`` (its keys)
    merged in and checked (:func:`onboard.core.settings.checked`)."""
    if not isinstance(name, str) or name not in NOISE_SETTINGS:
        near = closest(name, NOISE_SETTINGS) if isinstance(name, str) else None
        raise ConfigError("unknown noise setting %r (%s)" % (name, "did you mean %r?" % near if near else
                                                             "known: %s" % ", ".join(sorted(NOISE_SETTINGS))))
    return checked(NOISE_SETTINGS[name], SETTING_RANGES, overrides, "%s noise" % name)


class ImuErrors:
    """Constant biases and random walk of ag2u eq. 10, applied to clean increments."""

    def __init__(self, accel_bias_mps2, gyro_bias_radps, accel_rw_mps_per_sqrt_s, gyro_rw_rad_per_sqrt_s):
        self.accel_bias_mps2 = np.asarray(accel_bias_mps2, dtype=float).reshape(3)
        self.gyro_bias_radps = np.asarray(gyro_bias_radps, dtype=float).reshape(3)
        self.accel_rw = float(accel_rw_mps_per_sqrt_s)
        self.gyro_rw = float(gyro_rw_rad_per_sqrt_s)

    @classmethod
    def draw(cls, imu_cfg, rng):
        """Biases drawn once from N(0, sigma^2) per axis; random-walk densities from the config."""
        return cls(rng.normal(0.0, 1.0, 3) * imu_cfg["accel_bias_sigma_mps2"],
                   rng.normal(0.0, 1.0, 3) * math.radians(imu_cfg["gyro_bias_sigma_dps"]),
                   imu_cfg["accel_rw_mps_per_sqrt_s"], math.radians(imu_cfg["gyro_rw_dps_per_sqrt_s"]))

    def apply(self, dvel_body_mps, dang_body_rad, dt_s, rng):
        """Erroneous increments (eq. 10) for arrays (N, 3) of clean ones over ``dt_s`` (s, finite, >= 0:
        ValueError otherwise); returns new arrays."""
        if not 0.0 <= dt_s < math.inf:
            raise ValueError("ImuErrors.apply: dt_s must be a finite number of seconds >= 0, got %r" % (dt_s,))
        dvel = np.asarray(dvel_body_mps, dtype=float)
        dang = np.asarray(dang_body_rad, dtype=float)
        sq = math.sqrt(dt_s)
        n_acc = rng.standard_normal(dvel.shape)
        n_gyr = rng.standard_normal(dang.shape)
        dvel_e = dvel + self.accel_bias_mps2 * dt_s + self.accel_rw * sq * n_acc
        dang_e = dang + self.gyro_bias_radps * dt_s + self.gyro_rw * sq * n_gyr
        return dvel_e, dang_e


def _draw3(sigmas, rng, mode):
    s = np.asarray(sigmas, dtype=float)
    if mode == "fixed":
        return s.copy()
    if mode == "random":
        return rng.normal(0.0, 1.0, 3) * s
    raise ValueError("ic_mode must be 'random' or 'fixed', got %r" % (mode,))


def perturb_attitude(euler_rad, dpsi_rad):
    """h(F(Psi) F(dPsi)) (ag2u eq. 12): Psi rotated by dPsi about the navigation axes, rad."""
    return d2e(dcm_mul(e2d(list(euler_rad)), e2d(list(dpsi_rad))))


def initial_conditions(pos_ned_m, vel_ned_mps, euler_rad, setting, rng, mode="random"):
    """Erroneous initial conditions (eqs. 11-12). Returns (pos, vel, euler, errors dict)."""
    dp = _draw3(setting["ic_pos_m"], rng, mode)
    dv = _draw3(setting["ic_vel_mps"], rng, mode)
    dpsi = _draw3([math.radians(a) for a in setting["ic_att_deg"]], rng, mode)
    pos = [float(pos_ned_m[i] + dp[i]) for i in range(3)]                   # eq. 11a
    vel = [float(vel_ned_mps[i] + dv[i]) for i in range(3)]                 # eq. 11b
    euler = perturb_attitude(euler_rad, [float(a) for a in dpsi])           # eq. 12
    return pos, vel, list(euler), {"dp_ic_m": dp.tolist(), "dv_ic_mps": dv.tolist(),
                                   "dpsi_ic_rad": dpsi.tolist()}


def aiding_pose(pos_ned_m, euler_rad, setting, rng):
    """One noisy aiding pose (eq. 13): (pos_ned_m, euler_rad) with fresh Gaussian errors."""
    dp = rng.normal(0.0, 1.0, 3) * np.asarray(setting["aiding_pos_m"], dtype=float)
    dpsi = rng.normal(0.0, 1.0, 3) * np.radians(np.asarray(setting["aiding_att_deg"], dtype=float))
    pos = [float(pos_ned_m[i] + dp[i]) for i in range(3)]                   # eq. 13a
    euler = perturb_attitude(euler_rad, [float(a) for a in dpsi])           # eq. 13b (see module doc)
    return pos, list(euler)
