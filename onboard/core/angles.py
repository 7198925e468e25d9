"""Angle helpers (radians)."""
import math

PI = math.pi
TWO_PI = 2.0 * math.pi


def wrap_pi(angle_rad):
    """Wrap an angle to [-pi, pi) radians."""
    return wrap_2pi(angle_rad + PI) - PI


def wrap_2pi(angle_rad):
    """Wrap an angle to [0, 2*pi) radians."""
    a = math.fmod(angle_rad, TWO_PI)
    if a < 0.0:
        a += TWO_PI
        if a >= TWO_PI:
            # a remainder just below zero (-1e-17) rounded up to 2*pi, which is 0
            a = 0.0
    return a


def angle_diff(a_rad, b_rad):
    """Smallest signed difference a - b, in [-pi, pi) radians."""
    return wrap_pi(a_rad - b_rad)


def deg2rad(deg):
    return deg * (PI / 180.0)


def rad2deg(rad):
    return rad * (180.0 / PI)
