"""Acoustic pinger localisation from hydrophone time differences: RANSAC over time-difference contours of
several pings at several poses, Gauss-Newton refinement, covariance (RobotX AAVS III-D-1, figs. 5-8).

CPython with numpy (not a MicroPython module: the boat computer runs it, like the paper's NUC).

Frames and units (CONVENTIONS.md): the horizontal NED plane, points as ``(north_m, east_m)``; a boat pose
is ``(north_m, east_m, yaw_rad)`` with yaw from north towards east; hydrophone positions are body FRD
``(x_m forward, y_m right)``; times in seconds; the sound speed ``c`` in m/s (1482 m/s: fresh water at 20 C).

Contour (robotx III-D-1, figs. 5-6; reading aid 2.7). Hydrophone k at world position ``h_k`` (its body
position through the pose at the ping) and the reference hydrophone 0 at ``h_0``; a pinger at ``p`` gives
the time difference of arrival (arrival at k minus arrival at 0)::

    tdoa_k0(p) = (|p - h_k| - |p - h_0|) / c                                            (contour eq.)

so one measured ``tdoa_k0`` puts the pinger on one branch of a hyperbola with foci ``h_k``, ``h_0``
(a straight bisector for tdoa = 0, fig. 5). One ping of K hydrophones gives K - 1 contours; contours of
earlier pings at earlier poses act as further "virtual" hydrophone pairs (the paper's "hysteresis").

Noise model: each arrival time carries independent noise of ``timing_sigma_s``; the K - 1 time differences
of one ping share the reference's noise, so their covariance is ``sigma^2 (I + 1 1^T)`` (inverse
``(I - 1 1^T / (m + 1)) / sigma^2`` for m contours of a ping). Outlier pings (multipath: a wrong arrival)
spoil one or all contours of a ping.

Locator (:func:`locate`; RANSAC after Fischler and Bolles, the paper's ref. [5]):

1. hypotheses from minimal sets of two contours: their intersections, found by a 1-D search along the
   first hyperbola (parametrised by ``t``, :func:`contour_points`) for sign changes of the second's residual,
   refined by bisection (where two contours come close without crossing, the closest point is a hypothesis);
   every pair of contours when there are at most ``iterations`` pairs, else ``iterations`` seeded draws;
2. each hypothesis scored on every contour (MSAC: the sum of squared TDOA residuals truncated at the inlier
   threshold ``inlier_sigmas * sqrt(2) * timing_sigma_s``, the marginal sigma of one time difference);
3. the best refined by Levenberg-Marquardt damped Gauss-Newton on the whitened TDOA residuals of its inliers,
   the inliers re-selected at the refined point and refined again;
4. covariance ``(J^T R^-1 J)^-1`` (m^2) of the inliers' residual Jacobian ``J`` at the solution; where
   ``J^T R^-1 J`` is singular (the inlier contours run parallel at the fix, e.g. two contours touching: one
   direction is not determined by them) the variance along its null direction is ``max_range_m^2`` (or the
   largest variance of the determined direction when that is larger), not 0.

One ping of a small array fixes the bearing well and the range badly (its range information is wavefront
curvature, about b^2 / (8 R c) of delay: fig. 7); pings from different poses triangulate (fig. 8).
Bad input (shapes, NaN, fewer than two contours, coincident hydrophones, every hydrophone position over all
pings on one line: a mirror-ambiguous fix) raises :class:`LocatorError` (a ``ValueError``), one line.
"""
import math

import numpy as np

SOUND_SPEED_MPS = 1482.0
TIMING_SIGMA_S = 2e-6
INLIER_SIGMAS = 3.0
ITERATIONS = 200
MAX_RANGE_M = 500.0
SEARCH_POINTS = 256         # grid points along the first hyperbola of a minimal set
BISECTIONS = 40

# pose slots
POSE_NORTH, POSE_EAST, POSE_YAW = 0, 1, 2


class LocatorError(ValueError):
    """The pings cannot give a fix (malformed or degenerate input); the message is one line."""


