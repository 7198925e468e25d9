"""A simulated spinning LIDAR on the boat: Velodyne VLP-16 geometry (RobotX AAVS section III-E: the boat's
VLP-16; section III-A, fig. 2: the simulator's LIDAR model) or a 2-D planar scanner, ray-cast against a
course's buoys (vertical cylinders from the water line up to ``height_m``, with their flat tops) and its
shore (a vertical wall along the shore polyline). Water gives no returns (section III-A: "the LIDAR used
in this project does not pick up the surface of the water"); a ray that reaches the water is lost.

Geometry: ``beams = "vlp16"``: 16 beams from -15 to +15 deg elevation, 2 deg apart, one firing per
``azimuth_res_deg`` over a full turn (VLP-16: 0.2 deg at 10 Hz), ranges up to ``max_range_m`` with
Gaussian range noise ``range_sigma_m``. ``beams = "planar"`` gives one beam at ``planar_elevation_deg``
(a 2-D scanner, for the sensor-configuration comparison; mount it low, e.g. :data:`PLANAR`).

Frames: the sensor is level (the boat model is 3-DOF: no roll or pitch) and mounted at ``mount_forward_m``,
``mount_right_m`` in the body frame, ``mount_height_m`` above the water. A sweep is taken at one TRUE pose
(the 0.1 s turn is not smeared by the boat's motion) and returned in the BODY frame, FRD, metres, origin
on the water line under the body reference point (so a point ``h`` above the water has ``z = -h``); the
app places the points in NED with its ESTIMATED pose.

Vectorised numpy: horizontal entry/exit distances per (azimuth, buoy) once, then per beam the height of
the hit decides side wall, top or miss; the nearest hit per ray wins, so a buoy hides what is behind it.
Randomness: the ``rng`` passed in (``RunRandom(seed).stream("lidar")``).

:class:`LidarSensor` puts the LIDAR on the simulated boat (``harness.sim.boat_world``): sweeps at the truth
pose handed to the app's ``lidar`` entry as ``onboard.vessel.buoy_perception.LidarFrame``.
"""
import math

import numpy as np

from harness.sim.sensors.sim_sensor import SimSensor
from onboard.core.units import hz_to_period_us
from onboard.vessel.buoy_perception import LidarFrame

DEFAULTS = {
    "beams": "vlp16",               # "vlp16" (16 beams, -15..+15 deg) or "planar" (one beam)
    "planar_elevation_deg": 0.0,
    "azimuth_res_deg": 0.2,         # VLP-16 at 10 Hz; coarser (0.4 at 20 Hz, or any) as a setting
    "rate_hz": 10.0,
    "max_range_m": 100.0,
    "min_range_m": 0.5,
    "range_sigma_m": 0.03,          # VLP-16 datasheet: +-3 cm typical accuracy
    "mount_forward_m": 0.5,
    "mount_right_m": 0.0,
    "mount_height_m": 2.0,
    "shore_height_m": 3.0,
}
PLANAR = {"beams": "planar", "mount_height_m": 0.5}    # a 2-D scanner low on the bow
VLP16_ELEVATIONS_DEG = tuple(-15.0 + 2.0 * k for k in range(16))


class LidarConfigError(ValueError):
    """A bad LIDAR setting; one line."""


