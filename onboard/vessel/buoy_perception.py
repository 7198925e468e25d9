"""LIDAR buoy perception for the surface vessel (RobotX AAVS section III-D: point cloud -> buoys -> labels
for the mission planner). numpy path, CPython only (not a pure module); :func:`detect_pure` is the same
detection step in plain Python over lists (the benchmark's baseline and the tests' cross-check).

Pipeline of one frame (:func:`detect`):

1. the sweep's points, body frame FRD (m, origin on the water line under the body reference point), are
   placed in NED with the ESTIMATED pose (north_m, east_m, yaw_rad): ``n = n0 + x cos(yaw) - y sin(yaw)``,
   ``e = e0 + x sin(yaw) + y cos(yaw)``, height above water ``h = -z``;
2. water/ground cut: points lower than ``water_cut_m`` (water-surface returns, spray) or higher than
   ``max_height_m``, or farther than ``max_range_m`` are dropped;
3. Euclidean clustering by grid hash: points fall into ``cell_m`` cells; occupied cells that touch (8
   neighbours) form one cluster (union by label propagation), so clusters closer than ``cell_m`` always
   merge and clusters farther than ``2 sqrt(2) cell_m`` never do;
4. per cluster: the visible arc of a cylinder seen from the sensor: radius = half the arc's extent across
   the line of sight plus half an azimuth step; centre: across the line of sight the middle of that
   extent, along it the lower quartile of ``depth + sqrt(r^2 - x^2)`` over the points (each point on the
   wall puts the axis there; points on the flat top lie deeper and are outvoted);
   height = the highest point (a lower bound: the beams are 2 deg apart). Clusters wider than
   ``max_diameter_m`` (shore, a hull) or with fewer than ``min_points`` points are not buoys; a cluster with
   a return more than 0.5 m nearer in the two firings beyond either edge of its bearings is cut by a shadow
   (a shore fragment seen between two buoys, a half-hidden buoy) and is skipped this frame.

:class:`BuoyMap` merges the detections of successive frames: nearest-neighbour association within
``gate_m + gate_per_m * range``, position and radius averaged over the hits (weights ``1 / max(range,
near_m)^2``: a heading error moves far detections more), height the maximum, a hit count; a buoy is
confirmed after ``min_hits`` hits. :func:`label_buoys` names the confirmed buoys by geometry and the
mission's expected positions (LIDAR sees no colour): gate pairs (two buoys ``gate_min_m`` to ``gate_max_m``
apart whose midpoint is within ``label_tol_m`` of a gate's expected centre; left and right from the
direction of travel), the pinger buoy (the buoy nearest its expected position), the dock (every buoy
within ``dock_radius_m`` of the bay's expected centre); the rest are obstacles.
"""
import math

import numpy as np

from onboard.core.samples import _int

ROLES = ("obstacle", "gate_left", "gate_right", "entry_left", "entry_right", "exit_left", "exit_right",
         "pinger", "dock")
GATE_ROLES = {"speed_gate": ("gate_left", "gate_right"), "entry": ("entry_left", "entry_right"),
              "exit": ("exit_left", "exit_right"), "pinger_gate": ("gate_left", "gate_right")}
EXPECTED_NAMES = tuple(GATE_ROLES) + ("pinger", "dock")

DEFAULTS = {
    "water_cut_m": 0.1,             # points below this height above the water are water / spray
    "max_height_m": 4.0,
    "max_range_m": 60.0,            # horizontal, from the sensor
    "cell_m": 0.5,                  # clustering grid
    "min_points": 2,
    "max_diameter_m": 3.0,
    "azimuth_res_deg": 0.2,         # the LIDAR's azimuth step (radius correction)
    "sensor_forward_m": 0.5,        # the LIDAR's mount in the body frame
    "sensor_right_m": 0.0,
    "gate_m": 1.5,                  # association distance of the buoy map at the sensor ...
    "gate_per_m": 0.03,             # ... growing with the detection's range (a heading error's reach)
    "near_m": 10.0,                 # detections nearer than this weigh alike (weight 1 / max(range, near)^2)
    "min_hits": 2,                  # hits before a buoy is confirmed
    "gate_min_m": 5.0,              # gate pair separation
    "gate_max_m": 20.0,
    "label_tol_m": 8.0,             # expected-position tolerance of the labels
    "dock_radius_m": 8.0,
}


