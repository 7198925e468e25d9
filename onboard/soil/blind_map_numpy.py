"""NumPy erosion kernel for blind mapping (CPython only): ``erode`` of :mod:`onboard.soil.blind_map`
(soil paper Alg. 5, eq. 12) with the same signature, passes and arithmetic, vectorised over each pass's
disjoint pairs. The harness hands it to ``BlindMapper(grid, config, erode=blind_map_numpy.erode)``; the
pure kernel is the reference (tests compare the two), and is what runs on MicroPython boards.
"""
import math

import numpy as np

from onboard.soil.blind_map import GRAVITY_MPS2, erosion_window
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


def blade_mask(mask, shape, n_east, i0, j0):
    """(masked, underside_m) arrays over a window of ``shape`` cells whose first cell is the grid's (i0, j0):
    the cells of ``mask`` ({flat index of a grid with ``n_east`` columns: underside height [m, up]}; cells
    outside the window are left out) and their underside heights (inf elsewhere)."""
    masked = np.zeros(shape, dtype=bool)
    underside_m = np.full(shape, np.inf)
    for k, z in mask.items():
        i, j = k // n_east - i0, k % n_east - j0
        if 0 <= i < shape[0] and 0 <= j < shape[1]:
            masked[i, j] = True
            underside_m[i, j] = z
    return masked, underside_m


def pair_passes(shape, i0, j0):
    """The four passes of disjoint 4-neighbour pairs over a window of ``shape`` cells whose first cell is
    the grid's (i0, j0), as ``onboard.soil.blind_map.erode`` runs them: north pairs from even grid rows,
    then odd rows, then east pairs likewise (parity by the grid's index, so a window pairs as the whole
    grid does). Yields (a_idx, b_idx), the slices of each pair's first and second cell; a pass without a
    pair is left out."""
    ni, nj = shape
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
            if count:
                yield a_idx, b_idx


def slip_pass(h, loose, masked, underside_m, a_idx, b_idx, repose_m, slip_of):
    """One pass of disjoint pairs (soil paper Alg. 5): in each pair with loose soil whose step (height
    difference [m], at most the higher cell's loose soil) exceeds ``repose_m``, loose soil slips from the
    higher cell to the lower one by ``slip_of(steps)`` [m] (an array of the active steps), never out of a
    masked cell and into one only up to its underside. Updates ``h`` and ``loose`` [m] in place; returns
    (slip [m] per pair, a_src: the pair's first cell was the source), or None when no pair is active."""
    ha, hb = h[a_idx].copy(), h[b_idx].copy()
    la, lb = loose[a_idx].copy(), loose[b_idx].copy()
    a_src = ha >= hb
    step = np.minimum(np.where(a_src, ha - hb, hb - ha), np.where(a_src, la, lb))
    src_masked = np.where(a_src, masked[a_idx], masked[b_idx])
    active = ((la > 0.0) | (lb > 0.0)) & (step > repose_m) & ~src_masked
    if not np.any(active):
        return None
    slip = np.zeros(step.shape)
    slip[active] = slip_of(step[active])
    dst_masked = np.where(a_src, masked[b_idx], masked[a_idx])
    room = np.where(a_src, underside_m[b_idx] - hb, underside_m[a_idx] - ha)
    slip = np.where(dst_masked, np.where(room <= 0.0, 0.0, np.minimum(slip, room)), slip)
    slip = np.where(slip > 0.0, slip, 0.0)
    sign = np.where(a_src, 1.0, -1.0)
    h[a_idx] = ha - sign * slip
    h[b_idx] = hb + sign * slip
    loose[a_idx] = la - sign * slip
    loose[b_idx] = lb + sign * slip
    return slip, a_src


def erode(grid, centre_ne_m, mask, cohesion_pa, friction_rad, unit_weight_npm3, dt_s, iterations, roi_m):
    """PerformSoilErosion (soil paper Alg. 5) as ``onboard.soil.blind_map.erode``; returns the volume moved
    [m^3]."""
    window = erosion_window(grid, centre_ne_m, roi_m)
    if window is None:
        return 0.0
    i0, i1, j0, j1 = window
    g = grid.cell_m
    h = view(grid, ELEVATION)[i0:i1 + 1, j0:j1 + 1]
    loose = view(grid, LOOSE)[i0:i1 + 1, j0:j1 + 1]
    var = view(grid, ELEVATION_VAR)[i0:i1 + 1, j0:j1 + 1]
    masked, underside_m = blade_mask(mask, h.shape, grid.n_east, i0, j0)
    repose = g * math.tan(friction_rad)

    def slip_of(steps_m):
        return slip_height(steps_m, g, cohesion_pa, friction_rad, unit_weight_npm3, dt_s)

    moved = 0.0
    for _ in range(iterations):
        for a_idx, b_idx in pair_passes(h.shape, i0, j0):
            done = slip_pass(h, loose, masked, underside_m, a_idx, b_idx, repose, slip_of)
            if done is None:
                continue
            slip, a_src = done
            va, vb = var[a_idx].copy(), var[b_idx].copy()
            extra = 0.25 * slip * slip
            var[a_idx] = np.where(a_src, va, va + extra)
            var[b_idx] = np.where(a_src, vb + extra, vb)
            moved += float(slip.sum())
    return moved * g * g