class PingerFix:
    """The located pinger: ``north_m``, ``east_m``; ``covariance_m2`` (2x2, north/east, m^2);
    ``inlier_count`` (contours); ``inlier_mask`` (pings x pairs, bool: contour of hydrophone k+1 vs 0 of
    each ping within the inlier threshold at the fix); ``inlier_pings`` (pings all of whose contours are
    inliers); ``contours`` (how many there were); ``residual_rms_s`` (the inliers' TDOA residuals);
    ``hypotheses`` (candidate points scored)."""

    def __init__(self, north_m, east_m, covariance_m2, inlier_mask, residual_rms_s, hypotheses):
        self.north_m = float(north_m)
        self.east_m = float(east_m)
        self.covariance_m2 = np.asarray(covariance_m2, dtype=float)
        self.inlier_mask = np.asarray(inlier_mask, dtype=bool)
        self.inlier_count = int(self.inlier_mask.sum())
        self.inlier_pings = int(self.inlier_mask.all(axis=1).sum())
        self.contours = int(self.inlier_mask.size)
        self.residual_rms_s = float(residual_rms_s)
        self.hypotheses = int(hypotheses)

    def as_dict(self):
        """A JSON-ready table of the fix."""
        return {"north_m": self.north_m, "east_m": self.east_m,
                "covariance_m2": [[float(v) for v in row] for row in self.covariance_m2],
                "sigma_north_m": float(math.sqrt(max(self.covariance_m2[0, 0], 0.0))),
                "sigma_east_m": float(math.sqrt(max(self.covariance_m2[1, 1], 0.0))),
                "inlier_count": self.inlier_count, "contours": self.contours,
                "inlier_pings": self.inlier_pings, "pings": int(self.inlier_mask.shape[0]),
                "inlier_mask": [[bool(v) for v in row] for row in self.inlier_mask],
                "residual_rms_s": self.residual_rms_s, "hypotheses": self.hypotheses}


# ---------------------------------------------------------------------------------------------- geometry
def hydrophones_world(pose, body_xy):
    """World (north_m, east_m) of the hydrophones (K x 2 body FRD x_m, y_m) at ``pose`` (north_m, east_m,
    yaw_rad): ``h = p + R(yaw) [x, y]`` with north = x cos(yaw) - y sin(yaw), east = x sin(yaw) + y cos(yaw)."""
    body = np.asarray(body_xy, dtype=float)
    cy, sy = math.cos(pose[POSE_YAW]), math.sin(pose[POSE_YAW])
    north = pose[POSE_NORTH] + body[:, 0] * cy - body[:, 1] * sy
    east = pose[POSE_EAST] + body[:, 0] * sy + body[:, 1] * cy
    return np.stack([north, east], axis=1)


def tdoa_of(point_ne_m, pose, body_xy, sound_speed_mps=SOUND_SPEED_MPS):
    """The K - 1 time differences (s, arrival at hydrophone k minus at 0, k = 1..K-1) of a pinger at
    ``point_ne_m`` heard at ``pose`` (the contour equation)."""
    h = hydrophones_world(pose, body_xy)
    d = np.hypot(h[:, 0] - point_ne_m[0], h[:, 1] - point_ne_m[1])
    return (d[1:] - d[0]) / sound_speed_mps


def contours(tdoa_s, poses, body_xy):
    """The contours of every ping: ``(foci_k, foci_0, tdoa_s, ping)``: N x 2 world positions of hydrophone k
    and of hydrophone 0, the N time differences (s) and each contour's ping index, N = pings x (K - 1), in
    the order of ``tdoa_s.ravel()`` (ping-major)."""
    tdoa = np.asarray(tdoa_s, dtype=float)
    pings, pairs = tdoa.shape
    a = np.empty((pings, pairs, 2))
    b = np.empty((pings, pairs, 2))
    for i in range(pings):
        h = hydrophones_world(poses[i], body_xy)
        a[i] = h[1:]
        b[i] = h[0]
    ping = np.repeat(np.arange(pings), pairs)
    return a.reshape(-1, 2), b.reshape(-1, 2), tdoa.ravel(), ping


