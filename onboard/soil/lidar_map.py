"""LIDAR height fusion into the loader's elevation map (pure, MicroPython): the front and rear single-beam
(planar line-scan) LIDARs' returns, placed in the map by the machine's pose, update the cells they fall in
where the beams see; blind mapping (``onboard.soil.blind_map``) keeps the cells the blade occludes.

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, section 3 ("pointcloud measurements from both LiDARs at
each timestep as well as the blade pose to be used for blind mapping"; Fig. 9: blind mapping updates the
region in front of the blade the front LIDAR cannot see; "when pointcloud measurements are enabled, these
mapping errors are corrected when in the field of view of the sensor"). The height update is the per-cell
1-D Kalman filter of elevation_mapping_cupy, the map the paper extends (``add_points_kernel``; reading aid
``shared/papers/notes/soil.md`` sections 5.2 ``elevation_fusion`` and 6 A1):

    h+ = (h v + z s2) / (s2 + v),   s2+ = s2 v / (s2 + v)

with h, s2 the cell's elevation and variance (layers ``elevation_m``, ``elevation_var_m2``) and z, v the
return's height and variance, v = range_sigma^2 + (range * angle_sigma)^2 (range noise and the pose's
attitude error carried along the beam), floored at ``min_variance_m2`` (0/0 guard, notes 6 A1). A return
whose Mahalanobis distance (h - z)^2 / (s2 + v) exceeds ``mahalanobis_threshold``^2 does not move the
height but adds ``outlier_variance_m2`` to the cell's variance (elevation_mapping_cupy's outlier rule,
written here as the distance its name says), so a cell that really changed (a cut, a deposit the blind
map misplaced) gives way after a few returns while a single stray return does not move it.

Loose soil: the map's loose layer follows the observed change, since bank soil only ever goes down: a
rise dh > 0 adds dh of loose soil, a fall removes loose soil first and then bank (loose = max(L + dh, 0)).

Geometry (CONVENTIONS.md frames): a scan (:class:`LidarScan`) is the ranges of one sweep of a planar
scanner, beam k at angle ``angle_min_rad + k * angle_increment_rad`` in the sensor's x-y plane (x the
boresight, y right, z down), with the machine's measured chassis pose at the scan time (the track-contact
plane's centre, NED, and the chassis' Z-Y-X Euler angles). A mount (settings ``mounts.<name>``) places the
sensor in the body frame FRD at ``position_body_m`` and turns it by ``yaw_rad`` about body z (0 front, pi
rear), then tilts it down by ``depression_rad``: R_sensor_to_body = Rz(yaw) Ry(-depression). The point of
range r is chassis + R_body_to_ned (position + r R_sensor_to_body (cos a, sin a, 0)).

Returns: +inf is "no return" (REP 117; counted, dropped); NaN, a negative or a range outside
[``min_range_m``, ``max_range_m``] is a bad return (counted, dropped); a point within ``blade_margin_m`` of
the blade plate at the scan time (the blade is seen, not the soil: a self-filter with the measured blade
pose), a point in the carried pile's zone and a point outside the map are counted and dropped. The pile's
zone: the blind map carries the pile it gathers as soil on the map just ahead of the blade, its own state
(the surcharge V^Q); a return there would replace that soil's heights with the truth pile's shape while
the blind map keeps pushing its own, counting the pile twice, so returns within the pile's wedge length
(from the blind map's carried volume, ``pile_length_m`` of :meth:`LidarFusion.fuse`) plus
``pile_margin_m`` ahead of the edge and within the blade's ends are left to blind mapping; once the blade
leaves its pile, the LIDARs map it like any soil. Counters: :meth:`LidarFusion.counters`. Layers
added to the map: ``lidar_points`` (returns fused per cell) and ``lidar_height_m`` (the cell's elevation
right after its last fused return, NaN before any: where it still equals the elevation, the LIDAR had the
last word on the cell; blind mapping has changed it since where not).
"""
import math

from onboard.core.rotations import dcm_apply, dcm_mul, euler_to_dcm
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, vector, within, ANY_NUMBER
from onboard.soil.grid_map import ELEVATION, ELEVATION_VAR, LOOSE

LIDAR_POINTS = "lidar_points"           # map layer: returns fused into each cell
LIDAR_HEIGHT = "lidar_height_m"         # map layer: the cell's elevation right after its last fused return
MOUNT_NAMES = ("front", "rear")

