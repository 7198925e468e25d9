"""The loader's optional front and rear single-beam LIDARs (planar line scanners), ray-cast against the truth
terrain with the blade's occlusion (harness; NumPy).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, section 3 (the simulated CTL's observations include
"pointclouds from front and rear mounted single beam LiDAR scanners"; Fig. 9: the blade hides the soil
just ahead of it from the front LIDAR); reading aid ``shared/papers/notes/soil.md`` section 5.3 ("front and
rear single-beam LiDAR ray-cast against the truth heightmap, occluded by the blade and its pile").

Beam geometry (settings, :data:`DEFAULTS`): each scanner sweeps one plane, beams ``resolution_rad`` apart
over ``fov_rad`` centred on its boresight, one scan every ``60 / rate_hz`` machine steps (10 Hz: a common
2-D scanner rate), ranges ``min_range_m`` .. ``max_range_m``; its mount (``mounts.<name>``, the onboard
``onboard.soil.lidar_map.MOUNTS`` by default: the same calibrated extrinsics the app uses) puts it in the
body frame and tilts it down, so the plane meets flat ground in a line across the machine ahead of the
blade (front) or behind the cab (rear).

Ray cast (:func:`raycast_heightfield`): the truth surface is the terrain's bilinear surface between cell
centres (``harness.sim.soil_terrain.SoilTerrain.surface_at``) with the carried pile rendered ahead of the
blade (``surface_with_pile``); a ray is walked patch by patch (the squares between four cell centres,
split where it crosses a grid line), and in each patch the ray's height minus the bilinear surface is a
quadratic in the range, so the first hit is found exactly (a plane gives a linear equation, exact for
planar terrain; a step is a ramp between the two cell centres). The terrain hides what lies behind it.
Beyond the cell centres' extent there is no terrain (no return). The blade is a plate (the cutting edge,
``width_m`` wide, and the face up from it, ``height_m`` high: :func:`raycast_plate`) that stops the beams
it meets: those return the blade's range (the onboard self-filter drops them) and hide the soil behind it.
The chassis and the lift arms are not modelled as occluders (the mounts sit above them).

Noise (seeded: ``RunRandom(seed).stream("soil_lidar_<mount>")``): Gaussian range noise ``range_sigma_m``;
each return is erroneous (NaN, REP 117) with probability ``bad_return_rate``; a ray that hits nothing
within range returns +inf. The scan carries the machine's measured chassis pose at the scan time (truth
plus ``pose_sigma_m`` / ``pose_sigma_rad`` noise, the loader's kinematic sensors' figures), as
``onboard.soil.lidar_map.LidarScan``.

Timing: a scan is taken at every ``60 / rate_hz``-th machine step, after the step (sensor priority), of the
machine as the step sensed it (the truth chassis and blade poses of the ``LoaderSample`` of that time, the
kinematic state the ``MachineSample`` of the same time reports, also across the operator's move to the next
lane) over the terrain as the step left it (one step of 1/60 s of cutting later, at the blade, which hides
most of it).
"""
import math

import numpy as np

from harness.sim.sensors.sim_sensor import SimSensor
from harness.sim.track_loader import RATE_HZ, time_of_step_us
from onboard.core.rotations import dcm_apply, dcm_mul, euler_to_dcm
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, within
from onboard.soil.lidar_map import MOUNT_NAMES, MOUNTS, LidarScan, add_mount_ranges, sensor_to_body

TOPIC = "/loader/lidar/"            # + the mount's name