def contour_points(foci_k, foci_0, path_diff_m, t):
    """Points (..., len(t), 2) on the contour ``|p - foci_k| - |p - foci_0| = path_diff_m`` (= c tdoa) at
    the parameters ``t``: with the centre m = (foci_k + foci_0) / 2, half the focal distance f, the unit axis
    u from foci_0 to foci_k and v across it, ``p = m - (d / 2) cosh(t) u + sqrt(f^2 - d^2 / 4) sinh(t) v``
    (the branch on foci_0's side for d > 0; the bisector for d = 0). The distance from m is
    ``sqrt(d^2 / 4 + f^2 sinh^2 t)``. Needs |d| < 2 f."""
    a = np.asarray(foci_k, dtype=float)
    b = np.asarray(foci_0, dtype=float)
    d = np.asarray(path_diff_m, dtype=float)
    m = 0.5 * (a + b)
    axis = a - b
    f = 0.5 * np.hypot(axis[..., 0], axis[..., 1])
    u = axis / (2.0 * f)[..., None]
    v = np.stack([-u[..., 1], u[..., 0]], axis=-1)
    semi_minor = np.sqrt(np.maximum(f * f - 0.25 * d * d, 0.0))
    t = np.asarray(t, dtype=float)
    x = (-0.5 * d)[..., None] * np.cosh(t)
    y = semi_minor[..., None] * np.sinh(t)
    return m[..., None, :] + x[..., None] * u[..., None, :] + y[..., None] * v[..., None, :]


def _path_diff(points, a, b):
    """|p - a| - |p - b| (m) for points (..., 2) against foci broadcast to them."""
    return (np.hypot(points[..., 0] - a[..., 0], points[..., 1] - a[..., 1])
            - np.hypot(points[..., 0] - b[..., 0], points[..., 1] - b[..., 1]))


# ---------------------------------------------------------------------------------------------- checks
def checked_inputs(tdoa_s, poses, body_xy, sound_speed_mps, timing_sigma_s):
    """The locator's inputs as arrays (tdoa [pings x K-1] s, poses [pings x 3], body [K x 2] m), or LocatorError
    (one line) when they cannot give a fix: malformed or non-finite, fewer than 2 contours, coinciding
    hydrophones, or every hydrophone position over all pings on one line (a mirror-ambiguous fix)."""
    try:
        body = np.asarray(body_xy, dtype=float)
        tdoa = np.asarray(tdoa_s, dtype=float)
        pose = np.asarray(poses, dtype=float)
    except (TypeError, ValueError) as exc:
        raise LocatorError("pinger locator: input is not numeric (%s)" % exc)
    if body.ndim != 2 or body.shape[1] != 2 or body.shape[0] < 2:
        raise LocatorError("pinger locator: hydrophones must be K >= 2 body positions (x_m, y_m), got shape %s"
                           % (body.shape,))
    k = body.shape[0]
    if tdoa.ndim == 1 and k == 2:
        tdoa = tdoa[:, None]
    if tdoa.ndim != 2 or tdoa.shape[1] != k - 1:
        raise LocatorError("pinger locator: time differences must be pings x %d (hydrophones 1..%d vs 0), got "
                           "shape %s" % (k - 1, k - 1, tdoa.shape))
    if pose.ndim != 2 or pose.shape != (tdoa.shape[0], 3):
        raise LocatorError("pinger locator: poses must be %d x 3 (north_m, east_m, yaw_rad), got shape %s"
                           % (tdoa.shape[0], pose.shape))
    for name, arr in (("hydrophone positions", body), ("time differences", tdoa), ("poses", pose)):
        if not np.all(np.isfinite(arr)):
            raise LocatorError("pinger locator: %s contain NaN or infinity" % name)
    if not (math.isfinite(sound_speed_mps) and sound_speed_mps > 0):
        raise LocatorError("pinger locator: sound speed must be > 0 m/s, got %r" % (sound_speed_mps,))
    if not (math.isfinite(timing_sigma_s) and timing_sigma_s > 0):
        raise LocatorError("pinger locator: timing sigma must be > 0 s, got %r" % (timing_sigma_s,))
    if tdoa.size < 2:
        raise LocatorError("pinger locator: %d time-difference contour(s); a 2-D fix needs at least 2 (more "
                           "hydrophone pairs or more pings)" % tdoa.size)
    for i in range(k):
        for j in range(i + 1, k):
            if math.hypot(*(body[i] - body[j])) < 1e-3:
                raise LocatorError("pinger locator: hydrophones %d and %d coincide (%s)" % (i, j, body[i].tolist()))
    world = np.concatenate([hydrophones_world(p, body) for p in pose])
    centred = world - world.mean(axis=0)
    sv = np.linalg.svd(centred, compute_uv=False)
    if sv[-1] <= 1e-6 * max(sv[0], 1e-12):
        raise LocatorError("pinger locator: every hydrophone position over all pings lies on one line: the fix "
                           "is mirror-ambiguous (add hydrophones off the line or pings at other headings)")
    return tdoa, pose, body


