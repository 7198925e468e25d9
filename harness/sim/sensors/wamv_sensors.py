"""Simulated navigation sensors of the WAM-V (``harness.sim.wamv.Wamv``): GNSS, IMU and heading.

Each sensor is polled every simulation step with ``poll(now_us)`` and returns a sample when one is due
(its own rate, first sample at t = 0) or None; ``sample(now_us)`` takes one regardless (the sensor-model
interface of ``harness.sim.sensors.sim_sensor.ModelSensor``, whose clock then sets the rate). Samples are the types the boat EKF takes
(``onboard.vessel.samples``, ``onboard.core.samples.ImuSample``), so simulated and real drivers call
the same entry points. Randomness: one numpy Generator per sensor
(``RunRandom(seed).stream("gnss")`` etc.).

- :class:`Gnss`: local NED position fixes at ``rate_hz`` (4 Hz, robotx III-B) with white noise
  ``sigma_m`` per axis; with probability ``outlier_prob`` a fix is off by a further N(0, outlier_sigma_m)
  per axis (``last_outlier`` tells); with probability ``dropout_prob`` per fix a dropout of
  ``dropout_s`` starts (no fixes). Each fix carries var_m2 = sigma_m^2.
- :class:`BoatImu`: 100 Hz increments over each interval: dang_z = the wrapped yaw change plus gyro bias
  and white noise, dvel = the over-ground velocity change rotated into the body at the mid-interval
  yaw (integrated specific force of a level hull, z = -g dt) plus accelerometer bias and noise
  (ag2u eq. 10 error model, as ``harness.sim.sensors.imu``). Biases drawn once per run.
- :class:`Heading`: yaw (magnetometer or INS) at ``rate_hz`` with white noise and a constant offset.
- :class:`YawGyro`: the yaw rate at the sample time with white noise and a constant bias (a rate
  output, for the EKF's yaw-rate update and the log's yaw_rate_radps column).
"""
import math

from onboard.core.angles import wrap_pi
from onboard.core.samples import ImuSample
from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, within
from onboard.core.units import G_MPS2, s_to_us
from onboard.vessel.samples import HeadingSample, PositionSample, YawRateSample

GNSS_DEFAULTS = {
    "rate_hz": 4.0,
    "sigma_m": 0.5,
    "outlier_prob": 0.01,
    "outlier_sigma_m": 8.0,
    "dropout_prob": 0.005,
    "dropout_s": 2.0,
}
GNSS_SETTING_RANGES = {
    "rate_hz": within(0.1, 100.0), "sigma_m": POSITIVE, "outlier_prob": within(0.0, 1.0),
    "outlier_sigma_m": NON_NEGATIVE, "dropout_prob": within(0.0, 1.0), "dropout_s": NON_NEGATIVE,
}
IMU_DEFAULTS = {
    "rate_hz": 100.0,
    "gyro_bias_sigma_dps": 0.1,
    "gyro_noise_dps_per_sqrt_s": 0.02,
    "accel_bias_sigma_mps2": 0.05,
    "accel_noise_mps_per_sqrt_s": 0.01,
}
IMU_SETTING_RANGES = {
    "rate_hz": within(1.0, 1000.0), "gyro_bias_sigma_dps": NON_NEGATIVE, "gyro_noise_dps_per_sqrt_s": NON_NEGATIVE,
    "accel_bias_sigma_mps2": NON_NEGATIVE, "accel_noise_mps_per_sqrt_s": NON_NEGATIVE,
}
HEADING_DEFAULTS = {
    "rate_hz": 10.0,
    "sigma_deg": 1.0,
    "offset_deg": 0.0,
}
HEADING_SETTING_RANGES = {"rate_hz": within(0.1, 1000.0), "sigma_deg": POSITIVE, "offset_deg": ANY_NUMBER}