DEFAULTS = {
    "enabled": False,
    "rate_hz": 10,                  # scans per second per scanner (divides the machine's 60 Hz)
    "fov_rad": 2.0944,              # 120 deg
    "resolution_rad": 0.017453,     # 1 deg: 121 beams (7 cm apart at 4 m)
    "min_range_m": 0.3,
    "max_range_m": 12.0,
    "range_sigma_m": 0.012,         # 2-D scanner class (e.g. SICK LMS1xx: 12 mm statistical, 1 sigma)
    "bad_return_rate": 0.002,       # erroneous returns, reported NaN
    "pose_sigma_m": 0.003,          # the chassis pose the scan carries (the loader's kinematic sensors)
    "pose_sigma_rad": 0.002,
    "mounts": MOUNTS,
}
SETTING_RANGES = {
    "enabled": BOOLEAN,
    "rate_hz": ("a whole number of Hz dividing 60", lambda v: isinstance(v, int) and not isinstance(v, bool)
                and 1 <= v <= RATE_HZ and RATE_HZ % v == 0),
    "fov_rad": within(1e-3, 2.0 * math.pi),
    "resolution_rad": within(1e-4, math.pi),
    "min_range_m": NON_NEGATIVE,
    "max_range_m": POSITIVE,
    ("min_range_m", "max_range_m"): ("min_range_m < max_range_m", lambda a, b: a < b),
    "range_sigma_m": NON_NEGATIVE,
    "bad_return_rate": within(0.0, 1.0),
    "pose_sigma_m": NON_NEGATIVE,
    "pose_sigma_rad": NON_NEGATIVE,
}
add_mount_ranges(SETTING_RANGES)


def checked_config(config=None):
    """The LIDARs' settings (:data:`DEFAULTS` with ``config`` merged in), checked (ConfigError, one line)."""
    return checked(DEFAULTS, SETTING_RANGES, config, "soil lidar")


def beam_count(cfg):
    """Number of beams of a scan: fov / resolution + 1 (both ends included)."""
    return int(math.floor(cfg["fov_rad"] / cfg["resolution_rad"] + 1e-9)) + 1


def beam_directions_neu(chassis_euler_rad, mount, angles_rad):
    """Unit beam directions (R, 3) in (north, east, up) for the chassis attitude ``chassis_euler_rad``
    (roll, pitch, yaw), a mount's settings and the beams' angles in the scan plane."""
    r_s2n = dcm_mul(euler_to_dcm(*chassis_euler_rad), sensor_to_body(mount))
    m = np.array(r_s2n).reshape(3, 3)
    a = np.asarray(angles_rad, dtype=float)
    ds = np.stack([np.cos(a), np.sin(a), np.zeros_like(a)], axis=1)
    d = ds @ m.T
    d[:, 2] = -d[:, 2]
    return d


def sensor_origin_neu(chassis_ned_m, chassis_euler_rad, mount):
    """The scanner's origin (north, east, up) [m] for a chassis pose and a mount."""
    off = dcm_apply(euler_to_dcm(*chassis_euler_rad), mount["position_body_m"])
    return np.array([chassis_ned_m[0] + off[0], chassis_ned_m[1] + off[1], -(chassis_ned_m[2] + off[2])])


