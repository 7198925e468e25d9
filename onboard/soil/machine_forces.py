"""The loader's soil force from its drive and lift-cylinder sensors (CPython host side: NumPy).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader", section 4: a real machine has no blade force sensor; its force comes
from a dynamics model of the drive (the horizontal force only) or from the hydraulic pressure (the vertical
force); reading aid ``shared/papers/notes/soil.md`` section 2.4 ("Identifiability": delta needs both
components).

Machine constants (``machine``: the loader's settings as ``harness.sim.track_loader`` names them, a
calibrated machine): ``mass_kg``, ``rolling_resistance``, ``sprocket_radius_m`` and the blade's
``blade.offset_m`` (edge ahead of the chassis centre), ``blade.pivot_m`` (lift-arm pivot: forward of the
chassis centre, above the track plane [m]), ``blade.cylinder_arm_m``, ``blade.cylinder_area_m2`` and
``blade.mass_kg``. Forces: ``fx_n`` horizontal, positive against the direction of travel (the draught);
``fz_n`` vertical, positive down (NED), acting on the blade.
"""
import numpy as np

GRAVITY_MPS2 = 9.80665


def lift_moment_nm(machine, lift_m, fx_n, fz_n):
    """Nose-down moment [N m] about the lift arms' pivot that the lift cylinders hold: the blade's weight
    and the soil's vertical force F_z at the horizontal lever L = offset - pivot_x, and the horizontal
    force F_x at the vertical lever h = pivot_up - lift (the edge below the pivot):
    M = (m_b g + F_z) L + F_x h."""
    b = machine["blade"]
    lever = b["offset_m"] - b["pivot_m"][0]
    h = b["pivot_m"][1] - lift_m
    return (b["mass_kg"] * GRAVITY_MPS2 + fz_n) * lever + fx_n * h


def fz_from_pressure(machine, pressure_pa, lift_m, fx_n):
    """The vertical soil force [N, positive down] from the lift-cylinder pressure [Pa] (the hydraulic route
    of the paper's section 4): inverts :func:`lift_moment_nm` given the horizontal force ``fx_n`` (from the
    drive path or another sensor). Broadcasts over arrays."""
    b = machine["blade"]
    lever = b["offset_m"] - b["pivot_m"][0]
    h = b["pivot_m"][1] - np.asarray(lift_m, dtype=float)
    moment = np.asarray(pressure_pa, dtype=float) * b["cylinder_arm_m"] * b["cylinder_area_m2"]
    return (moment - np.asarray(fx_n, dtype=float) * h) / lever - b["mass_kg"] * GRAVITY_MPS2


def speed_slope_mps2(speed_mps, dt_s, half_window=6, time_us=None):
    """Acceleration [m/s^2] at each sample: the least-squares slope of the speed over the samples within
    +-``half_window`` of it (fewer at the ends; 0 with a single sample), samples ``dt_s`` apart. With
    ``time_us`` (the samples' stamps, us, in time order) a gap (a stamp more than 1 us off ``dt_s`` from the
    one before it: dropped samples, or a repeated stamp) puts each sample at its own time in the fit; evenly
    stamped samples give the same numbers as without."""
    v = np.asarray(speed_mps, dtype=float)
    n = v.size
    if n < 2:
        return np.zeros(n)
    idx = np.arange(n)
    lo = np.maximum(idx - half_window, 0)
    hi = np.minimum(idx + half_window + 1, n)
    k = np.arange(n, dtype=float)
    if time_us is not None:
        t = np.asarray(time_us, dtype=np.int64)
        if t.shape != v.shape:
            raise ValueError("speed_slope_mps2: time_us must be %d stamps, one per speed, got %d" % (n, t.size))
        if np.any(np.abs(np.diff(t) - dt_s * 1e6) > 1.0):
            k = (t - t[0]) / (dt_s * 1e6)        # the samples' positions in periods of dt_s
    c1 = np.concatenate(([0.0], np.cumsum(v)))
    ck = np.concatenate(([0.0], np.cumsum(k)))
    ckk = np.concatenate(([0.0], np.cumsum(k * k)))
    ckv = np.concatenate(([0.0], np.cumsum(k * v)))
    m = (hi - lo).astype(float)
    sk, skk, sv, skv = ck[hi] - ck[lo], ckk[hi] - ckk[lo], c1[hi] - c1[lo], ckv[hi] - ckv[lo]
    den = m * skk - sk * sk
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(den > 0.0, (m * skv - sk * sv) / den, 0.0)
    return slope / dt_s


def fx_from_drive(machine, torque_nm, speed_mps, pitch_rad, dt_s, half_window=6, time_us=None):
    """The horizontal soil force [N] from the sprocket torque [N m] of both tracks (the dynamics-model route
    of the paper's section 4; it measures F_x only): F_x = tau / r - c_rr m g cos(pitch) - m g sin(pitch)
    - m a, the acceleration a from :func:`speed_slope_mps2` of the measured speed (arrays in time order,
    spacing ``dt_s``; ``time_us``, the stamps, places the samples around a gap). The rolling resistance ignores
    F_z's share of the normal load."""
    tau = np.asarray(torque_nm, dtype=float)
    pitch = np.asarray(pitch_rad, dtype=float)
    m = machine["mass_kg"]
    acc = speed_slope_mps2(speed_mps, dt_s, half_window, time_us)
    return (tau / machine["sprocket_radius_m"] - machine["rolling_resistance"] * m * GRAVITY_MPS2 * np.cos(pitch)
            - m * GRAVITY_MPS2 * np.sin(pitch) - m * acc)