class _Periodic:
    def __init__(self, rate_hz):
        self.period_us = int(round(1e6 / rate_hz))
        self.next_us = 0

    def due(self, now_us):
        """True when a sample is due at ``now_us`` (every period from t = 0; missed ones are skipped)."""
        if now_us < self.next_us:
            return False
        # the first period boundary after now_us, in one step however many periods were missed
        self.next_us += (int((now_us - self.next_us) // self.period_us) + 1) * self.period_us
        return True

    def poll(self, now_us):
        """The sample at ``now_us`` when one is due at this sensor's own rate, else None."""
        return self.sample(now_us) if self.due(now_us) else None


class Gnss(_Periodic):
    """GNSS position fixes of a vessel (module docstring)."""

    def __init__(self, vessel, rng, settings=None):
        self.cfg = checked(GNSS_DEFAULTS, GNSS_SETTING_RANGES, settings, "gnss")
        _Periodic.__init__(self, self.cfg["rate_hz"])
        self.vessel = vessel
        self.rng = rng
        self.dropout_until_us = -1
        self.last_outlier = False
        self.fixes = 0
        self.outliers = 0
        self.dropped = 0

    def sample(self, now_us):
        c = self.cfg
        rng = self.rng
        if now_us < self.dropout_until_us:
            self.dropped += 1
            return None
        if c["dropout_prob"] > 0.0 and rng.uniform() < c["dropout_prob"]:
            self.dropout_until_us = now_us + s_to_us(c["dropout_s"])
            self.dropped += 1
            return None
        noise = rng.standard_normal(2) * c["sigma_m"]
        n_m = self.vessel.north_m + float(noise[0])
        e_m = self.vessel.east_m + float(noise[1])
        self.last_outlier = c["outlier_prob"] > 0.0 and rng.uniform() < c["outlier_prob"]
        if self.last_outlier:
            jump = rng.standard_normal(2) * c["outlier_sigma_m"]
            n_m += float(jump[0])
            e_m += float(jump[1])
            self.outliers += 1
        self.fixes += 1
        return PositionSample(now_us, (n_m, e_m), c["sigma_m"] ** 2)


class BoatImu(_Periodic):
    """IMU increments on a planar vessel (module docstring)."""

    def __init__(self, vessel, rng, settings=None):
        self.cfg = checked(IMU_DEFAULTS, IMU_SETTING_RANGES, settings, "boat imu")
        _Periodic.__init__(self, self.cfg["rate_hz"])
        self.vessel = vessel
        self.rng = rng
        c = self.cfg
        self.gyro_bias_radps = math.radians(c["gyro_bias_sigma_dps"]) * float(rng.standard_normal())
        self.accel_bias_mps2 = [c["accel_bias_sigma_mps2"] * float(v) for v in rng.standard_normal(2)]
        self._last = None

    def sample(self, now_us):
        """ImuSample for the interval since the previous sample (None for the first). ``now_us`` (us) must be
        later than the previous sample's (ValueError otherwise; the state and noise stream stay as they were)."""
        v = self.vessel
        last = self._last
        if last is not None and not now_us > last[0]:
            raise ValueError("boat imu: sample at %r us is not after the previous sample at %d us" % (now_us, last[0]))
        truth = (now_us, v.yaw_rad, v.vel_ned_mps())
        self._last = truth
        if last is None:
            return None
        t0, yaw0, vel0 = last
        dt_us = now_us - t0
        dt = dt_us * 1e-6
        dyaw = wrap_pi(truth[1] - yaw0)
        mid = yaw0 + 0.5 * dyaw
        c, s = math.cos(mid), math.sin(mid)
        dvn = truth[2][0] - vel0[0]
        dve = truth[2][1] - vel0[1]
        cfg = self.cfg
        n = self.rng.standard_normal(3)
        arw = cfg["accel_noise_mps_per_sqrt_s"] * math.sqrt(dt)
        grw = math.radians(cfg["gyro_noise_dps_per_sqrt_s"]) * math.sqrt(dt)
        dvel = (c * dvn + s * dve + self.accel_bias_mps2[0] * dt + arw * float(n[0]),
                -s * dvn + c * dve + self.accel_bias_mps2[1] * dt + arw * float(n[1]),
                -G_MPS2 * dt)
        dang = (0.0, 0.0, dyaw + self.gyro_bias_radps * dt + grw * float(n[2]))
        return ImuSample(now_us, dt_us, dvel, dang)


class Heading(_Periodic):
    """Heading of a vessel (module docstring)."""

    def __init__(self, vessel, rng, settings=None):
        self.cfg = checked(HEADING_DEFAULTS, HEADING_SETTING_RANGES, settings, "heading")
        _Periodic.__init__(self, self.cfg["rate_hz"])
        self.vessel = vessel
        self.rng = rng
        self.sigma_rad = math.radians(self.cfg["sigma_deg"])
        self.offset_rad = math.radians(self.cfg["offset_deg"])

    def sample(self, now_us):
        yaw = wrap_pi(self.vessel.yaw_rad + self.offset_rad + self.sigma_rad * float(self.rng.standard_normal()))
        return HeadingSample(now_us, yaw, self.sigma_rad ** 2)


GYRO_DEFAULTS = {
    "rate_hz": 100.0,
    "sigma_dps": 0.2,
    "bias_dps": 0.0,
}
GYRO_SETTING_RANGES = {"rate_hz": within(0.1, 1000.0), "sigma_dps": POSITIVE, "bias_dps": ANY_NUMBER}


class YawGyro(_Periodic):
    """Yaw-rate samples (``onboard.vessel.samples.YawRateSample``) at ``rate_hz``: the vessel's yaw rate
    at the sample time plus white noise ``sigma_dps`` and a constant ``bias_dps``; each carries its
    variance. The sampled-rate counterpart of :class:`BoatImu`'s angle increments."""

    def __init__(self, vessel, rng, settings=None):
        self.cfg = checked(GYRO_DEFAULTS, GYRO_SETTING_RANGES, settings, "yaw gyro")
        _Periodic.__init__(self, self.cfg["rate_hz"])
        self.vessel = vessel
        self.rng = rng
        self.sigma_radps = math.radians(self.cfg["sigma_dps"])
        self.bias_radps = math.radians(self.cfg["bias_dps"])

    def sample(self, now_us):
        rate = self.vessel.yaw_rate_radps + self.bias_radps + self.sigma_radps * float(self.rng.standard_normal())
        return YawRateSample(now_us, rate, self.sigma_radps ** 2)
