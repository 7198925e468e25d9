"""The LIDAR ray cast against a heightfield for rays from outside the cell centres' extent: a ray that has
gone below the lowest surface before it enters the extent hits where it enters (the extent's side), as
one entering just above the lowest surface does, instead of being cut off as if it had already hit."""
import numpy as np
import pytest

from harness.sim.soil_lidar import raycast_heightfield


def _brute(h, g, o, d, t_max, steps=20001):
    """The first of ``steps`` ranges over [0, t_max] at which the ray is at or below the bilinear surface
    between the cell centres (inf: none)."""
    t = np.linspace(0.0, t_max, steps)
    p = o[None, :] + t[:, None] * d[None, :]
    u, v = p[:, 0] / g - 0.5, p[:, 1] / g - 0.5
    inside = (u >= 0) & (v >= 0) & (u <= h.shape[0] - 1) & (v <= h.shape[1] - 1)
    i = np.clip(np.floor(u).astype(int), 0, h.shape[0] - 2)
    j = np.clip(np.floor(v).astype(int), 0, h.shape[1] - 2)
    fu, fv = u - i, v - j
    s = ((1 - fu) * (1 - fv) * h[i, j] + fu * (1 - fv) * h[i + 1, j] + (1 - fu) * fv * h[i, j + 1]
         + fu * fv * h[i + 1, j + 1])
    hit = inside & (p[:, 2] <= s)
    return t[np.argmax(hit)] if np.any(hit) else np.inf


def test_a_ray_entering_the_extent_below_every_surface_hits_at_the_entry():
    h = np.zeros((8, 8))                 # flat ground at 0 over centres 0.125 .. 1.875 m
    g = 0.25
    o = np.array([3.0, 1.0, 1.0])        # north of the extent, 1 m up
    d = np.array([-0.5, 0.0, -1.0])
    d /= np.linalg.norm(d)               # reaches height 0 at north 2.5, enters the extent at 1.875
    t = raycast_heightfield(h, g, o, d[None, :], 0.0, 10.0)[0]
    assert t == pytest.approx((3.0 - 1.875) / 0.5 * np.linalg.norm([0.5, 0.0, 1.0]), rel=1e-9)
    # the same ray from over the terrain still hits the ground where it reaches it
    o2 = np.array([1.5, 1.0, 1.0])
    t2 = raycast_heightfield(h, g, o2, d[None, :], 0.0, 10.0)[0]
    assert o2[2] + t2 * d[2] == pytest.approx(0.0, abs=1e-12)


def test_random_rays_from_inside_and_outside_match_a_fine_march():
    rng = np.random.default_rng(1)
    h = rng.normal(0.0, 0.3, (12, 9))
    g = 0.25
    for trial in range(24):
        o = np.array([rng.uniform(-1.0, 4.0), rng.uniform(-1.0, 3.5), rng.uniform(0.5, 3.0)])
        d = rng.normal(size=3)
        d[2] = -abs(d[2])
        if trial % 4 == 0:
            d[trial % 2] = 0.0
        d /= np.linalg.norm(d)
        t = raycast_heightfield(h, g, o, d[None, :], 0.0, 8.0)[0]
        tb = _brute(h, g, o, d, 8.0)
        if np.isinf(tb):
            assert np.isinf(t)
        else:
            assert t == pytest.approx(tb, abs=5e-4)
