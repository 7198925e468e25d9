"""Simulated hydrophones: the arrival times of a pinger's pings at K hydrophones on a moving boat (RobotX AAVS
III-D-1: "a series of timestamps that correspond to when the hydrophone detected a ping"; reading aid A22).

Level 1 of the reading aid: timestamps are simulated directly, not audio. The horizontal plane (pinger
depth ignored: a 2-D problem beyond a few metres of range). For a pinger at ``p`` and hydrophone k at world
position ``h_k`` (its body FRD position through the boat pose), the arrival time is
``t_emit + |p - h_k| / c + n_k`` with ``n_k ~ N(0, timing_sigma_s^2)`` independent per hydrophone and ping.
With probability ``outlier_prob`` a ping is an outlier: one hydrophone (drawn uniformly) detects a multipath
arrival instead, later than the direct one by ``outlier_delay_s`` (uniform in [lo, hi]). The ping carries
the time differences ``tdoa_k0 = t_k - t_0`` (k = 1..K-1) the locator takes (``onboard.vessel.pinger``).

Seeded: the caller passes a numpy Generator (``harness.sim.rng.RunRandom(seed).stream("hydrophones")``).
"""
import numpy as np

from onboard.core.settings import POSITIVE, checked, pair, within
from onboard.vessel.pinger import hydrophones_world

DEFAULTS = {
    "sound_speed_mps": 1482.0,          # fresh water, 20 C (reading aid A22)
    "timing_sigma_s": 2e-6,             # noise of one arrival time
    "outlier_prob": 0.0,                # per ping: one hydrophone hears a multipath arrival
    "outlier_delay_s": [1e-4, 2e-3],    # how much later the multipath arrival comes (uniform)
}
SETTING_RANGES = {
    "sound_speed_mps": within(1000.0, 2000.0),
    "timing_sigma_s": POSITIVE,
    "outlier_prob": within(0.0, 1.0),
    "outlier_delay_s": pair(within(0.0, 1.0), ordered=True),
}


class Hydrophones:
    """K hydrophones at body positions ``body_xy`` (K x 2, x_m forward, y_m right) with ``settings``
    (``DEFAULTS``, checked) drawing their noise from the Generator ``rng``."""

    def __init__(self, body_xy, settings=None, rng=None):
        self.settings = checked(DEFAULTS, SETTING_RANGES, settings or {}, "hydrophones")
        self.body_xy = np.asarray(body_xy, dtype=float)
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def arrivals(self, pinger_ne_m, pose, emit_s=0.0):
        """``(arrival_s, outlier_hydrophone)``: the K arrival times (s) of one ping emitted at ``emit_s``
        from ``pinger_ne_m`` (north_m, east_m) heard at ``pose`` (north_m, east_m, yaw_rad), and the index of
        the hydrophone that heard a multipath arrival (-1: none)."""
        s = self.settings
        h = hydrophones_world(pose, self.body_xy)
        dist_m = np.hypot(h[:, 0] - pinger_ne_m[0], h[:, 1] - pinger_ne_m[1])
        k = h.shape[0]
        noise = self.rng.normal(0.0, s["timing_sigma_s"], size=k)
        arrival = emit_s + dist_m / s["sound_speed_mps"] + noise
        # the draws are made whether or not the ping is an outlier, so the noise of later pings does not
        # depend on outlier_prob
        u, which, delay = self.rng.random(), int(self.rng.integers(0, k)), self.rng.uniform(*s["outlier_delay_s"])
        wrong = -1
        if u < s["outlier_prob"]:
            arrival[which] += delay
            wrong = which
        return arrival, wrong

    def ping(self, pinger_ne_m, pose):
        """``(tdoa_s, outlier_hydrophone)``: the K - 1 time differences (s, arrival at k minus at 0) of one
        ping and the multipath hydrophone (-1: none)."""
        arrival, wrong = self.arrivals(pinger_ne_m, pose)
        return arrival[1:] - arrival[0], wrong