def check_config(cfg):
    """``cfg`` merged over :data:`DEFAULTS`, checked (raises :class:`LidarConfigError`, one line)."""
    out = dict(DEFAULTS)
    if cfg is not None and not isinstance(cfg, dict):
        raise LidarConfigError("lidar: settings must be a table, got %r" % (cfg,))
    for k, v in (cfg or {}).items():
        if k not in DEFAULTS:
            raise LidarConfigError("lidar.%s: unknown setting (known: %s)" % (k, ", ".join(DEFAULTS)))
        out[k] = v
    if out["beams"] not in ("vlp16", "planar"):
        raise LidarConfigError("lidar.beams: must be 'vlp16' or 'planar', got %r" % (out["beams"],))
    for k, lo, hi in (("azimuth_res_deg", 0.01, 45.0), ("rate_hz", 1.0, 100.0), ("max_range_m", 1.0, 1000.0),
                      ("min_range_m", 0.0, 100.0), ("range_sigma_m", 0.0, 10.0), ("mount_height_m", 0.05, 20.0),
                      ("mount_forward_m", -20.0, 20.0), ("mount_right_m", -20.0, 20.0),
                      ("shore_height_m", 0.0, 100.0), ("planar_elevation_deg", -30.0, 30.0)):
        v = out[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo <= v <= hi):
            raise LidarConfigError("lidar.%s: must be a number in [%g, %g], got %r" % (k, lo, hi, v))
        out[k] = float(v)
    try:
        hz_to_period_us(out["rate_hz"])     # the sensor ticks on the microsecond clock (LidarSensor)
    except ValueError:
        raise LidarConfigError("lidar.rate_hz: must be a whole number of Hz whose period is a whole number of "
                               "microseconds (e.g. 5, 10, 20), got %r" % (out["rate_hz"],)) from None
    if out["min_range_m"] >= out["max_range_m"]:
        raise LidarConfigError("lidar.min_range_m: must be below max_range_m")
    return out


class LidarScene:
    """The course as the LIDAR sees it: buoy centres (M, 2) NED m, radii (M,), heights (M,), and the shore's
    wall segments (S, 2, 2) NED m of height ``shore_height_m``."""

    def __init__(self, course, shore_height_m=DEFAULTS["shore_height_m"]):
        b = course.buoys
        self.centres_ne_m = np.array([[x.north_m, x.east_m] for x in b], float).reshape(-1, 2)
        self.radii_m = np.array([x.radius_m for x in b], float)
        self.heights_m = np.array([x.height_m for x in b], float)
        pts = np.array(course.shore, float).reshape(-1, 2)
        self.shore_seg_ne_m = np.stack([pts[:-1], pts[1:]], axis=1) if len(pts) >= 2 else np.zeros((0, 2, 2))
        self.shore_height_m = float(shore_height_m)


