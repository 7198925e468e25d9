"""Outcome metrics computed from ground truth, shared by the scenarios."""
import math

from onboard.core.angles import wrap_pi


def _segment_distance(p, a, b):
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    L2 = dx * dx + dy * dy
    t = 0.0 if L2 == 0.0 else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / L2))
    return math.hypot(p[0] - (ax + t * dx), p[1] - (ay + t * dy))


def path_error_m(p, polyline):
    """Distance (m) from point p to the planned polyline (a polyline of one point: the distance to it);
    ValueError for an empty one."""
    if len(polyline) == 1:
        return _segment_distance(p, polyline[0], polyline[0])
    if not polyline:
        raise ValueError("path_error_m: the polyline has no points")
    return min(_segment_distance(p, polyline[i], polyline[i + 1]) for i in range(len(polyline) - 1))


def rms(values):
    """Root mean square of a sequence of numbers (0.0 when empty); a NumPy array is reduced by NumPy
    (its pairwise sum; an array of integers or booleans in float64, whose squares do not wrap around), a list
    in order."""
    if hasattr(values, "dtype"):
        import numpy as np
        if values.dtype.kind in "biu":
            values = values.astype(np.float64)
        return float(np.sqrt(np.mean(values * values))) if values.size else 0.0
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else 0.0


def rms_of_squares(squares):
    """The rms from values already squared (e.g. squared distances dx^2 + dy^2, m^2), 0.0 when empty."""
    return math.sqrt(sum(squares) / len(squares)) if squares else 0.0


def tracking_errors(rec, start_ne_m, waypoints_ne_m):
    """(path error m, estimate position error m, estimate yaw error deg) per recorded sample.

    rec: dict with lists "truth" and "est" of (north, east), "yaw_true" and "yaw_est" (rad), one entry per
    sample each; ValueError when they hold different numbers of samples (no sample is paired with another's)."""
    counts = {key: len(rec[key]) for key in ("truth", "est", "yaw_true", "yaw_est")}
    if len(set(counts.values())) > 1:
        raise ValueError("tracking_errors: the recorded series differ in length: %s"
                         % ", ".join("%s %d" % kv for kv in counts.items()))
    polyline = [tuple(start_ne_m)] + [tuple(w[:2]) for w in waypoints_ne_m]
    path_err = [path_error_m(p, polyline) for p in rec["truth"]]
    est_err = [math.hypot(a[0] - b[0], a[1] - b[1]) for a, b in zip(rec["truth"], rec["est"])]
    yaw_err = [math.degrees(wrap_pi(a - b)) for a, b in zip(rec["yaw_true"], rec["yaw_est"])]
    return path_err, est_err, yaw_err