# The loader's two scanners (the machine's drawings; assumptions, the paper gives none): on the cab roof,
# 2.2 m above the track-contact plane; the front one's line falls about 1 m ahead of the cutting edge on
# flat ground, over the blade while it cuts (on the pile it pushes once that is ~0.2 m high), and the
# blade hides it once raised ~0.35 m (Fig. 9); the rear one's line falls 2 m behind the cab.
MOUNTS = {
    "front": {"enabled": True, "position_body_m": [0.4, 0.0, -2.2], "yaw_rad": 0.0, "depression_rad": 0.70},
    "rear": {"enabled": True, "position_body_m": [-0.9, 0.0, -2.2], "yaw_rad": 3.141592653589793,
             "depression_rad": 0.833},
}

DEFAULTS = {
    "enabled": False,                   # the app takes LIDAR scans (entry point "lidar")
    "mounts": MOUNTS,
    "min_range_m": 0.3,
    "max_range_m": 12.0,
    "range_sigma_m": 0.012,             # the returns' range noise (1 sigma)
    "angle_sigma_rad": 0.003,           # the pose's attitude error along the beam (1 sigma)
    "mahalanobis_threshold": 3.0,
    "outlier_variance_m2": 0.01,        # elevation_mapping_cupy's outlier_variance
    "min_variance_m2": 1e-6,
    "blade_margin_m": 0.15,             # returns this close to the blade plate are the blade's
    "pile_margin_m": 0.3,               # beyond the blind map's carried pile: its zone (module docstring)
}
SETTING_RANGES = {
    "enabled": BOOLEAN,
    "min_range_m": NON_NEGATIVE,
    "max_range_m": POSITIVE,
    ("min_range_m", "max_range_m"): ("min_range_m < max_range_m", lambda a, b: a < b),
    "range_sigma_m": NON_NEGATIVE,
    "angle_sigma_rad": NON_NEGATIVE,
    "mahalanobis_threshold": POSITIVE,
    "outlier_variance_m2": NON_NEGATIVE,
    "min_variance_m2": POSITIVE,
    "blade_margin_m": NON_NEGATIVE,
    "pile_margin_m": NON_NEGATIVE,
}


def add_mount_ranges(ranges):
    """``ranges`` (a settings range table) with every mount's entries ``mounts.<name>.*`` added; returns it."""
    for name in MOUNT_NAMES:
        ranges["mounts.%s.enabled" % name] = BOOLEAN
        ranges["mounts.%s.position_body_m" % name] = vector(3, ANY_NUMBER)
        ranges["mounts.%s.yaw_rad" % name] = ANY_NUMBER
        ranges["mounts.%s.depression_rad" % name] = within(-1.5707963, 1.5707963)
    return ranges


add_mount_ranges(SETTING_RANGES)


def checked_config(config=None):
    """The fusion's settings (:data:`DEFAULTS` with ``config`` merged in), checked (ConfigError, one line)."""
    return checked(DEFAULTS, SETTING_RANGES, config, "lidar map")


def sensor_to_body(mount):
    """R_sensor_to_body (flat row-major 3x3) of a mount's settings: Rz(yaw) Ry(-depression)."""
    return euler_to_dcm(0.0, -mount["depression_rad"], mount["yaw_rad"])


