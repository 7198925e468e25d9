"""Simulated aiding pose sensor (ag2u eq. 13).

p_m^e = p_m^t + dp_err                                   (ag2u eq. 13a)
Psi_m^e = h(F(dPsi_err) * F(Psi_m^t))                    (after ag2u eq. 13b)

Two readings of the aiding error (``error_model``):

- ``white`` (default): dp_err ~ N(0, pos_sigma_m) and dPsi_err ~ N(0, att_sigma_deg)
  per axis, drawn anew for every sample (zero-mean measurement noise; the ES-EKF
  averages it down).
- ``constant``: eq. 13 read literally, like the IC errors of eq. 11: dp_err and
  dPsi_err are fixed vectors whose per-axis sizes are pos_sigma_m / att_sigma_deg
  (ag2u IV-B: (5, 5, 5) cm and (1, 1, 5) deg), with one random sign per axis drawn
  at the first sample and held for the sensor's life (an episode). A fixed
  aiding error is what a mis-surveyed marker or camera extrinsic leaves; the ES-EKF
  cannot tell it from the truth, so it stays in the fused pose.
The attitude error is composed as a rotation (not added to the angles), with F/h
the e2d/d2e operators of eqs. 3 and 7. The paper writes F(Psi)^T * F(dPsi); with
our F returning D_ned_to_body the equivalent body-frame perturbation is
F(dPsi) * F(Psi). Each sample carries its covariance. Dropout windows (no samples)
can be configured to exercise the runtime's watchdog.
"""
import math

from onboard.core.rotations import d2e, dcm_mul, e2d
from onboard.core.samples import PoseSample
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, RATE_HZ, checked, one_of, vector
from onboard.core.units import s_to_us

DEFAULTS = {
    "rate_hz": 10,
    "pos_sigma_m": 0.05,
    "att_sigma_deg": [1.0, 1.0, 5.0],
    "dropout_start_s": -1.0,        # < 0: no dropout
    "dropout_duration_s": 0.0,
    "error_model": "white",         # white | constant (see the module docstring)
}

ERROR_MODELS = ("white", "constant")
SETTING_RANGES = {"rate_hz": RATE_HZ, "pos_sigma_m": NON_NEGATIVE, "att_sigma_deg": vector(3, NON_NEGATIVE),
                  "dropout_start_s": ANY_NUMBER, "dropout_duration_s": NON_NEGATIVE,
                  "error_model": one_of(*ERROR_MODELS)}


class AidingPoseSensor:
    def __init__(self, truth_fn, rng, config=None):
        """truth_fn() -> (pos_ned_m (3), euler_rad (3)) of the vehicle now."""
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "AidingPoseSensor")
        self.cfg = cfg
        self._constant_error = None     # (dp_m (3), dpsi_rad (3)) once drawn
        self.truth_fn = truth_fn
        self.rng = rng
        self.samples = 0

    def in_dropout(self, now_us):
        """Whether ``now_us`` (us) lies in the dropout window [dropout_start_s, dropout_start_s +
        dropout_duration_s), its ends rounded to whole microseconds."""
        start = self.cfg["dropout_start_s"]
        if start < 0:
            return False
        start_us = s_to_us(start)
        return start_us <= now_us < start_us + s_to_us(self.cfg["dropout_duration_s"])

    def sample(self, now_us):
        """A noisy PoseSample, or None inside a dropout window."""
        if self.in_dropout(now_us):
            return None
        pos, euler = self.truth_fn()
        cfg = self.cfg
        sig_p = cfg["pos_sigma_m"]
        sig_a = [math.radians(v) for v in cfg["att_sigma_deg"]]
        dp, da = self._error(sig_p, sig_a)
        pos_e = [pos[i] + dp[i] for i in range(3)]
        euler_e = d2e(dcm_mul(e2d(da), e2d(euler)))
        self.samples += 1
        return PoseSample(now_us, pos_e, euler_e, cov_pos_m2=[sig_p ** 2] * 3,
                          cov_att_rad2=[s ** 2 for s in sig_a])

    def _error(self, sig_p, sig_a):
        """(dp_err_m (3), dPsi_err_rad (3)) for this sample (ag2u eq. 13)."""
        if self.cfg["error_model"] == "white":
            dp = self.rng.normal(0.0, 1.0, 3) * sig_p
            return [float(v) for v in dp], [float(self.rng.normal()) * sig_a[i] for i in range(3)]
        if self._constant_error is None:
            signs = [1.0 if v else -1.0 for v in self.rng.integers(0, 2, 6)]
            self._constant_error = ([signs[i] * sig_p for i in range(3)],
                                    [signs[3 + i] * sig_a[i] for i in range(3)])
        return self._constant_error