def raycast_heightfield(height_m, cell_m, origin_neu, dirs_neu, t_min=0.0, t_max=np.inf):
    """Ranges [m] along unit rays ``dirs_neu`` (R, 3; north, east, up) from ``origin_neu`` (3,) to their
    first intersection with the bilinear surface of ``height_m`` (cell (i, j) centred at north
    (i + 0.5) cell_m, east (j + 0.5) cell_m, heights up), searched over ranges [t_min, t_max] and over the
    cell centres' extent; +inf where a ray hits nothing (module docstring: exact per patch). A ray that
    enters the extent (or starts, at ``t_min``) below the surface hits there."""
    h = np.asarray(height_m, dtype=float)
    n_n, n_e = h.shape
    d = np.atleast_2d(np.asarray(dirs_neu, dtype=float))
    r = d.shape[0]
    g = float(cell_m)
    u0 = origin_neu[0] / g - 0.5
    v0 = origin_neu[1] / g - 0.5
    z0 = float(origin_neu[2])
    du, dv, dz = d[:, 0] / g, d[:, 1] / g, d[:, 2]
    lo = np.full(r, float(t_min))
    hi = np.full(r, float(t_max))
    # a ray above the highest surface and rising never hits
    h_lo, h_hi = float(h.min()), float(h.max())
    down = dz < 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.where(~down & (z0 > h_hi), -np.inf, hi)
        # the slab of the cell centres' extent, u in [0, n_n - 1], v in [0, n_e - 1]
        for p0, dp, top in ((u0, du, n_n - 1.0), (v0, dv, n_e - 1.0)):
            moving = np.abs(dp) > 1e-15
            ta = np.where(moving, (0.0 - p0) / np.where(moving, dp, 1.0), -np.inf)
            tb = np.where(moving, (top - p0) / np.where(moving, dp, 1.0), np.inf)
            enter, leave = np.minimum(ta, tb), np.maximum(ta, tb)
            inside = (p0 >= 0.0) & (p0 <= top)
            enter = np.where(moving, enter, np.where(inside, -np.inf, np.inf))
            leave = np.where(moving, leave, np.where(inside, np.inf, -np.inf))
            lo = np.maximum(lo, enter)
            hi = np.minimum(hi, leave)
        # a ray below the lowest surface has hit by then: the search ends there, but not before the ray is
        # over the terrain (one that enters the extent below every surface hits where it enters)
        t_below = np.where(down, (h_lo - z0) / np.where(down, dz, -1.0), np.inf)
        hi = np.where(hi > lo, np.minimum(hi, np.maximum(t_below, lo + 1e-9 * (1.0 + np.abs(lo)))), hi)
    out = np.full(r, np.inf)
    live = hi > lo
    if not np.any(live):
        return out
    idx = np.nonzero(live)[0]
    lo, hi, du_l, dv_l, dz_l = lo[idx], hi[idx], du[idx], dv[idx], dz[idx]
    # grid-line crossings strictly inside (lo, hi): the patch boundaries
    cuts = [lo[:, None], hi[:, None]]
    for p0, dp in ((u0, du_l), (v0, dv_l)):
        moving = np.abs(dp) > 1e-15
        safe = np.where(moving, dp, 1.0)
        p_lo = p0 + dp * lo
        span = np.where(moving & np.isfinite(hi), np.abs(dp) * (hi - lo), 0.0)
        count = np.where(moving, np.ceil(span) + 1, 0).astype(int)
        m = int(count.max()) if count.size else 0
        if m == 0:
            continue
        first = np.where(dp > 0, np.floor(p_lo) + 1.0, np.ceil(p_lo) - 1.0)
        k = first[:, None] + np.sign(dp)[:, None] * np.arange(m)[None, :]
        t = (k - p0) / safe[:, None]
        ok = moving[:, None] & (t > lo[:, None]) & (t < hi[:, None])
        cuts.append(np.where(ok, t, np.inf))
    bp = np.sort(np.concatenate(cuts, axis=1), axis=1)
    ta, tb = bp[:, :-1], bp[:, 1:]
    seg = np.isfinite(tb) & (tb > ta)
    ta_s = np.where(seg, ta, 0.0)
    tb_s = np.where(seg, tb, 0.0)
    tm = 0.5 * (ta_s + tb_s)
    uu = u0 + du_l[:, None] * tm
    vv = v0 + dv_l[:, None] * tm
    i = np.clip(np.floor(uu).astype(int), 0, max(n_n - 2, 0))
    j = np.clip(np.floor(vv).astype(int), 0, max(n_e - 2, 0))
    i1 = np.minimum(i + 1, n_n - 1)
    j1 = np.minimum(j + 1, n_e - 1)
    h00, h10, h01, h11 = h[i, j], h[i1, j], h[i, j1], h[i1, j1]
    b, c, dd = h10 - h00, h01 - h00, h00 - h10 - h01 + h11
    fu = u0 + du_l[:, None] * ta_s - i
    fv = v0 + dv_l[:, None] * ta_s - j
    dus, dvs = du_l[:, None], dv_l[:, None]
    # ray height minus surface over s = t - ta: c0 + c1 s + c2 s^2
    s0 = h00 + b * fu + c * fv + dd * fu * fv
    c0 = z0 + dz_l[:, None] * ta_s - s0
    c1 = dz_l[:, None] - (b * dus + c * dvs + dd * (fu * dvs + fv * dus))
    c2 = -dd * dus * dvs
    length = tb_s - ta_s
    tol = 1e-12 * (1.0 + length)
    s_hit = np.full(c0.shape, np.inf)
    s_hit = np.where(c0 <= 0.0, 0.0, s_hit)
    lin = np.abs(c2) <= 1e-14 * (np.abs(c1) + np.abs(c0) + 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_lin = np.where(c1 < 0.0, -c0 / np.where(c1 < 0.0, c1, -1.0), np.inf)
        disc = c1 * c1 - 4.0 * c2 * c0
        sq = np.sqrt(np.maximum(disc, 0.0))
        q = -0.5 * (c1 + np.where(c1 >= 0.0, sq, -sq))
        r1 = np.where(np.abs(c2) > 0.0, q / np.where(np.abs(c2) > 0.0, c2, 1.0), np.inf)
        r2 = np.where(q != 0.0, c0 / np.where(q != 0.0, q, 1.0), np.inf)
    r1 = np.where((r1 >= 0.0) & (r1 <= length + tol), r1, np.inf)
    r2 = np.where((r2 >= 0.0) & (r2 <= length + tol), r2, np.inf)
    s_quad = np.where(disc >= 0.0, np.minimum(r1, r2), np.inf)
    s_lin = np.where((s_lin >= 0.0) & (s_lin <= length + tol), s_lin, np.inf)
    s_root = np.where(lin, s_lin, s_quad)
    s_hit = np.where(c0 > 0.0, s_root, s_hit)
    s_hit = np.where(seg, s_hit, np.inf)
    t_hit = np.min(ta_s + s_hit, axis=1)
    out[idx] = t_hit
    return out


def raycast_plate(origin_neu, dirs_neu, centre_neu, axis_a, axis_b, half_a_m, b_max_m):
    """Ranges [m] along unit rays from ``origin_neu`` to the plate centre + a axis_a + b axis_b with
    |a| <= ``half_a_m`` and 0 <= b <= ``b_max_m`` (orthonormal axes, (north, east, up)); +inf where a ray
    misses it or meets it behind the origin."""
    d = np.atleast_2d(np.asarray(dirs_neu, dtype=float))
    a_ax, b_ax = np.asarray(axis_a, dtype=float), np.asarray(axis_b, dtype=float)
    normal = np.cross(a_ax, b_ax)
    rel = np.asarray(centre_neu, dtype=float) - np.asarray(origin_neu, dtype=float)
    den = d @ normal
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(np.abs(den) > 1e-12, float(rel @ normal) / np.where(np.abs(den) > 1e-12, den, 1.0), np.inf)
    p = t[:, None] * d - rel[None, :]
    a = p @ a_ax
    b = p @ b_ax
    hit = np.isfinite(t) & (t > 0.0) & (np.abs(a) <= half_a_m) & (b >= 0.0) & (b <= b_max_m)
    return np.where(hit, t, np.inf)


def blade_plate(blade_pose):
    """(edge centre, axis along the edge, axis up the face) of the blade at ``blade_pose`` in (north, east,
    up) (the blade frame of ``onboard.soil.blind_map``: y along the edge, the face up from it along -z)."""
    r = euler_to_dcm(blade_pose.roll_rad, blade_pose.pitch_rad, blade_pose.yaw_rad)
    centre = np.array([blade_pose.north_m, blade_pose.east_m, -blade_pose.down_m])
    along = np.array([r[1], r[4], -r[7]])
    face = np.array([-r[2], -r[5], r[8]])
    return centre, along, face


def true_ranges(surface_m, cell_m, chassis_pose, blade_pose, blade_width_m, blade_height_m, cfg, mount, angles):
    """Noise-free ranges [m] of one scan (+inf: nothing within range) for the chassis pose (north, east, down,
    roll, pitch, yaw) and the blade pose: the first of the terrain ``surface_m`` (pile included) and the
    blade plate along each beam."""
    ned, euler = chassis_pose[:3], chassis_pose[3:]
    o = sensor_origin_neu(ned, euler, mount)
    d = beam_directions_neu(euler, mount, angles)
    t_ground = raycast_heightfield(surface_m, cell_m, o, d, cfg["min_range_m"], cfg["max_range_m"])
    centre, along, face = blade_plate(blade_pose)
    t_blade = raycast_plate(o, d, centre, along, face, 0.5 * blade_width_m, blade_height_m)
    t = np.minimum(t_ground, t_blade)
    return np.where((t >= cfg["min_range_m"]) & (t <= cfg["max_range_m"]), t, np.inf)


class LidarSensor(SimSensor):
    """One scanner (``mount``: "front" or "rear") on a ``harness.sim.soil_loader_world.LoaderWorld``'s
    machine, handing a ``LidarScan`` to ``entry`` every ``60 / rate_hz`` machine steps (module docstring);
    ``config``: :data:`DEFAULTS` overrides; ``rng``: a numpy Generator (its own stream)."""

    def __init__(self, world, mount, entry, rng, config=None, log=None):
        self.config = checked_config(config)
        SimSensor.__init__(self, self.config["rate_hz"], entry, TOPIC + mount, log)
        if mount not in MOUNT_NAMES:
            raise ValueError("soil lidar: no mount %r (mounts: %s)" % (mount, ", ".join(MOUNT_NAMES)))
        self.world = world
        self.mount = mount
        self.rng = rng
        self.every_steps = RATE_HZ // self.config["rate_hz"]
        n = beam_count(self.config)
        self.angle_min_rad = -0.5 * (n - 1) * self.config["resolution_rad"]
        self.angles = self.angle_min_rad + self.config["resolution_rad"] * np.arange(n)

    def attach(self, clock):
        k = 0
        while time_of_step_us(k) < clock.now_us():
            k += self.every_steps
        state = {"k": k}

        def tick(now_us):
            self.tick(now_us)
            state["k"] += self.every_steps
            clock.call_at(time_of_step_us(state["k"]), tick, self.priority)
        clock.call_at(time_of_step_us(k), tick, self.priority)
        return self

    def sample(self, now_us):
        world = self.world
        s = world.last_sample
        if s is None or s.time_us != now_us:
            return None
        loader, terrain = world.loader, world.terrain
        b = loader.config["blade"]
        chassis = s.truth["chassis_pose"]
        blade = s.truth["blade_pose"]
        surface = terrain.surface_with_pile(blade, b["width_m"]) if terrain.pile_m3 > 0.0 else terrain.height_m
        cfg = self.config
        t = true_ranges(surface, terrain.cell_m, chassis, blade, b["width_m"], b["height_m"], cfg,
                        cfg["mounts"][self.mount], self.angles)
        noise = self.rng.normal(0.0, 1.0, t.size)
        bad = self.rng.random(t.size) < cfg["bad_return_rate"]
        pose_noise = self.rng.normal(0.0, 1.0, 6)
        ranges = np.where(np.isfinite(t), t + cfg["range_sigma_m"] * noise, np.inf)
        ranges = np.where(bad, np.nan, ranges)
        ps, pa = cfg["pose_sigma_m"], cfg["pose_sigma_rad"]
        ned = [chassis[k] + ps * pose_noise[k] for k in range(3)]
        euler = [chassis[3 + k] + pa * pose_noise[3 + k] for k in range(3)]
        return LidarScan(now_us, self.mount, ned, euler, self.angle_min_rad, cfg["resolution_rad"],
                         ranges.tolist())
