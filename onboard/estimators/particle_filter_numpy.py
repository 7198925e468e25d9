"""NumPy kernels of the relative-pose particle filter (same numbers as the pure kernels).

Vectorised versions of :mod:`onboard.estimators.particle_filter`'s kernels with the same
signatures (pocket IV-B motion/weight, systematic resampling, refresh around the learned
estimate). Buffers are float64 arrays; the draws are passed in. Expression order matches
the pure path term by term, so results differ only where NumPy's exp/sin/cos differ from
libm by an ulp (tests hold all paths to 1e-12).
"""
import numpy as np

from onboard.estimators.particle_filter import (EST_E2_MIN, EST_LMAX, EST_NEFF, EST_SW, EST_X, EST_Y, EST_YAW,
                                                PARTICLE_DIM, PI, TWO_PI, X, Y, YAW)

name = "numpy"


def alloc(n):
    return np.zeros(n, dtype=np.float64)


def as_buffer(seq):
    return np.ascontiguousarray(seq, dtype=np.float64)


def _wrap_pi(a):
    """Angles wrapped to [-pi, pi) radians (onboard.core.angles.wrap_pi's arithmetic, element-wise)."""
    a = np.fmod(a + PI, TWO_PI)
    a += TWO_PI * (a < 0.0)
    a = np.where(a >= TWO_PI, 0.0, a)   # a remainder just below 0 (e.g. -4e-16) rounds up to 2 pi, which is 0
    return a - PI


def predict_weight(xs, ys, yaws, ws, lws, n, dt_s, vx_own_mps, vy_own_mps, vx_peer_mps, vy_peer_mps,
                   range_m, bias_m, inv_two_var_m2, noise, sigma_pos_m, sigma_yaw_rad, est):
    """See particle_filter.predict_weight (pocket IV-B motion, III-A weight)."""
    x = xs[:n]
    y = ys[:n]
    yaw = yaws[:n]
    nz = noise[:PARTICLE_DIM * n].reshape(n, PARTICLE_DIM)
    c = np.cos(yaw)
    s = np.sin(yaw)
    x[:] = x + dt_s * (c * vx_peer_mps - s * vy_peer_mps - vx_own_mps) + sigma_pos_m * nz[:, X]
    y[:] = y + dt_s * (s * vx_peer_mps + c * vy_peer_mps - vy_own_mps) + sigma_pos_m * nz[:, Y]
    yaw[:] = _wrap_pi(yaw + sigma_yaw_rad * nz[:, YAW])
    e = range_m - bias_m - np.sqrt(x * x + y * y)
    e2 = e * e
    e2_min = e2.min()
    lw = lws[:n] - e2 * inv_two_var_m2
    l_max = lw.max()
    lw -= l_max
    lws[:n] = lw
    w = np.exp(lw)
    ws[:n] = w
    sw = w.sum()
    est[EST_X] = (w * x).sum() / sw
    est[EST_Y] = (w * y).sum() / sw
    est[EST_YAW] = np.arctan2((w * np.sin(yaw)).sum(), (w * np.cos(yaw)).sum())
    est[EST_NEFF] = sw * sw / (w * w).sum()
    est[EST_E2_MIN] = e2_min
    est[EST_SW] = sw
    est[EST_LMAX] = l_max


def resample(xs, ys, yaws, ws, n, n_keep, u0, xs_out, ys_out, yaws_out):
    """See particle_filter.resample (systematic, one uniform draw)."""
    cum = np.cumsum(ws[:n])
    step = cum[-1] / n_keep
    targets = (u0 + np.arange(n_keep, dtype=np.float64)) * step
    idx = np.searchsorted(cum, targets, side="right")
    np.minimum(idx, n - 1, out=idx)
    xs_out[:n_keep] = xs[idx]
    ys_out[:n_keep] = ys[idx]
    yaws_out[:n_keep] = yaws[idx]


def refresh(xs, ys, yaws, start, count, range_m, bearing_rad, yaw_rad,
            sigma_range_m, sigma_bearing_rad, sigma_yaw_rad, noise):
    """See particle_filter.refresh (polar spread around the learned estimate)."""
    if count <= 0:
        return
    nz = noise[:PARTICLE_DIM * count].reshape(count, PARTICLE_DIM)
    r = np.abs(range_m + sigma_range_m * nz[:, 0])
    b = bearing_rad + sigma_bearing_rad * nz[:, 1]
    xs[start:start + count] = r * np.cos(b)
    ys[start:start + count] = r * np.sin(b)
    yaws[start:start + count] = _wrap_pi(yaw_rad + sigma_yaw_rad * nz[:, 2])


def weighted_spread(xs, ys, ws, n, mean_x_m, mean_y_m, sw):
    """See particle_filter.weighted_spread (the refresh gate of refresh_mode "spread")."""
    dx = xs[:n] - mean_x_m
    dy = ys[:n] - mean_y_m
    return float(np.sqrt((ws[:n] * (dx * dx + dy * dy)).sum() / sw))


def init_ring(xs, ys, yaws, n, range_m, sigma_range_m, normals, uniforms):
    """See particle_filter.init_ring (uninformed start of the pure particle filter)."""
    r = np.abs(range_m + sigma_range_m * normals[:n])
    u = uniforms[:2 * n].reshape(n, 2)
    b = -PI + TWO_PI * u[:, 0]
    xs[:n] = r * np.cos(b)
    ys[:n] = r * np.sin(b)
    yaws[:n] = -PI + TWO_PI * u[:, 1]


class NumpyDraws:
    """Standard normals and uniforms from a numpy Generator (e.g. RunRandom(seed).stream(name))."""

    def __init__(self, generator):
        self.gen = generator

    def normals(self, k):
        return self.gen.standard_normal(k)

    def uniforms(self, k):
        return self.gen.random(k)

    def random(self):
        """One uniform in [0, 1) (``random.random``'s interface, e.g. a behaviour's random walk)."""
        return self.gen.random()

    def get_state(self):
        """The generator's state (``bit_generator.state``: a dict of names and whole numbers, JSON-able)."""
        return self.gen.bit_generator.state

    def set_state(self, state):
        """Continue from ``state`` (as :meth:`get_state` gave it): the next draws repeat the ones drawn
        after it was taken. A state of another bit generator (e.g. ``Philox``) swaps in a generator of
        that kind. ValueError for anything that is not such a state, with the draws as they were."""
        kind = state.get("bit_generator") if isinstance(state, dict) else None
        gen = self.gen
        if kind != type(gen.bit_generator).__name__:
            bit_generator = getattr(np.random, str(kind), None)
            if not (isinstance(bit_generator, type) and issubclass(bit_generator, np.random.BitGenerator)):
                raise ValueError("not the state of a NumPy bit generator: %r" % (kind,))
            gen = np.random.Generator(bit_generator())
        try:
            gen.bit_generator.state = state
        except (TypeError, KeyError, ValueError, OverflowError) as exc:
            raise ValueError("not a valid %s state: %s" % (kind, exc))
        self.gen = gen