def _positive(value, name):
    """``value`` as a float, or LocatorError (one line) unless it is a finite number > 0."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise LocatorError("pinger locator: %s must be a number > 0, got %r" % (name, value))
    if isinstance(value, bool) or not (math.isfinite(x) and x > 0):
        raise LocatorError("pinger locator: %s must be a finite number > 0, got %r" % (name, value))
    return x


# ---------------------------------------------------------------------------------------------- RANSAC
def _intersections(a, b, d, i, j, max_range_m):
    """Candidate points where contour i meets contour j (index arrays of minimal sets): roots of contour j's
    path-difference residual along contour i's branch, by sign changes on a grid and bisection; a pair without
    a sign change gives its grid point of least |residual| instead. Returns (M, 2) points."""
    f = 0.5 * np.hypot(*(a[i] - b[i]).T)
    t_max = np.arcsinh(max_range_m / f)                         # distance from the centre <= max_range_m
    grid = np.linspace(-1.0, 1.0, SEARCH_POINTS)
    t = t_max[:, None] * grid[None, :]                          # (S, G)
    ai, bi, di = a[i], b[i], d[i]
    aj, bj, dj = a[j], b[j], d[j]

    def residual(tt):                                           # tt (S, ...) -> residual of contour j (m)
        pts = _points_at(ai, bi, di, tt)
        return _path_diff(pts, aj[:, None, :], bj[:, None, :]) - dj[:, None]

    g = residual(t)
    change = np.signbit(g[:, :-1]) != np.signbit(g[:, 1:])
    rows, cols = np.nonzero(change)
    out = []
    if rows.size:
        lo = t[rows, cols].copy()
        hi = t[rows, cols + 1].copy()
        glo = g[rows, cols].copy()
        sub = (ai[rows], bi[rows], di[rows], aj[rows], bj[rows], dj[rows])
        for _ in range(BISECTIONS):
            mid = 0.5 * (lo + hi)
            pts = _points_at(sub[0], sub[1], sub[2], mid[:, None])[:, 0, :]
            gm = _path_diff(pts, sub[3], sub[4]) - sub[5]
            same = np.signbit(gm) == np.signbit(glo)
            lo = np.where(same, mid, lo)
            glo = np.where(same, gm, glo)
            hi = np.where(same, hi, mid)
        out.append(_points_at(sub[0], sub[1], sub[2], (0.5 * (lo + hi))[:, None])[:, 0, :])
    none = ~change.any(axis=1)
    if none.any():
        best = np.argmin(np.abs(g[none]), axis=1)
        tt = t[none, best]
        out.append(_points_at(ai[none], bi[none], di[none], tt[:, None])[:, 0, :])
    return np.concatenate(out) if out else np.zeros((0, 2))


def _points_at(a, b, d, t):
    """contour_points for S contours at their own parameters t (S, G) -> (S, G, 2)."""
    m = 0.5 * (a + b)
    axis = a - b
    f = 0.5 * np.hypot(axis[:, 0], axis[:, 1])
    u = axis / (2.0 * f)[:, None]
    v = np.stack([-u[:, 1], u[:, 0]], axis=1)
    semi_minor = np.sqrt(np.maximum(f * f - 0.25 * d * d, 0.0))
    x = -0.5 * d[:, None] * np.cosh(t)
    y = semi_minor[:, None] * np.sinh(t)
    return m[:, None, :] + x[..., None] * u[:, None, :] + y[..., None] * v[:, None, :]


def _minimal_sets(usable, iterations, rng):
    """Index pairs (i, j), i != j, of contours that can seed a hypothesis: all of them when there are at most
    ``iterations``, else ``iterations`` draws."""
    idx = np.flatnonzero(usable)
    n = idx.size
    if n < 2:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    if n * (n - 1) // 2 <= iterations:
        i, j = np.triu_indices(n, k=1)
        return idx[i], idx[j]
    i = rng.integers(0, n, size=iterations)
    j = (i + rng.integers(1, n, size=iterations)) % n
    return idx[i], idx[j]


def _tdoa_residuals(points, a, b, d_m, c):
    """TDOA residuals (s), predicted minus measured, of points (P, 2) on every contour -> (P, N)."""
    return _path_diff(points[:, None, :], a[None, :, :], b[None, :, :]) / c - d_m[None, :] / c


# ---------------------------------------------------------------------------------------------- refinement
def _normal_equations(p, a, b, tdoa, ping, mask, pings, c, sigma):
    """Whitened cost, gradient and normal matrix of the inliers' TDOA residuals at p, with each ping's
    correlated noise sigma^2 (I + 1 1^T) (inverse (I - 1 1^T / (m + 1)) / sigma^2)."""
    da = p[None, :] - a
    db = p[None, :] - b
    ra = np.hypot(da[:, 0], da[:, 1])
    rb = np.hypot(db[:, 0], db[:, 1])
    r = ((ra - rb) / c - tdoa)[mask]
    jac = ((da / ra[:, None] - db / rb[:, None]) / c)[mask]            # d tdoa / d (north, east), s/m
    g = ping[mask]
    m = np.bincount(g, minlength=pings).astype(float)
    sr = np.bincount(g, weights=r, minlength=pings)
    sj = np.stack([np.bincount(g, weights=jac[:, 0], minlength=pings),
                   np.bincount(g, weights=jac[:, 1], minlength=pings)], axis=1)
    w = 1.0 / (m + 1.0)
    cost = (r @ r - np.sum(w * sr * sr)) / sigma ** 2
    grad = (jac.T @ r - (sj * (w * sr)[:, None]).sum(axis=0)) / sigma ** 2
    normal = (jac.T @ jac - (sj * w[:, None]).T @ sj) / sigma ** 2
    return cost, grad, normal, r


def refine(p0, a, b, tdoa, ping, mask, pings, c, sigma, steps=60):
    """Levenberg-Marquardt damped Gauss-Newton on the whitened TDOA residuals of the contours in ``mask``
    from ``p0`` (north_m, east_m); returns (point, normal matrix J^T R^-1 J at it, residuals s)."""
    p = np.asarray(p0, dtype=float).copy()
    cost, grad, normal, r = _normal_equations(p, a, b, tdoa, ping, mask, pings, c, sigma)
    lam = 1e-3
    for _ in range(steps):
        damped = normal + lam * np.diag(np.maximum(np.diag(normal), 1e-12))
        try:
            step = -np.linalg.solve(damped, grad)
        except np.linalg.LinAlgError:
            break
        trial = p + step
        tcost, tgrad, tnormal, tr = _normal_equations(trial, a, b, tdoa, ping, mask, pings, c, sigma)
        if tcost <= cost:
            p, cost, grad, normal, r = trial, tcost, tgrad, tnormal, tr
            lam = max(lam / 10.0, 1e-9)
            if np.hypot(*step) < 1e-7:
                break
        else:
            lam *= 10.0
            if lam > 1e9:
                break
    return p, normal, r


def _covariance_of_singular(normal, unknown_sigma_m):
    """The covariance (m^2) of a (near-)singular normal matrix J^T R^-1 J: the inverse of its eigenvalues where
    they carry information; along the eigenvectors whose eigenvalue is not above 1e-12 of the largest (a
    direction the contours do not determine; a pseudo-inverse would claim it known exactly) the larger of
    ``unknown_sigma_m^2`` and the largest of those inverses."""
    w, v = np.linalg.eigh(0.5 * (normal + normal.T))
    floor = 1e-12 * max(float(w.max()), 0.0)
    known = [1.0 / x for x in w if x > floor and x > 0.0]
    unknown = max([unknown_sigma_m * unknown_sigma_m] + known)
    var = np.array([1.0 / x if x > floor and x > 0.0 else unknown for x in w])
    return (v * var[None, :]) @ v.T


def locate(tdoa_s, poses, body_xy, sound_speed_mps=SOUND_SPEED_MPS, timing_sigma_s=TIMING_SIGMA_S,
           inlier_sigmas=INLIER_SIGMAS, iterations=ITERATIONS, max_range_m=MAX_RANGE_M, seed=0):
    """Locate the pinger from P pings: ``tdoa_s`` (P x (K - 1), s, arrival at hydrophone k minus at 0),
    ``poses`` (P x 3: north_m, east_m, yaw_rad of the boat at each ping), ``body_xy`` (K x 2 hydrophone body
    positions, x_m forward, y_m right). ``timing_sigma_s``: noise of one arrival time (inlier threshold and
    covariance); ``iterations``: RANSAC minimal sets (all pairs of contours when there are fewer);
    ``max_range_m``: how far from the hydrophones hypotheses are sought; ``seed``: the draws of minimal sets.
    Returns a :class:`PingerFix`; raises :class:`LocatorError` (module docstring; also for an ``iterations``
    that is not a whole number >= 1, and for an ``inlier_sigmas``, ``max_range_m``, sound speed or timing sigma
    that is not a finite number > 0)."""
    c, sigma, inlier_sigmas, max_range_m = (
        _positive(sound_speed_mps, "sound speed"), _positive(timing_sigma_s, "timing sigma"),
        _positive(inlier_sigmas, "inlier_sigmas"), _positive(max_range_m, "max_range_m"))
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise LocatorError("pinger locator: iterations must be a whole number >= 1, got %r" % (iterations,))
    tdoa, pose, body = checked_inputs(tdoa_s, poses, body_xy, c, sigma)
    pings, pairs = tdoa.shape
    a, b, t_s, ping = contours(tdoa, pose, body)
    d_m = c * t_s
    focal = np.hypot(*(a - b).T)
    threshold = inlier_sigmas * math.sqrt(2.0) * sigma
    # a time difference the pair can produce (within the inlier threshold); near end-fire the noise can push
    # it past the pair's length: such a contour seeds hypotheses as the axis ray (clipped), scores as measured
    usable = np.abs(d_m) < focal + c * threshold
    d_seed = np.clip(d_m, -0.999 * focal, 0.999 * focal)
    rng = np.random.default_rng(seed)
    i, j = _minimal_sets(usable, int(iterations), rng)
    cands = _intersections(a, b, d_seed, i, j, max_range_m) if i.size else np.zeros((0, 2))
    cands = cands[np.all(np.isfinite(cands), axis=1)]
    if cands.shape[0] == 0:
        raise LocatorError("pinger locator: no two time-difference contours meet within %g m (every time "
                           "difference longer than its hydrophone pair allows?)" % max_range_m)
    res = _tdoa_residuals(cands, a, b, d_m, c)
    score = np.minimum(res * res, threshold * threshold).sum(axis=1)          # MSAC
    best = cands[int(np.argmin(score))]
    mask = np.abs(res[int(np.argmin(score))]) < threshold
    if mask.sum() < 2:
        mask = np.zeros_like(mask)
        mask[np.argsort(np.abs(res[int(np.argmin(score))]))[:2]] = True
    p = best
    for _ in range(3):                                    # refine, re-select the inliers, refine again
        p, normal, _r = refine(p, a, b, t_s, ping, mask, pings, c, sigma)
        full = _tdoa_residuals(p[None, :], a, b, d_m, c)[0]
        new_mask = np.abs(full) < threshold
        if new_mask.sum() < 2 or np.array_equal(new_mask, mask):
            break
        mask = new_mask
    p, normal, r = refine(p, a, b, t_s, ping, mask, pings, c, sigma)
    try:
        cov = np.linalg.inv(normal)
    except np.linalg.LinAlgError:
        cov = np.full((2, 2), np.inf)
    if not np.all(np.isfinite(cov)) or np.linalg.eigvalsh(0.5 * (cov + cov.T)).min() <= 0:
        cov = _covariance_of_singular(normal, max_range_m)
    rms = float(np.sqrt(np.mean(r * r))) if r.size else 0.0
    return PingerFix(p[0], p[1], 0.5 * (cov + cov.T), mask.reshape(pings, pairs), rms, cands.shape[0])