class LidarScan:
    """One sweep of a planar LIDAR at ``time_us``: ``mount`` (its name, e.g. "front"), ``chassis_ned_m``
    (north, east, down [m] of the chassis' track-contact plane centre, measured), ``chassis_euler_rad``
    (roll, pitch, yaw [rad], measured), ``angle_min_rad`` and ``angle_increment_rad`` (the beams in the scan
    plane) and ``ranges_m`` (one per beam [m]; +inf no return, NaN an erroneous one). Logged through
    :meth:`as_dict` (the ranges as a list; the log writes a non-finite number as null)."""

    def __init__(self, time_us, mount, chassis_ned_m, chassis_euler_rad, angle_min_rad, angle_increment_rad,
                 ranges_m):
        self.time_us = int(time_us)
        self.mount = mount
        self.chassis_ned_m = (float(chassis_ned_m[0]), float(chassis_ned_m[1]), float(chassis_ned_m[2]))
        self.chassis_euler_rad = (float(chassis_euler_rad[0]), float(chassis_euler_rad[1]),
                                  float(chassis_euler_rad[2]))
        self.angle_min_rad = float(angle_min_rad)
        self.angle_increment_rad = float(angle_increment_rad)
        self.ranges_m = [float(r) for r in ranges_m]

    def pose_is_finite(self):
        """True when the pose and the beam angles are finite numbers (the ranges are checked one by one)."""
        for v in self.chassis_ned_m + self.chassis_euler_rad + (self.angle_min_rad, self.angle_increment_rad):
            if not (v - v == 0):
                return False
        return isinstance(self.mount, str)

    def as_dict(self):
        return {"time_us": self.time_us, "mount": self.mount, "chassis_ned_m": list(self.chassis_ned_m),
                "chassis_euler_rad": list(self.chassis_euler_rad), "angle_min_rad": self.angle_min_rad,
                "angle_increment_rad": self.angle_increment_rad, "ranges_m": list(self.ranges_m)}

    @classmethod
    def from_dict(cls, data):
        """The scan of :meth:`as_dict`'s table (a recording's ``/app/in/lidar``); a null number comes back as
        NaN (so a no-return, +inf when recorded, is then counted as a bad return and dropped all the same)."""
        nan = float("nan")

        def fix(values):
            return [nan if v is None else v for v in values]
        return cls(data["time_us"], data["mount"], fix(data["chassis_ned_m"]), fix(data["chassis_euler_rad"]),
                   nan if data["angle_min_rad"] is None else data["angle_min_rad"],
                   nan if data["angle_increment_rad"] is None else data["angle_increment_rad"],
                   fix(data["ranges_m"]))


