"""NumPy erosion kernel for blind mapping (CPython only): ``erode`` of :mod:`onboard.soil.blind_map`
(soil paper Alg. 5, eq. 12) with the same signature, passes and arithmetic, vectorised over each pass's
disjoint pairs. The harness hands it to ``BlindMapper(grid, config, erode=blind_map_numpy.erode)``; the
pure kernel is the reference (tests compare the two), and is what runs on MicroPython boards.
"""
import math

import numpy as np

from onboard.soil.blind_map import GRAVITY_MPS2
from onboard.soil.grid_map import ELEVATION, ELEVATION_VAR, LOOSE
from onboard.soil.grid_map_numpy import view


def slip_height(step_m, run_m, cohesion_pa, friction_rad, unit_weight_npm3, dt_s):
    """``onboard.soil.blind_map.slip_height`` over an array of steps [m]."""
    step = np.asarray(step_m, dtype=float)
    tan_phi = math.tan(friction_rad)
    out = np.zeros(step.shape)
    go = step > run_m * tan_phi
    if not np.any(go):
        return out
    s = step[go]
    i = np.arctan2(s, run_m)
    a = 0.5 * (i + friction_rad)
    w = 0.5 * unit_weight_npm3 * s * s * (1.0 / np.tan(a) - 1.0 / np.tan(i))
    with np.errstate(divide="ignore", invalid="ignore"):
        net = w * np.sin(a) - cohesion_pa * s / np.sin(a) - w * np.cos(a) * tan_phi
        travel = GRAVITY_MPS2 * net / w * dt_s * dt_s
    slip = np.minimum(travel * np.sin(a), 0.5 * (s - run_m * tan_phi))
    slip = np.where((w > 0.0) & (net > 0.0), slip, 0.0)
    out[go] = slip
    return out


def erode(grid, centre_ne_m, mask, cohesion_pa, friction_rad, unit_weight_npm3, dt_s, iterations, roi_m):
    """PerformSoilErosion (soil paper Alg. 5) as ``onboard.soil.blind_map.erode``; returns the volume moved
    [m^3]."""
    g = grid.cell_m
    ij = grid.index_of(centre_ne_m[0], centre_ne_m[1])
    if ij is None:
        ci = int(math.floor((centre_ne_m[0] - grid.origin_n_m) / g))
        cj = int(math.floor((centre_ne_m[1] - grid.origin_e_m) / g))
    else:
        ci, cj = ij
    half = int(math.ceil(roi_m / g))
    i0, i1 = max(ci - half, 0), min(ci + half, grid.n_north - 1)
    j0, j1 = max(cj - half, 0), min(cj + half, grid.n_east - 1)
    if i0 > i1 or j0 > j1:
        return 0.0
    h = view(grid, ELEVATION)[i0:i1 + 1, j0:j1 + 1]
    loose = view(grid, LOOSE)[i0:i1 + 1, j0:j1 + 1]
    var = view(grid, ELEVATION_VAR)[i0:i1 + 1, j0:j1 + 1]
    masked = np.zeros(h.shape, dtype=bool)
    zmask = np.full(h.shape, np.inf)
    ne = grid.n_east
    for k, z in mask.items():
        i, j = k // ne - i0, k % ne - j0
        if 0 <= i < h.shape[0] and 0 <= j < h.shape[1]:
            masked[i, j] = True
            zmask[i, j] = z
    repose = g * math.tan(friction_rad)
    moved = 0.0
    ni, nj = h.shape
    for _ in range(iterations):
        for axis in (0, 1):
            for parity in (0, 1):
                if axis == 0:
                    first = (parity - i0) % 2
                    count = len(range(first, ni - 1, 2))
                    a_idx = (slice(first, first + 2 * count, 2), slice(0, nj))
                    b_idx = (slice(first + 1, first + 1 + 2 * count, 2), slice(0, nj))
                else:
                    first = (parity - j0) % 2
                    count = len(range(first, nj - 1, 2))
                    a_idx = (slice(0, ni), slice(first, first + 2 * count, 2))
                    b_idx = (slice(0, ni), slice(first + 1, first + 1 + 2 * count, 2))
                if count == 0:
                    continue
                ha, hb = h[a_idx].copy(), h[b_idx].copy()
                la, lb = loose[a_idx].copy(), loose[b_idx].copy()
                a_src = ha >= hb
                step = np.where(a_src, ha - hb, hb - ha)
                lsrc = np.where(a_src, la, lb)
                step = np.minimum(step, lsrc)
                src_masked = np.where(a_src, masked[a_idx], masked[b_idx])
                active = ((la > 0.0) | (lb > 0.0)) & (step > repose) & ~src_masked
                if not np.any(active):
                    continue
                slip = np.zeros(step.shape)
                slip[active] = slip_height(step[active], g, cohesion_pa, friction_rad, unit_weight_npm3, dt_s)
                dst_masked = np.where(a_src, masked[b_idx], masked[a_idx])
                room = np.where(a_src, zmask[b_idx] - hb, zmask[a_idx] - ha)
                slip = np.where(dst_masked, np.where(room <= 0.0, 0.0, np.minimum(slip, room)), slip)
                slip = np.where(slip > 0.0, slip, 0.0)
                sign = np.where(a_src, 1.0, -1.0)
                h[a_idx] = ha - sign * slip
                h[b_idx] = hb + sign * slip
                loose[a_idx] = la - sign * slip
                loose[b_idx] = lb + sign * slip
                va, vb = var[a_idx].copy(), var[b_idx].copy()
                extra = 0.25 * slip * slip
                var[a_idx] = np.where(a_src, va, va + extra)
                var[b_idx] = np.where(a_src, vb + extra, vb)
                moved += float(slip.sum())
    return moved * g * g
