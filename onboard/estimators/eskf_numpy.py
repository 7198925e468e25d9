"""NumPy path of the 15-state ESKF (CPython only, e.g. on a Raspberry Pi without a Cython build).

Same model, API and input checks as :mod:`onboard.estimators.eskf` (read its
docstring); the nominal INS stays the pure :class:`~onboard.estimators.ins.Strapdown`
(3-vectors are faster as floats than as arrays) and the covariance algebra uses
dense 15x15 NumPy products: P <- F P F^T + Q, Joseph form
(I - K H) P (I - K H)^T + K R K^T. Results agree with the pure path to rounding
(not bit-for-bit: BLAS sums in another order).
"""
import numpy as np

from onboard.estimators import eskf as _pure
from onboard.estimators.eskf import (ATT, BACC, BGYR, FUSED, GATED, N_MEAS, N_STATE, NOT_PD, POS, VEL,
                                     EskfInputError, EskfNumericError, attitude_residual, parse_imu)

POS_SLICE = slice(POS, POS + 3)
ATT_SLICE = slice(ATT, ATT + 3)
VEL_SLICE = slice(VEL, VEL + 3)
BACC_SLICE = slice(BACC, BACC + 3)
BGYR_SLICE = slice(BGYR, BGYR + 3)
MEAS_SLICE = slice(0, N_MEAS)        # H selects [dp, dpsi] (ag2u eq. 9)
_I3 = np.eye(3)
_I15 = np.eye(N_STATE)


class Eskf(_pure.Eskf):
    """Error-state EKF with NumPy covariance algebra. API as the pure Eskf."""

    impl = "numpy"

    def __init__(self, config=None):
        _pure.Eskf.__init__(self, config)
        self.P = np.zeros((N_STATE, N_STATE))

    def initialize(self, time_us, pos_ned_m, vel_ned_mps, euler_rad,
                   accel_bias_mps2=(0.0, 0.0, 0.0), gyro_bias_radps=(0.0, 0.0, 0.0)):
        _pure.Eskf.initialize(self, time_us, pos_ned_m, vel_ned_mps, euler_rad, accel_bias_mps2,
                              gyro_bias_radps)
        self.P = np.array(self.P, dtype=float).reshape(N_STATE, N_STATE)

    def _q(self, dt):
        """Process noise for one IMU step (cached per dt: the IMU period rarely changes)."""
        cached = getattr(self, "_q_cache", None)
        if cached is not None and cached[0] == dt:
            return cached[1]
        Q = np.zeros((N_STATE, N_STATE))
        qa = self._var_acc * dt
        for i in range(3):
            Q[POS + i, POS + i] = qa * dt * dt
            Q[POS + i, VEL + i] = qa * dt
            Q[VEL + i, POS + i] = qa * dt
            Q[VEL + i, VEL + i] = qa
            Q[ATT + i, ATT + i] = self._var_gyr * dt
            Q[BACC + i, BACC + i] = self._var_bacc * dt
            Q[BGYR + i, BGYR + i] = self._var_bgyr * dt
        self._q_cache = (dt, Q)
        return Q

    def _propagate(self, dt, dv_ned):
        F = getattr(self, "_F", None)
        if F is None:
            F = self._F = _I15.copy()
        RT = np.array(self.ins.D_ned_to_body).reshape(3, 3)                # D_n^b = R^T
        F[POS_SLICE, VEL_SLICE] = _I3 * dt
        F[ATT_SLICE, BGYR_SLICE] = RT.T * -dt
        F[VEL_SLICE, ATT_SLICE] = ((0.0, dv_ned[2], -dv_ned[1]),
                                   (-dv_ned[2], 0.0, dv_ned[0]),
                                   (dv_ned[1], -dv_ned[0], 0.0))       # -[dv_ned]x
        F[VEL_SLICE, BACC_SLICE] = F[ATT_SLICE, BGYR_SLICE]
        P = F @ self.P @ F.T
        P += self._q(dt)
        self.P = 0.5 * (P + P.T)

    def _fuse(self, pos, euler, r):
        """Update kernel with dense NumPy algebra (ag2u eqs. 5b, 6, 9; Joseph form): FUSED, GATED or NOT_PD."""
        ins = self.ins
        P = self.P
        p_ins = ins.pos_ned_m
        dpsi = attitude_residual(ins.D_ned_to_body, euler)                # ag2u eq. 6
        y = np.array([pos[0] - p_ins[0], pos[1] - p_ins[1], pos[2] - p_ins[2],
                      dpsi[0], dpsi[1], dpsi[2]])
        Rm = np.diag(r)
        S = P[MEAS_SLICE, MEAS_SLICE] + Rm
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            return NOT_PD
        w = np.linalg.solve(L, y)
        nis = float(w @ w)
        self.last_nis = nis
        self.last_innovation = [float(v) for v in y]
        gate = self.cfg["gate_nis"]
        if gate > 0.0 and nis > gate:
            return GATED
        K = np.linalg.solve(S, P[MEAS_SLICE, :]).T                          # P H^T S^-1
        dx = K @ y
        IKH = _I15.copy()
        IKH[:, MEAS_SLICE] -= K
        Pn = IKH @ P @ IKH.T + K @ Rm @ K.T                                   # Joseph form
        self.P = 0.5 * (Pn + Pn.T)
        dx = [float(v) for v in dx]
        for i in range(3):
            ins.pos_ned_m[i] += dx[POS + i]
            ins.vel_ned_mps[i] += dx[VEL + i]
            ins.accel_bias_mps2[i] += dx[BACC + i]
            ins.gyro_bias_radps[i] += dx[BGYR + i]
        ins.correct_attitude(dx[ATT:ATT + 3])
        return FUSED

    def _set_variance(self, i, var):
        self.P[i, i] = var

    def covariance(self):
        return [float(v) for v in self.P.ravel()]

    def covariance_matrix(self):
        """The 15x15 covariance as a NumPy array (a copy)."""
        return self.P.copy()

    def pose_covariance(self):
        return [float(v) for v in self.P[MEAS_SLICE, MEAS_SLICE].ravel()]

    def set_state(self, state):
        _pure.Eskf.set_state(self, state)
        self.P = np.array(self.P, dtype=float).reshape(N_STATE, N_STATE)


__all__ = ["Eskf", "EskfInputError", "EskfNumericError", "parse_imu"]