class LidarFusion:
    """Fuses :class:`LidarScan` s into ``grid`` (module docstring); ``config``: :data:`DEFAULTS` overrides;
    ``blade_width_m`` and ``blade_height_m``: the blade plate of the self-filter."""

    def __init__(self, grid, config=None, blade_width_m=1.85, blade_height_m=0.6):
        self.grid = grid
        self.config = checked_config(config)
        self.blade_width_m = float(blade_width_m)
        self.blade_height_m = float(blade_height_m)
        self._r_s2b = {}
        for name in MOUNT_NAMES:
            m = self.config["mounts"][name]
            if m["enabled"]:
                self._r_s2b[name] = sensor_to_body(m)
        if not grid.has_layer(LIDAR_POINTS):
            grid.add_layer(LIDAR_POINTS, 0.0)
        if not grid.has_layer(LIDAR_HEIGHT):
            grid.add_layer(LIDAR_HEIGHT, float("nan"))
        self.scans = 0
        self.rejected_scans = 0
        self.fused = 0
        self.gated = 0
        self.no_return = 0
        self.bad = 0
        self.blade = 0
        self.pile = 0
        self.outside = 0

    def counters(self):
        return {"scans": self.scans, "rejected_scans": self.rejected_scans, "fused": self.fused,
                "gated": self.gated, "no_return": self.no_return, "bad": self.bad, "blade": self.blade,
                "pile": self.pile, "outside": self.outside}

    def points(self, scan):
        """[(beam index, range [m], north, east, down [m])] of the scan's returns placed in NED by its pose
        and mount (every beam with a finite range, whatever its value); None for an unknown or disabled
        mount."""
        r_s2b = self._r_s2b.get(scan.mount)
        if r_s2b is None:
            return None
        mount = self.config["mounts"][scan.mount]
        roll, pitch, yaw = scan.chassis_euler_rad
        r_b2n = euler_to_dcm(roll, pitch, yaw)
        r_s2n = dcm_mul(r_b2n, r_s2b)
        off = dcm_apply(r_b2n, mount["position_body_m"])
        c = scan.chassis_ned_m
        o = (c[0] + off[0], c[1] + off[1], c[2] + off[2])
        out = []
        a0, da = scan.angle_min_rad, scan.angle_increment_rad
        for k, r in enumerate(scan.ranges_m):
            if not (r - r == 0):
                continue
            a = a0 + k * da
            ca, sa = math.cos(a), math.sin(a)
            dn = r_s2n[0] * ca + r_s2n[1] * sa
            de = r_s2n[3] * ca + r_s2n[4] * sa
            dd = r_s2n[6] * ca + r_s2n[7] * sa
            out.append((k, r, o[0] + r * dn, o[1] + r * de, o[2] + r * dd))
        return out

    def _near_blade(self, blade_pose, n, e, d):
        """True when the NED point lies within ``blade_margin_m`` of the blade plate at ``blade_pose`` (the
        cutting edge's centre and the blade frame: the plate spans the edge, y, and the face up from it, -z)."""
        if blade_pose is None:
            return False
        r = self._blade_r
        pn, pe, pd = n - blade_pose.north_m, e - blade_pose.east_m, d - blade_pose.down_m
        m = self.config["blade_margin_m"]
        x = r[0] * pn + r[3] * pe + r[6] * pd              # along the blade normal
        if x > m or x < -m:
            return False
        y = r[1] * pn + r[4] * pe + r[7] * pd              # along the edge
        if y > 0.5 * self.blade_width_m + m or y < -0.5 * self.blade_width_m - m:
            return False
        up = -(r[2] * pn + r[5] * pe + r[8] * pd)          # up the face (body -z)
        return -m <= up <= self.blade_height_m + m

    def _in_pile(self, blade_pose, n, e, length_m):
        """True when the point lies over the carried pile's zone: ahead of the edge (horizontally, along the
        blade normal) by at most ``length_m`` + ``pile_margin_m`` and within the blade's ends + that margin."""
        if blade_pose is None or length_m <= 0.0:
            return False
        r = self._blade_r
        hn, he = r[0], r[3]
        norm = math.sqrt(hn * hn + he * he)
        if norm < 1e-9:
            return False
        pn, pe = n - blade_pose.north_m, e - blade_pose.east_m
        m = self.config["pile_margin_m"]
        x = (hn * pn + he * pe) / norm
        if x < -m or x > length_m + m:
            return False
        y = (-he * pn + hn * pe) / norm
        return -0.5 * self.blade_width_m - m <= y <= 0.5 * self.blade_width_m + m

    def fuse(self, scan, blade_pose=None, pile_length_m=0.0):
        """Fuse one scan into the map (module docstring); ``blade_pose``: the measured blade pose at the
        scan's time (``onboard.soil.blind_map.BladePose``; None: no self-filter); ``pile_length_m``: the
        length of the pile the blind map carries then (0: none). Returns the number of returns fused."""
        cfg = self.config
        if not isinstance(scan, LidarScan) or not scan.pose_is_finite():
            self.rejected_scans += 1
            return 0
        pts = self.points(scan)
        if pts is None:
            self.rejected_scans += 1
            return 0
        self.scans += 1
        finite = len(pts)
        for r in scan.ranges_m:
            if not (r - r == 0):
                if r > 0.0 and r == r:
                    self.no_return += 1
                else:
                    self.bad += 1
        if finite == 0:
            return 0
        if blade_pose is not None:
            self._blade_r = euler_to_dcm(blade_pose.roll_rad, blade_pose.pitch_rad, blade_pose.yaw_rad)
        grid = self.grid
        h = grid.layer(ELEVATION)
        var = grid.layer(ELEVATION_VAR)
        loose = grid.layer(LOOSE)
        hits = grid.layer(LIDAR_POINTS)
        last = grid.layer(LIDAR_HEIGHT)
        r_lo, r_hi = cfg["min_range_m"], cfg["max_range_m"]
        sr2 = cfg["range_sigma_m"] * cfg["range_sigma_m"]
        sa = cfg["angle_sigma_rad"]
        v_min = cfg["min_variance_m2"]
        gate2 = cfg["mahalanobis_threshold"] * cfg["mahalanobis_threshold"]
        outlier = cfg["outlier_variance_m2"]
        fused = 0
        for _k, r, n, e, d in pts:
            if r < r_lo or r > r_hi:
                self.bad += 1
                continue
            if self._near_blade(blade_pose, n, e, d):
                self.blade += 1
                continue
            if self._in_pile(blade_pose, n, e, pile_length_m):
                self.pile += 1
                continue
            ij = grid.index_of(n, e)
            if ij is None:
                self.outside += 1
                continue
            k = ij[0] * grid.n_east + ij[1]
            z = -d
            v = sr2 + (r * sa) * (r * sa)
            if v < v_min:
                v = v_min
            s2 = var[k]
            if s2 < v_min:
                s2 = v_min
            dz = h[k] - z
            if dz * dz > gate2 * (s2 + v):
                var[k] = s2 + outlier
                self.gated += 1
                continue
            h_new = (h[k] * v + z * s2) / (s2 + v)
            change = h_new - h[k]
            h[k] = h_new
            var[k] = s2 * v / (s2 + v)
            lo = loose[k] + change
            loose[k] = lo if lo > 0.0 else 0.0
            hits[k] += 1.0
            last[k] = h_new
            fused += 1
        self.fused += fused
        return fused
