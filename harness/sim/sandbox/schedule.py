"""The data-generation command schedule of Cook thesis Alg. 5 (pure: no NumPy, MicroPython-safe).

A session of n frames is cut into eight blocks of n/8 frames; every ``segment_frames`` frames (250 in the
thesis; counted from the session's start) a new amplitude r ~ U(lo, hi) (thesis U(0.25, 1.0)) is drawn.
Block k sets the desired linear speed l and yaw rate w:

====== ========= ==========================
block  l         w (thesis: CCW positive)
====== ========= ==========================
1      +r l_max  0
2      -r l_max  0
3      0         +r w_max
4      0         -r w_max
5      +r l_max  +r w_max
6      -r l_max  -r w_max
7      -r l_max  +r w_max
8      +r l_max  -r w_max
====== ========= ==========================

The thesis's amplitudes are 3r (its units per second) and r pi/2 (rad/s); here l_max is the robot's speed
(m/s, default the Dagu Rover 5's 0.25 m/s: reading aid A11) and w_max = pi/2 rad/s. The thesis's w turns
counter-clockwise; this project's yaw rate is NED (positive turns right), so the yaw rate returned is -w.
The pseudo-code's first test ``i <= n/8`` is read as ``i < n/8`` (eight equal blocks).
"""
import math

BLOCKS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1), (-1, 1), (1, -1))   # (sign of l, sign of w)


def block_of(frame, frames):
    """Block index 0..7 of ``frame`` in a session of ``frames`` (>= 8) frames."""
    return min(7, frame * 8 // frames)


def commands(frames, segment_frames, speed_max_mps, yaw_rate_max_radps, uniform, amplitude=(0.25, 1.0)):
    """Lists (speed_mps, yaw_rate_radps NED, amplitude r, block, segment) of a session; ``uniform(lo, hi)``
    draws the amplitudes (e.g. a seeded NumPy Generator's ``uniform``)."""
    if frames < 8 or segment_frames < 1:
        raise ValueError("Alg. 5 needs frames >= 8 and segment_frames >= 1, got %r, %r" % (frames, segment_frames))
    speed, yaw_rate, amp, block, segment = [], [], [], [], []
    r = 0.0
    for i in range(frames):
        if i % segment_frames == 0:
            r = float(uniform(amplitude[0], amplitude[1]))
        k = block_of(i, frames)
        sl, sw = BLOCKS[k]
        speed.append(sl * r * speed_max_mps)
        yaw_rate.append(-sw * r * yaw_rate_max_radps)
        amp.append(r)
        block.append(k)
        segment.append(i // segment_frames)
    return speed, yaw_rate, amp, block, segment


THESIS_YAW_RATE_MAX_RADPS = math.pi / 2.0
