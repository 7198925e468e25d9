"""Roll and pitch from an IMU: the accelerometer's gravity vector blended with the integrated gyro (a
complementary filter; pure, MicroPython).

Input: :class:`onboard.core.samples.ImuSample` increments over ``dt_us``: ``dvel_body_mps`` (integrated
specific force, body FRD) and ``dang_body_rad`` (integrated angular rate, body FRD). Output: ``roll_rad``,
``pitch_rad``: the Z-Y-X Euler angles of R_body_to_ned (CONVENTIONS.md; pitch positive nose up).

- Gravity vector: at rest the specific force in the body frame is f = R_body_to_ned^T (0, 0, -g), i.e.
  f = (g sin(pitch), -g sin(roll) cos(pitch), -g cos(roll) cos(pitch)), so
  pitch_acc = atan2(f_x, sqrt(f_y^2 + f_z^2)) and roll_acc = atan2(-f_y, -f_z).
- Gyro: the Euler-angle rates of body rates (p, q, r): roll' = p + (q sin(roll) + r cos(roll)) tan(pitch),
  pitch' = q cos(roll) - r sin(roll), integrated over each sample.
- Blend (first-order complementary filter of time constant tau): angle <- angle_gyro + (angle_acc -
  angle_gyro) * dt / (tau + dt). The accelerometer correction is skipped (counted in ``gated``) while
  | |f| - g | exceeds ``accel_gate_mps2`` (the robot is accelerating hard or bouncing).

The first sample initialises both angles from the accelerometer alone. The thesis's robot reads its tilt
from an IMU (Cook thesis 7.1.1, Alg. 6 "get_pitch()"); the estimator itself is not from the thesis.
A sample that is not an ImuSample with finite fields and a positive ``dt_us`` (a field missing, of the
wrong type or too short included), or whose angle increments integrate to a non-finite roll or pitch, is
counted in ``rejected`` and leaves the state unchanged.
"""
import math

from onboard.core.settings import POSITIVE, checked
from onboard.core.units import G_MPS2

DEFAULTS = {
    "time_constant_s": 1.0,           # tau: gyro trusted below ~1/tau, accelerometer above
    "accel_gate_mps2": 1.5,           # skip the accelerometer while | |f| - g | exceeds this
}
SETTING_RANGES = {"time_constant_s": POSITIVE, "accel_gate_mps2": POSITIVE}


def tilt_from_specific_force(fx, fy, fz):
    """(roll_rad, pitch_rad) of a body at rest whose accelerometer reads specific force (fx, fy, fz) FRD."""
    return math.atan2(-fy, -fz), math.atan2(fx, math.sqrt(fy * fy + fz * fz))


class TiltEstimator:
    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "TiltEstimator")
        self.cfg = cfg
        self.tau_s = float(cfg["time_constant_s"])
        self.gate = float(cfg["accel_gate_mps2"])
        self.initialized = False
        self.roll_rad = 0.0
        self.pitch_rad = 0.0
        self.time_us = None
        self.predicts = 0
        self.gated = 0
        self.rejected = 0

    def predict(self, imu):
        """Fuse one ImuSample; False (counted in ``rejected``) for a sample that cannot be used."""
        dt_us = getattr(imu, "dt_us", 0)
        dv = getattr(imu, "dvel_body_mps", None)
        da = getattr(imu, "dang_body_rad", None)
        time_us = getattr(imu, "time_us", None)
        try:
            if dv is None or da is None or time_us is None or not dt_us > 0:
                raise ValueError
            dt = dt_us * 1e-6
            fx, fy, fz = dv[0] / dt, dv[1] / dt, dv[2] / dt
            # x - x == 0 fails for NaN and infinities
            ok = (fx - fx == 0 and fy - fy == 0 and fz - fz == 0 and da[0] - da[0] == 0 and da[1] - da[1] == 0
                  and da[2] - da[2] == 0)
        except (TypeError, ValueError, IndexError):      # a field missing, of the wrong type or too short
            ok = False
        if not ok:
            self.rejected += 1
            return False
        roll_acc, pitch_acc = tilt_from_specific_force(fx, fy, fz)
        if not self.initialized:
            self.predicts += 1
            self.time_us = time_us
            self.roll_rad, self.pitch_rad = roll_acc, pitch_acc
            self.initialized = True
            return True
        roll, pitch = self.roll_rad, self.pitch_rad
        sr, cr = math.sin(roll), math.cos(roll)
        cp = math.cos(pitch)
        if abs(cp) < 1e-6:
            cp = 1e-6 if cp >= 0 else -1e-6
        roll += da[0] + (da[1] * sr + da[2] * cr) * math.sin(pitch) / cp
        pitch += da[1] * cr - da[2] * sr
        if not (roll - roll == 0 and pitch - pitch == 0):
            # finite increments whose integration overflows (an absurd rate): refused like a non-finite sample
            self.rejected += 1
            return False
        if roll >= math.pi or roll < -math.pi:       # keep roll in [-pi, pi) (a roll-over, a fast spin)
            roll = math.fmod(roll + math.pi, 2.0 * math.pi)
            roll = (roll + 2.0 * math.pi if roll < 0.0 else roll) - math.pi
        self.predicts += 1
        self.time_us = time_us
        norm = math.sqrt(fx * fx + fy * fy + fz * fz)
        if abs(norm - G_MPS2) <= self.gate:
            k = dt / (self.tau_s + dt)
            droll = roll_acc - roll
            if droll > math.pi:
                droll -= 2.0 * math.pi
            elif droll < -math.pi:
                droll += 2.0 * math.pi
            roll += k * droll
            if roll >= math.pi or roll < -math.pi:
                roll = roll - 2.0 * math.pi if roll >= math.pi else roll + 2.0 * math.pi
            pitch += k * (pitch_acc - pitch)
        else:
            self.gated += 1
        self.roll_rad, self.pitch_rad = roll, pitch
        return True

    def counters(self):
        return {"predicts": self.predicts, "gated": self.gated, "rejected": self.rejected}