class Lidar:
    """The sensor: ``cfg`` (:data:`DEFAULTS` overrides), ``rng`` a numpy Generator for the range noise."""

    def __init__(self, cfg=None, rng=None):
        self.cfg = check_config(cfg)
        self.rng = rng if rng is not None else np.random.default_rng(0)
        c = self.cfg
        el = VLP16_ELEVATIONS_DEG if c["beams"] == "vlp16" else (c["planar_elevation_deg"],)
        self.elevations_rad = np.radians(np.array(el, float))
        n_az = max(1, int(round(360.0 / c["azimuth_res_deg"])))
        self.azimuths_rad = np.arange(n_az) * (2.0 * math.pi / n_az)      # clockwise from the bow (FRD)
        self.period_us = int(round(1e6 / c["rate_hz"]))

    @property
    def rays_per_sweep(self):
        return len(self.elevations_rad) * len(self.azimuths_rad)

    def sweep(self, scene, north_m, east_m, yaw_rad):
        """One full turn at the TRUE pose (``north_m``, ``east_m``, ``yaw_rad``): the returns as an (N, 3)
        array in the body frame (FRD, m, origin on the water line; see the module docstring)."""
        return self.sweep_rings(scene, north_m, east_m, yaw_rad)[0]

    def sweep_rings(self, scene, north_m, east_m, yaw_rad):
        """:meth:`sweep` and each return's beam (ring) index (N,)."""
        c = self.cfg
        cy, sy = math.cos(yaw_rad), math.sin(yaw_rad)
        fwd, right, h0 = c["mount_forward_m"], c["mount_right_m"], c["mount_height_m"]
        origin = np.array([north_m + fwd * cy - right * sy, east_m + fwd * sy + right * cy])
        world_az = yaw_rad + self.azimuths_rad
        d = np.stack([np.cos(world_az), np.sin(world_az)], axis=1)             # (A, 2) horizontal unit rays
        tan_el = np.tan(self.elevations_rad)                                     # (B,)
        n_b, n_a = len(tan_el), len(world_az)
        best = np.full((n_b, n_a), np.inf)                                       # horizontal distance of hit

        if len(scene.radii_m):
            rel = scene.centres_ne_m - origin                                    # (M, 2)
            far = np.hypot(rel[:, 0], rel[:, 1]) - scene.radii_m < c["max_range_m"]
            rel, r, hgt = rel[far], scene.radii_m[far], scene.heights_m[far]
            # ray-circle in the horizontal plane: s^2 - 2 s (d . rel) + |rel|^2 - r^2 = 0
            proj = d @ rel.T                                                     # (A, M)
            disc = proj * proj - (np.einsum("ij,ij->i", rel, rel) - r * r)[None, :]
            ok = disc >= 0.0
            root = np.sqrt(np.where(ok, disc, 0.0))
            s_in = np.where(ok, proj - root, np.inf)
            s_out = np.where(ok, proj + root, -np.inf)
            inside = s_in < 0.0                                                  # sensor inside: ignore
            s_in = np.where(inside, np.inf, s_in)
            for k in range(n_b):
                with np.errstate(invalid="ignore"):                              # inf * 0 on a level beam
                    z_in = h0 + s_in * tan_el[k]                                 # hit height on the wall
                wall = (z_in >= 0.0) & (z_in <= hgt[None, :])
                s_hit = np.where(wall, s_in, np.inf)
                if tan_el[k] < 0.0:                                              # falling rays may hit the top
                    s_cap = (hgt - h0) / tan_el[k]                               # (M,)
                    cap = (z_in > hgt[None, :]) & (s_cap[None, :] >= s_in) & (s_cap[None, :] <= s_out)
                    s_hit = np.where(cap, s_cap[None, :], s_hit)
                best[k] = np.minimum(best[k], s_hit.min(axis=1, initial=np.inf))

        if len(scene.shore_seg_ne_m):
            p0 = scene.shore_seg_ne_m[:, 0] - origin                             # (S, 2)
            e = scene.shore_seg_ne_m[:, 1] - scene.shore_seg_ne_m[:, 0]
            # origin + s d = p0 + u e  ->  s = (p0 x e) / (d x e), u = (p0 x d) / (d x e)
            den = d[:, 0:1] * e[None, :, 1] - d[:, 1:2] * e[None, :, 0]         # (A, S)
            with np.errstate(divide="ignore", invalid="ignore"):
                s = (p0[:, 0] * e[:, 1] - p0[:, 1] * e[:, 0])[None, :] / den
                u = (p0[None, :, 0] * d[:, 1:2] - p0[None, :, 1] * d[:, 0:1]) / den
            hit = (np.abs(den) > 1e-12) & (s > 0.0) & (u >= 0.0) & (u <= 1.0)
            s_shore = np.where(hit, s, np.inf).min(axis=1)                       # (A,)
            with np.errstate(invalid="ignore"):                                  # inf * 0 on a level beam
                z = h0 + s_shore[None, :] * tan_el[:, None]
            best = np.minimum(best, np.where((z >= 0.0) & (z <= scene.shore_height_m), s_shore[None, :], np.inf))

        cos_el = np.cos(self.elevations_rad)
        rng_m = best / cos_el[:, None]                                           # slant range
        kk, aa = np.nonzero((rng_m >= c["min_range_m"]) & (rng_m <= c["max_range_m"]))
        r = rng_m[kk, aa]
        if c["range_sigma_m"] > 0.0:
            r = r + self.rng.normal(0.0, c["range_sigma_m"], r.shape)
        el, az = self.elevations_rad[kk], self.azimuths_rad[aa]
        horiz = r * np.cos(el)
        pts = np.empty((len(r), 3))
        pts[:, 0] = fwd + horiz * np.cos(az)
        pts[:, 1] = right + horiz * np.sin(az)
        pts[:, 2] = -(h0 + r * np.sin(el))
        return pts, kk


class LidarSensor(SimSensor):
    """The LIDAR on the simulated boat: every ``1 / rate_hz`` a sweep at the truth vessel's pose
    (``vessel``: ``harness.sim.wamv.Wamv``) handed to ``entry`` (the app's ``on_lidar``) as an
    ``onboard.vessel.buoy_perception.LidarFrame``."""

    def __init__(self, lidar, scene, vessel, entry, topic=None, log=None):
        SimSensor.__init__(self, lidar.cfg["rate_hz"], entry, topic, log)
        self.lidar, self.scene, self.vessel = lidar, scene, vessel

    def sample(self, now_us):
        v = self.vessel
        return LidarFrame(now_us, self.lidar.sweep(self.scene, v.north_m, v.east_m, v.yaw_rad))


