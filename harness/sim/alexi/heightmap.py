"""Pitch and roll read off a heightmap (Cook thesis 6.1): phi = atan((h_front - h_back) / 2r),
psi = atan((h_left - h_right) / 2r).

The heightmap is ``h[row, col]`` in metres, cell (i, j) centred at north (i + 0.5) cell_m, east (j + 0.5) cell_m,
periodic (a tile). Points are sampled bilinearly at +-``r_pitch_m`` along the heading and +-``r_roll_m``
across it (reading aid A25: half the track length for pitch, half the gauge for roll; the thesis uses one r).
Pitch is nose-up positive, roll right-side-down positive (the Sandbox's convention, docs/formats/sandbox-data.md).
"""
import math


def sample(h, cell_m, north_m, east_m):
    """Bilinear height (m) at one point of the periodic heightmap ``h``."""
    rows, cols = h.shape
    x = north_m / cell_m - 0.5
    y = east_m / cell_m - 0.5
    i0, j0 = math.floor(x), math.floor(y)
    fx, fy = x - i0, y - j0
    i0 %= rows
    j0 %= cols
    i1, j1 = (i0 + 1) % rows, (j0 + 1) % cols
    return ((1.0 - fx) * ((1.0 - fy) * h[i0, j0] + fy * h[i0, j1])
            + fx * ((1.0 - fy) * h[i1, j0] + fy * h[i1, j1]))


def pitch_roll(h, cell_m, north_m, east_m, yaw_rad, r_pitch_m, r_roll_m):
    """(pitch_rad, roll_rad) of a robot at (north, east, yaw) on ``h`` (thesis 6.1)."""
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    front = sample(h, cell_m, north_m + r_pitch_m * c, east_m + r_pitch_m * s)
    back = sample(h, cell_m, north_m - r_pitch_m * c, east_m - r_pitch_m * s)
    # the body's right (FRD y) is (-sin yaw, cos yaw) in (north, east)
    right = sample(h, cell_m, north_m - r_roll_m * s, east_m + r_roll_m * c)
    left = sample(h, cell_m, north_m + r_roll_m * s, east_m - r_roll_m * c)
    return math.atan((front - back) / (2.0 * r_pitch_m)), math.atan((left - right) / (2.0 * r_roll_m))