class PerceptionError(ValueError):
    """Bad input to perception (a non-finite pose, a malformed point array); one line."""


def settings(overrides=None):
    """:data:`DEFAULTS` with ``overrides`` (unknown keys and non-positive sizes refused, one line)."""
    out = dict(DEFAULTS)
    for k, v in (overrides or {}).items():
        if k not in DEFAULTS:
            raise PerceptionError("perception.%s: unknown setting" % k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise PerceptionError("perception.%s: must be a finite number, got %r" % (k, v))
        out[k] = v
    for k in ("cell_m", "max_range_m", "max_diameter_m", "azimuth_res_deg", "gate_m", "min_hits", "min_points",
              "near_m"):
        if not out[k] > 0:
            raise PerceptionError("perception.%s: must be > 0" % k)
    return out


class Detection:
    """One buoy seen in one frame: NED centre (m), ``radius_m``, ``height_m`` (above water), ``n_points``,
    ``range_m`` (horizontal, from the sensor)."""
    __slots__ = ("north_m", "east_m", "radius_m", "height_m", "n_points", "range_m")

    def __init__(self, north_m, east_m, radius_m, height_m, n_points, range_m=0.0):
        self.north_m, self.east_m, self.radius_m = north_m, east_m, radius_m
        self.height_m, self.n_points, self.range_m = height_m, n_points, range_m

    def __repr__(self):
        return "Detection(%.2f, %.2f, r=%.2f, h=%.2f, n=%d)" % (
            self.north_m, self.east_m, self.radius_m, self.height_m, self.n_points)


def to_ned(points_body_m, north_m, east_m, yaw_rad):
    """Body-frame FRD points (N, 3) -> (N, 3) of (north_m, east_m, height_above_water_m) at the pose."""
    p = np.asarray(points_body_m, float).reshape(-1, 3)
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    out = np.empty_like(p)
    out[:, 0] = north_m + p[:, 0] * c - p[:, 1] * s
    out[:, 1] = east_m + p[:, 0] * s + p[:, 1] * c
    out[:, 2] = -p[:, 2]
    return out


def cluster_labels(points_ne_m, cell_m):
    """Grid-hash Euclidean clustering of (N, 2) points: a cluster id per point (0 .. K-1, by first cell)."""
    n = len(points_ne_m)
    if n == 0:
        return np.zeros(0, np.int64)
    ij = np.floor(np.asarray(points_ne_m) / cell_m).astype(np.int64)
    span = np.int64(1) << 31
    keys = ij[:, 0] * span + (ij[:, 1] + (span >> 1))
    cells, inverse = np.unique(keys, return_inverse=True)
    lab = np.arange(len(cells))
    ei, ej = [], []
    for di, dj in ((0, 1), (1, -1), (1, 0), (1, 1)):          # half the 8-neighbourhood: each edge once
        nk = cells + di * span + dj
        pos = np.searchsorted(cells, nk)
        pos_c = np.minimum(pos, len(cells) - 1)
        found = cells[pos_c] == nk
        ei.append(np.nonzero(found)[0])
        ej.append(pos_c[found])
    ei, ej = np.concatenate(ei), np.concatenate(ej)
    if len(ei):
        while True:                                           # label propagation + pointer jumping
            new = lab.copy()
            np.minimum.at(new, ei, lab[ej])
            np.minimum.at(new, ej, lab[ei])
            new = new[new]
            if np.array_equal(new, lab):
                break
            lab = new
    _, comp = np.unique(lab, return_inverse=True)
    return comp[inverse.reshape(-1)]


def detect(points_body_m, north_m, east_m, yaw_rad, cfg=None):
    """The buoys of one sweep (``points_body_m`` (N, 3) FRD m; an empty sequence is a sweep without points, as
    for :func:`detect_pure`) placed with the estimated pose: a list of :class:`Detection` (pipeline in the module
    docstring). ``cfg``: :func:`settings` output or None."""
    cfg = cfg or DEFAULTS
    if not all(math.isfinite(v) for v in (north_m, east_m, yaw_rad)):
        raise PerceptionError("perception: pose is not finite: (%r, %r, %r)" % (north_m, east_m, yaw_rad))
    p = np.asarray(points_body_m, float)
    if p.ndim == 1 and p.size == 0:
        p = p.reshape(0, 3)                 # an empty sweep (nothing above the water in range), e.g. [] from a log
    if p.ndim != 2 or p.shape[1] != 3:
        raise PerceptionError("perception: points must be an (N, 3) array, got shape %r" % (p.shape,))
    p = p[np.isfinite(p).all(axis=1)]
    every = to_ned(p, north_m, east_m, yaw_rad)
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    fwd, right = cfg["sensor_forward_m"], cfg["sensor_right_m"]
    sn, se = north_m + fwd * c - right * s, east_m + fwd * s + right * c
    every_rng = np.hypot(every[:, 0] - sn, every[:, 1] - se)
    every_brg = np.arctan2(every[:, 1] - se, every[:, 0] - sn)
    keep = (every[:, 2] >= cfg["water_cut_m"]) & (every[:, 2] <= cfg["max_height_m"]) & \
        (every_rng <= cfg["max_range_m"])
    pts, pts_rng, pts_brg = every[keep], every_rng[keep], every_brg[keep]
    if len(pts) == 0:
        return []
    lab = cluster_labels(pts[:, :2], cfg["cell_m"])
    k = int(lab.max()) + 1
    count = np.bincount(lab, minlength=k).astype(float)
    cn = np.bincount(lab, pts[:, 0], k) / count
    ce = np.bincount(lab, pts[:, 1], k) / count
    top = np.full(k, -np.inf)
    np.maximum.at(top, lab, pts[:, 2])
    dn, de = cn - sn, ce - se
    dist = np.hypot(dn, de)
    un, ue = dn / np.maximum(dist, 1e-9), de / np.maximum(dist, 1e-9)
    across = (pts[:, 1] - se) * un[lab] - (pts[:, 0] - sn) * ue[lab]     # coordinate across the line of sight
    lo, hi = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(lo, lab, across)
    np.maximum.at(hi, lab, across)
    extent = hi - lo
    step = dist * math.radians(cfg["azimuth_res_deg"])
    radius = 0.5 * (extent + step)
    near = np.full(k, np.inf)
    np.minimum.at(near, lab, pts_rng)
    step_rad = math.radians(cfg["azimuth_res_deg"])
    cand = np.nonzero((count >= cfg["min_points"]) & (extent <= cfg["max_diameter_m"]))[0]
    if len(cand) == 0:
        return []
    # shadow test: a nearer return within two azimuth steps beyond either edge of the cluster's bearings
    mid_brg = np.arctan2(np.bincount(lab, np.sin(pts_brg), k), np.bincount(lab, np.cos(pts_brg), k))
    rel = _wrap(pts_brg - mid_brg[lab])
    b_lo, b_hi = np.full(k, np.inf), np.full(k, -np.inf)
    np.minimum.at(b_lo, lab, rel)
    np.maximum.at(b_hi, lab, rel)
    rel_all = _wrap(every_brg[None, :] - mid_brg[cand, None])                       # (C, N every)
    lo_c, hi_c = b_lo[cand, None], b_hi[cand, None]
    w0, w1 = 0.5 * step_rad, 2.5 * step_rad                 # the 2 firings beyond each edge, half a step clear
    edge = ((rel_all <= lo_c - w0) & (rel_all >= lo_c - w1)) | ((rel_all >= hi_c + w0) & (rel_all <= hi_c + w1))
    shadowed = np.any(edge & (every_rng[None, :] < near[cand, None] - 0.5), axis=1)
    # depth of the axis along the line of sight: each wall point at lateral x and depth y puts it at
    # y + sqrt(r^2 - x^2); points on the flat top lie deeper, so take the lower quartile (numpy's linear
    # percentile, per cluster from one sort)
    mid = 0.5 * (lo + hi)
    depth = (pts[:, 0] - sn) * un[lab] + (pts[:, 1] - se) * ue[lab]
    x = across - mid[lab]
    vals = depth + np.sqrt(np.maximum(radius[lab] ** 2 - x * x, 0.0))
    v = vals[np.lexsort((vals, lab))]
    first = np.concatenate(([0], np.cumsum(count.astype(np.int64))[:-1]))
    pos = 0.25 * (count - 1.0)
    q_lo = np.floor(pos).astype(np.int64)
    q_hi = np.minimum(q_lo + 1, count.astype(np.int64) - 1)
    axis = v[first + q_lo] + (v[first + q_hi] - v[first + q_lo]) * (pos - q_lo)
    out = []
    for j, i in enumerate(cand):
        if shadowed[j]:
            continue
        a, m = float(axis[i]), float(mid[i])
        out.append(Detection(float(sn + un[i] * a - ue[i] * m), float(se + ue[i] * a + un[i] * m),
                             float(radius[i]), float(top[i]), int(count[i]), a))
    return out


def _wrap(a):
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def _percentile(values, q):
    """numpy's default (linear) percentile ``q`` (0-100) of a non-empty list."""
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def detect_pure(points_body_m, north_m, east_m, yaw_rad, cfg=None):
    """:func:`detect` in plain Python over a sequence of (x, y, z) body points (the baseline the numpy path is
    benchmarked against, and its cross-check in the tests; same steps, same results to rounding)."""
    cfg = cfg or DEFAULTS
    if not all(math.isfinite(v) for v in (north_m, east_m, yaw_rad)):
        raise PerceptionError("perception: pose is not finite: (%r, %r, %r)" % (north_m, east_m, yaw_rad))
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    fwd, right = cfg["sensor_forward_m"], cfg["sensor_right_m"]
    sn, se = north_m + fwd * c - right * s, east_m + fwd * s + right * c
    every = []                                          # (n, e, h, range, bearing) of every finite point
    for p in points_body_m:
        if len(p) != 3:
            raise PerceptionError("perception: points must be (x, y, z) triples, got %r" % (p,))
        x, y, z = float(p[0]), float(p[1]), float(p[2])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            continue
        n, e = north_m + x * c - y * s, east_m + x * s + y * c
        every.append((n, e, -z, math.hypot(n - sn, e - se), math.atan2(e - se, n - sn)))
    pts = [q for q in every if cfg["water_cut_m"] <= q[2] <= cfg["max_height_m"] and q[3] <= cfg["max_range_m"]]
    cell_m = cfg["cell_m"]
    cells = {}
    for i, q in enumerate(pts):
        cells.setdefault((math.floor(q[0] / cell_m), math.floor(q[1] / cell_m)), []).append(i)
    seen, clusters = set(), []
    for start in sorted(cells):
        if start in seen:
            continue
        seen.add(start)
        todo, members = [start], []
        while todo:
            ci, cj = todo.pop()
            members += cells[(ci, cj)]
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    nb = (ci + di, cj + dj)
                    if nb in cells and nb not in seen:
                        seen.add(nb)
                        todo.append(nb)
        clusters.append(members)
    step_rad = math.radians(cfg["azimuth_res_deg"])
    out = []
    for members in clusters:
        q = [pts[i] for i in members]
        k = len(q)
        cn, ce = sum(p[0] for p in q) / k, sum(p[1] for p in q) / k
        dist = math.hypot(cn - sn, ce - se)
        un, ue = (cn - sn) / max(dist, 1e-9), (ce - se) / max(dist, 1e-9)
        across = [(p[1] - se) * un - (p[0] - sn) * ue for p in q]
        lo, hi = min(across), max(across)
        if k < cfg["min_points"] or hi - lo > cfg["max_diameter_m"]:
            continue
        mid_brg = math.atan2(sum(math.sin(p[4]) for p in q), sum(math.cos(p[4]) for p in q))
        rel = [_wrap(p[4] - mid_brg) for p in q]
        b_lo, b_hi, near = min(rel), max(rel), min(p[3] for p in q)
        shadowed = False
        for p in every:
            r = _wrap(p[4] - mid_brg)
            if p[3] < near - 0.5 and (b_lo - 2.5 * step_rad <= r <= b_lo - 0.5 * step_rad or
                                      b_hi + 0.5 * step_rad <= r <= b_hi + 2.5 * step_rad):
                shadowed = True
                break
        if shadowed:
            continue
        radius = 0.5 * (hi - lo + dist * step_rad)
        mid = 0.5 * (lo + hi)
        axis = _percentile([(p[0] - sn) * un + (p[1] - se) * ue + math.sqrt(max(radius * radius - (a - mid) ** 2,
                                                                                 0.0)) for p, a in zip(q, across)], 25)
        out.append(Detection(sn + un * axis - ue * mid, se + ue * axis + un * mid, radius, max(p[2] for p in q), k,
                             axis))
    return out


class Track:
    """A buoy of the map: NED centre (m) and ``radius_m``, the means of its hits weighted by
    ``1 / max(range, near_m)^2`` (a pose's heading error moves a detection in proportion to its range),
    ``height_m`` (max), ``hits``, ``first_us``/``last_us``, ``role`` (set by :func:`label_buoys`, else
    "obstacle")."""
    __slots__ = ("north_m", "east_m", "radius_m", "height_m", "hits", "weight", "first_us", "last_us", "role")

    def __init__(self, d, now_us, weight=1.0):
        self.north_m, self.east_m, self.radius_m, self.height_m = d.north_m, d.east_m, d.radius_m, d.height_m
        self.hits, self.weight, self.first_us, self.last_us, self.role = 1, weight, now_us, now_us, "obstacle"

    def add(self, d, now_us, weight=1.0):
        self.hits += 1
        self.weight += weight
        w = weight / self.weight
        self.north_m += w * (d.north_m - self.north_m)
        self.east_m += w * (d.east_m - self.east_m)
        self.radius_m += w * (d.radius_m - self.radius_m)
        self.height_m = max(self.height_m, d.height_m)
        self.last_us = now_us

    def __repr__(self):
        return "Track(%.2f, %.2f, r=%.2f, h=%.2f, hits=%d, %s)" % (
            self.north_m, self.east_m, self.radius_m, self.height_m, self.hits, self.role)


class BuoyMap:
    """The buoy map built over frames (``cfg``: :func:`settings`)."""

    def __init__(self, cfg=None):
        self.cfg = cfg or DEFAULTS
        self.tracks = []
        self.frames = 0

    def update(self, detections, now_us):
        """Merge one frame's detections: each goes to the nearest free track within
        ``gate_m + gate_per_m * range`` (closest pairs first), else starts a track."""
        self.frames += 1
        cfg = self.cfg
        pairs = []
        for i, d in enumerate(detections):
            gate = cfg["gate_m"] + cfg["gate_per_m"] * d.range_m
            for j, t in enumerate(self.tracks):
                dist = math.hypot(d.north_m - t.north_m, d.east_m - t.east_m)
                if dist <= gate:
                    pairs.append((dist, i, j))
        pairs.sort()
        used_d, used_t = set(), set()
        near = cfg["near_m"]
        for _, i, j in pairs:
            if i not in used_d and j not in used_t:
                self.tracks[j].add(detections[i], now_us, 1.0 / max(detections[i].range_m, near) ** 2)
                used_d.add(i)
                used_t.add(j)
        for i, d in enumerate(detections):
            if i not in used_d:
                self.tracks.append(Track(d, now_us, 1.0 / max(d.range_m, near) ** 2))

    def confirmed(self):
        """The tracks with at least ``min_hits`` hits."""
        return [t for t in self.tracks if t.hits >= self.cfg["min_hits"]]

    def step(self, points_body_m, north_m, east_m, yaw_rad, now_us):
        """:func:`detect` one sweep at the estimated pose and merge it; returns the frame's detections."""
        dets = detect(points_body_m, north_m, east_m, yaw_rad, self.cfg)
        self.update(dets, now_us)
        return dets


def label_buoys(buoys, expected, cfg=None):
    """Set ``role`` on each of ``buoys`` (objects with north_m, east_m, role) by geometry and the mission's
    ``expected`` positions: a list of (name, north_m, east_m, travel_heading_rad), name one of
    :data:`EXPECTED_NAMES` (gate names: the gate's expected centre and the direction it is passed in;
    "pinger": the pinger buoy's expected position; "dock": the bay's expected centre). The pinger is
    labelled first, then the dock, then the gates in the order given; the rest are "obstacle".
    Returns ``buoys``."""
    cfg = cfg or DEFAULTS
    tol = cfg["label_tol_m"]
    for b in buoys:
        b.role = "obstacle"
    free = list(buoys)

    def d2(b, n, e):
        return math.hypot(b.north_m - n, b.east_m - e)

    for name, n, e, _ in expected:
        if name not in EXPECTED_NAMES:
            raise PerceptionError("perception: unknown expected item %r (known: %s)"
                                  % (name, ", ".join(EXPECTED_NAMES)))
    for name, n, e, _ in expected:
        if name == "pinger" and free:
            b = min(free, key=lambda x: d2(x, n, e))
            if d2(b, n, e) <= tol:
                b.role = "pinger"
                free.remove(b)
    for name, n, e, _ in expected:
        if name == "dock":
            for b in [x for x in free if d2(x, n, e) <= cfg["dock_radius_m"]]:
                b.role = "dock"
                free.remove(b)
    for name, n, e, heading in expected:
        if name not in GATE_ROLES:
            continue
        best = None
        for i, a in enumerate(free):
            for b in free[i + 1:]:
                sep = d2(a, b.north_m, b.east_m)
                if not cfg["gate_min_m"] <= sep <= cfg["gate_max_m"]:
                    continue
                off = d2(a, 2 * n - b.north_m, 2 * e - b.east_m) * 0.5     # midpoint to the expected centre
                if off <= tol and (best is None or off < best[0]):
                    best = (off, a, b)
        if best is None:
            continue
        _, a, b = best
        mn, me = 0.5 * (a.north_m + b.north_m), 0.5 * (a.east_m + b.east_m)
        rn, re = -math.sin(heading), math.cos(heading)                      # starboard of the travel direction
        left_role, right_role = GATE_ROLES[name]
        if (a.north_m - mn) * rn + (a.east_m - me) * re > 0.0:
            a, b = b, a
        a.role, b.role = left_role, right_role
        free.remove(a)
        free.remove(b)
    return buoys


class LidarFrame:
    """One LIDAR sweep as it enters the app: ``time_us`` (the sweep's stamp) and ``points_body_m`` ((N, 3)
    FRD m, origin on the water line under the body reference point)."""
    FIELDS = ("time_us", "points_body_m")
    __slots__ = FIELDS

    def __init__(self, time_us, points_body_m):
        self.time_us, self.points_body_m = _int("time_us", time_us), points_body_m

    def as_dict(self):
        return {"time_us": self.time_us, "points_body_m": np.asarray(self.points_body_m, float).tolist()}


class PerceptionPart:
    """The perception part of a boat app on a Node (``onboard.runtime.node``): entry ``lidar`` takes a
    :class:`LidarFrame` and holds it with the ESTIMATED pose at its arrival (``pose_fn()`` -> (north_m,
    east_m, yaw_rad), or None before the estimator is initialised: the frame is skipped and counted);
    the rate group ``perception`` (``rate_hz``) runs :meth:`BuoyMap.step` on the held frames and, while
    recording, outputs ``buoys``: the confirmed map as [north_m, east_m, radius_m, height_m, hits] rows.
    A malformed frame is counted (``bad_frames``) and leaves the map as it was. ``last_frame``: the last
    frame mapped and the estimated pose it was placed with, ``(frame, (north_m, east_m, yaw_rad))`` or None
    (what the app's views draw)."""

    def __init__(self, pose_fn, cfg=None, rate_hz=10.0, max_held=4):
        self.pose_fn, self.cfg, self.rate_hz, self.max_held = pose_fn, settings(cfg), rate_hz, max_held
        self.map = BuoyMap(self.cfg)
        self.held = []
        self.frames = self.skipped_no_pose = self.bad_frames = self.dropped = 0
        self.last_frame = None
        self.node = None

    def attach(self, node):
        self.node = node
        self.on_lidar = node.entry("lidar", self._on_lidar)
        node.every("perception", self.rate_hz, self._step)

    def _on_lidar(self, frame):
        pose = self.pose_fn()
        if pose is None:
            self.skipped_no_pose += 1
            return
        if len(self.held) >= self.max_held:
            self.held.pop(0)
            self.dropped += 1
        self.held.append((frame, pose))

    def _step(self, now_us):
        held, self.held = self.held, []
        for frame, (n, e, yaw) in held:
            try:
                self.map.step(frame.points_body_m, n, e, yaw, frame.time_us)
            except (PerceptionError, AttributeError, TypeError, ValueError):
                self.bad_frames += 1
                continue
            self.frames += 1
            self.last_frame = (frame, (n, e, yaw))
        if held and self.node.recording:
            rows = [[t.north_m, t.east_m, t.radius_m, t.height_m, t.hits] for t in self.map.confirmed()]
            self.node.output("buoys", now_us, {"time_us": now_us, "buoys": rows})

    def report(self):
        return {"frames": self.frames, "skipped_no_pose": self.skipped_no_pose, "bad_frames": self.bad_frames,
                "dropped": self.dropped, "buoys_confirmed": len(self.map.confirmed())}