def perception_study(seeds, lidar_cfg=None, pos_sigma_m=0.1, yaw_sigma_deg=0.3, step_m=2.0):
    """Perception (``onboard.vessel.buoy_perception``) of generated RobotX courses from this LIDAR's sweeps:
    a sweep every ``step_m`` along each course's task legs (``boat_course.task_path``), placed with an
    estimated pose = truth + N(0, ``pos_sigma_m``) per axis and N(0, ``yaw_sigma_deg``) in yaw. Returns
    {buoys, found (within 0.5 m), phantoms (confirmed tracks 0.5 m or more from every buoy), duplicates (the
    phantoms within 2.5 m of a buoy: a second track of it), position errors (m) of the found buoys, radius
    errors (m)}."""
    from harness.sim.boat_course import generate_course, task_path
    from harness.sim.rng import RunRandom
    from onboard.vessel import buoy_perception as bp
    lidar_cfg = lidar_cfg or {}
    out = {"buoys": 0, "found": 0, "phantoms": 0, "duplicates": 0, "pos_err_m": [], "radius_err_m": []}
    for seed in seeds:
        course = generate_course(seed, "robotx")
        rr = RunRandom(seed)
        lidar, scene, est = Lidar(lidar_cfg, rr.stream("lidar")), LidarScene(course), rr.stream("estimate")
        bmap = bp.BuoyMap(bp.settings({"sensor_forward_m": lidar.cfg["mount_forward_m"],
                                       "azimuth_res_deg": lidar.cfg["azimuth_res_deg"]}))
        for i, (n, e, yaw) in enumerate(task_path(course, step_m)):
            pts = lidar.sweep(scene, n, e, yaw)
            bmap.step(pts, n + est.normal(0, pos_sigma_m), e + est.normal(0, pos_sigma_m),
                      yaw + math.radians(est.normal(0, yaw_sigma_deg)), i * lidar.period_us)
        found = bmap.confirmed()
        for b in course.buoys:
            out["buoys"] += 1
            if found:
                t = min(found, key=lambda t: math.hypot(t.north_m - b.north_m, t.east_m - b.east_m))
                d = math.hypot(t.north_m - b.north_m, t.east_m - b.east_m)
                if d < 0.5:
                    out["found"] += 1
                    out["pos_err_m"].append(d)
                    out["radius_err_m"].append(t.radius_m - b.radius_m)
        for t in found:
            d = min(math.hypot(t.north_m - b.north_m, t.east_m - b.east_m) for b in course.buoys)
            out["phantoms"] += d >= 0.5
            out["duplicates"] += 0.5 <= d < 2.5
    return out


def main(argv=None):
    """``python -m harness.sim.lidar [--seeds N]``: :func:`perception_study` for the VLP-16 and the planar
    scanner, exact and estimated poses; prints a table."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--seeds", type=int, default=20, help="generated RobotX courses (seeds 0..N-1)")
    args = ap.parse_args(argv)
    print("%-8s %-22s %6s %6s %8s %6s %12s %12s %14s" % ("lidar", "pose", "buoys", "found", "phantoms", "(dup)",
                                                         "median err m", "max err m", "radius err m"))
    for name, cfg in (("vlp16", {}), ("planar", PLANAR)):
        for pose, ps, ys in (("exact", 0.0, 0.0), ("est. 0.1 m / 0.3 deg", 0.1, 0.3),
                             ("est. 0.3 m / 1 deg", 0.3, 1.0)):
            r = perception_study(range(args.seeds), cfg, ps, ys)
            e = np.array(r["pos_err_m"]) if r["pos_err_m"] else np.array([np.nan])
            re = np.abs(r["radius_err_m"]) if r["radius_err_m"] else np.array([np.nan])
            print("%-8s %-22s %6d %6d %8d %6d %12.3f %12.3f %14.3f" % (
                name, pose, r["buoys"], r["found"], r["phantoms"], r["duplicates"], np.median(e), e.max(), np.median(re)))


if __name__ == "__main__":
    main()
