"""Vectorised 2-D swarm simulator for training and data collection (uwb-pocket-drones V-A).

"a simple 2D python simulator with simple inertia and noise models based on the MAVs and
the UWB chips" (pocket V-A): ``n_envs`` independent arenas with ``n_drones`` drones each,
all at the same height. Each drone holds a fixed yaw (random per episode) and acts in its
own body frame: the DQN's action is integrated into a body-frame velocity setpoint
(:func:`onboard.swarm.actions.update_setpoint`, vectorised here, same formulas), which the
drone tracks with a first-order lag (the Crazyflie velocity loop; same time constant and
acceleration limit as ``harness.sim.vehicles.drone2d``), speed capped at 1 m/s. The action is
held for ``frame_skip`` physics steps (pocket V-B). UWB ranges carry the pocket III-A noise
N(0.0085569 m, 0.061295 m^2); own velocity (flow/mocap) carries white noise.

Arrays: positions/velocities are world (NED plane) ``[env, drone, 2]``; body-frame
quantities are rotated with each drone's yaw: ``v_body = R(yaw)^T v_world``.
"""
import math

import numpy as np

from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, int_at_least
from onboard.estimators.particle_filter import UWB_RANGE_BIAS_M, UWB_RANGE_VAR_M2
from onboard.swarm.actions import ACCEL_MPS2, DIRECTIONS_BODY, MAX_SPEED_MPS, N_ACTIONS, SLOW_DOWN

DEFAULTS = {
    "arena_m": 2.0,                 # square side (pocket V-C training: 2 m x 2 m; flights: 4 m)
    "wall_margin_m": 0.3,           # drones are held inside arena + margin (the lab's net)
    "physics_dt_s": 0.02,
    "frame_skip": 5,                # policy / filter period = frame_skip * physics_dt (0.1 s)
    "accel_mps2": ACCEL_MPS2,
    "max_speed_mps": MAX_SPEED_MPS,
    "vel_time_constant_s": 0.2,     # as harness.sim.vehicles.drone2d
    "max_accel_mps2": 2.0,
    "vel_noise_mps": 0.05,          # own-velocity measurement noise (flow / mocap)
    "range_bias_m": UWB_RANGE_BIAS_M,
    "range_sigma_m": math.sqrt(UWB_RANGE_VAR_M2),
    "goal_radius_m": 0.15,          # goal counts as reached inside this radius
    "critical_distance_m": 0.5,     # c of pocket eq. 4
    "obstacle_clip_m": 2.0,         # DQN obstacle input: farther neighbours are shown at this distance
    "goal_scale_m": 0.0,            # eq. 4 normalisation of d1 (m); 0: the arena side
    "start_separation_m": 0.5,
    "goal_separation_m": 0.5,
}
SETTING_RANGES = dict({key: POSITIVE for key in ("arena_m", "physics_dt_s", "accel_mps2", "max_speed_mps",
                                                 "vel_time_constant_s", "max_accel_mps2", "goal_radius_m",
                                                 "critical_distance_m", "obstacle_clip_m")},
                      frame_skip=int_at_least(1), wall_margin_m=NON_NEGATIVE, vel_noise_mps=NON_NEGATIVE,
                      range_bias_m=ANY_NUMBER, range_sigma_m=NON_NEGATIVE, goal_scale_m=NON_NEGATIVE,
                      start_separation_m=NON_NEGATIVE, goal_separation_m=NON_NEGATIVE)

DIRS = np.array(DIRECTIONS_BODY)


def rot(yaw):
    """R(yaw) [..., 2, 2] mapping body to world (planar; yaw from x towards y)."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def to_body(yaw, v_world):
    """World vectors [..., 2] into the body frame of a drone with that yaw."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([c * v_world[..., 0] + s * v_world[..., 1], -s * v_world[..., 0] + c * v_world[..., 1]], -1)


def to_world(yaw, v_body):
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([c * v_body[..., 0] - s * v_body[..., 1], s * v_body[..., 0] + c * v_body[..., 1]], -1)


def clip_length(v, max_m):
    """Vectors [..., 2] shortened to at most max_m (the DQN's obstacle input; same as the onboard agent)."""
    n = np.hypot(v[..., 0], v[..., 1])
    return v * np.where(n > max_m, max_m / np.maximum(n, 1e-12), 1.0)[..., None]


def relative_pose_body(pos_own, yaw_own, pos_obj, yaw_obj=None):
    """Truth the estimators are scored against: the object's pose in the own body frame.

    Position ``R(yaw_own)^T (p_obj - p_own)`` (m) and relative orientation
    ``wrap(yaw_obj - yaw_own)`` (rad; ``R(rel_yaw)`` maps the object's body velocity into the
    own frame, the particle filter's convention, pocket IV-B). Arrays broadcast ([..., 2] and
    [...]); a goal (``yaw_obj`` None) gets orientation 0. The one definition used by the
    training labels (bearing_data), the flights' error metrics (episode) and the tests.
    """
    rel = to_body(np.asarray(yaw_own, dtype=float), np.asarray(pos_obj, dtype=float) - np.asarray(pos_own, dtype=float))
    if yaw_obj is None:
        rel_yaw = np.zeros(np.shape(rel)[:-1])
    else:
        rel_yaw = np.angle(np.exp(1j * (np.asarray(yaw_obj, dtype=float) - np.asarray(yaw_own, dtype=float))))
    return rel, rel_yaw


def sample_separated(rng, n_envs, n_points, half_m, min_sep_m, tries=200):
    """Points uniform in [-half, half]^2 with pairwise separation >= min_sep (rejection per env); ValueError naming
    that square's side (2 half_m, m) when ``tries`` draws per point do not place them."""
    out = np.zeros((n_envs, n_points, 2))
    for e in range(n_envs):
        pts = []
        for _ in range(tries * n_points):
            p = rng.uniform(-half_m, half_m, 2)
            if all(np.hypot(*(p - q)) >= min_sep_m for q in pts):
                pts.append(p)
                if len(pts) == n_points:
                    break
        if len(pts) < n_points:
            raise ValueError("cannot place %d points %.2f m apart in a %.2f m square" % (n_points, min_sep_m, 2 * half_m))
        out[e] = pts
    return out


def setpoints_after(cmd_body, actions, dt_s, accel_mps2, max_speed_mps):
    """Vectorised onboard.swarm.actions.update_setpoint: body setpoints [..., 2] after holding actions [...]."""
    slow = actions == SLOW_DOWN
    dirs = DIRS[np.where(slow, 0, actions)]
    cmd = cmd_body + accel_mps2 * dt_s * dirs
    sp = np.hypot(cmd[..., 0], cmd[..., 1])
    cmd = cmd * np.where(sp > max_speed_mps, max_speed_mps / np.maximum(sp, 1e-300), 1.0)[..., None]
    sp0 = np.hypot(cmd_body[..., 0], cmd_body[..., 1])
    shrink = np.where(sp0 <= accel_mps2 * dt_s, 0.0, (sp0 - accel_mps2 * dt_s) / np.maximum(sp0, 1e-300))
    return np.where(slow[..., None], cmd_body * shrink[..., None], cmd)


class SwarmBatch:
    """n_envs arenas x n_drones drones; step(actions) advances one policy period."""

    def __init__(self, n_envs, n_drones, rng, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "swarm arena")
        if n_drones < 2:
            raise ValueError("a swarm needs >= 2 drones")
        self.cfg = cfg
        self.rng = rng
        self.B = n_envs
        self.M = n_drones
        self.dt_s = cfg["physics_dt_s"] * cfg["frame_skip"]
        self.reset()

    # ------------------------------------------------------------------ set-up
    def reset(self):
        c = self.cfg
        half = c["arena_m"] / 2.0
        self.pos = sample_separated(self.rng, self.B, self.M, half * 0.9, c["start_separation_m"])
        self.goal = sample_separated(self.rng, self.B, self.M, half * 0.9, c["goal_separation_m"])
        self.yaw = self.rng.uniform(-math.pi, math.pi, (self.B, self.M))
        self.vel = np.zeros((self.B, self.M, 2))           # world
        self.cmd_body = np.zeros((self.B, self.M, 2))      # velocity setpoint, body
        self.reached = np.zeros((self.B, self.M), dtype=bool)
        self.goals_reached = np.zeros((self.B, self.M), dtype=int)
        self.min_sep = np.full(self.B, np.inf)
        self.t_s = 0.0

    def new_goals(self, mask):
        """Fresh random goals for the drones in mask [B, M] (random-goal mode)."""
        half = self.cfg["arena_m"] / 2.0 * 0.9
        n = int(mask.sum())
        if n:
            self.goal[mask] = self.rng.uniform(-half, half, (n, 2))
            self.reached[mask] = False

    # ------------------------------------------------------------------ geometry
    def pair_dist(self):
        d = self.pos[:, :, None, :] - self.pos[:, None, :, :]
        dist = np.hypot(d[..., 0], d[..., 1])
        idx = np.arange(self.M)
        dist[:, idx, idx] = np.inf
        return dist

    def goal_dist(self):
        g = self.goal - self.pos
        return np.hypot(g[..., 0], g[..., 1])

    def rel_body(self, target_world):
        """Target positions [B, M, 2] in each drone's body frame."""
        return to_body(self.yaw, target_world - self.pos)

    def nearest(self):
        """Index [B, M] of each drone's nearest neighbour and that distance."""
        dist = self.pair_dist()
        j = dist.argmin(-1)
        return j, np.take_along_axis(dist, j[..., None], -1)[..., 0]

    def vel_body(self):
        return to_body(self.yaw, self.vel)

    # ------------------------------------------------------------------ observations
    def dqn_obs(self, est_noise_m=0.0, vel_noise=True):
        """DQN input per drone [B, M, 7]: (vx, vy, dx, dy, ox, oy, dt), pocket IV-C, body frame.

        Goal and nearest neighbour relative positions are the truth plus est_noise_m white
        noise (standing in for the estimator's error during training).
        """
        c = self.cfg
        v = self.vel_body()
        if vel_noise:
            v = v + self.rng.normal(0.0, c["vel_noise_mps"], v.shape)
        g = self.rel_body(self.goal)
        j, _ = self.nearest()
        o_world = np.take_along_axis(self.pos, j[..., None].repeat(2, -1), 1)
        o = self.rel_body(o_world)
        if est_noise_m > 0.0:
            g = g + self.rng.normal(0.0, est_noise_m, g.shape)
            o = o + self.rng.normal(0.0, est_noise_m, o.shape)
        o = clip_length(o, c["obstacle_clip_m"])
        dt = np.full(v.shape[:-1] + (1,), self.dt_s)
        return np.concatenate([v, g, o, dt], -1)

    def reward(self):
        """pocket eq. 4: -d1 (goal distance / goal_scale_m, default the arena side) plus (d2 - c) / c when the
        nearest drone is closer than c."""
        c = self.cfg["critical_distance_m"]
        d1 = self.goal_dist() / (self.cfg["goal_scale_m"] or self.cfg["arena_m"])
        _, d2 = self.nearest()
        return -d1 + np.where(d2 < c, (d2 - c) / c, 0.0)

    # ------------------------------------------------------------------ dynamics
    def step(self, actions):
        """Hold actions [B, M] (ints 0..8) for one policy period; returns the eq. 4 reward [B, M].

        The setpoint is updated once per period (as the onboard agent does,
        onboard.swarm.actions.update_setpoint with dt = the period) and then tracked.
        """
        c = self.cfg
        a = np.asarray(actions)
        if (a.shape != (self.B, self.M) or not np.issubdtype(a.dtype, np.integer) or a.min() < 0
                or a.max() >= N_ACTIONS):
            raise ValueError("actions must be ints 0..8 of shape %r" % ((self.B, self.M),))
        self.cmd_body = setpoints_after(self.cmd_body, a, self.dt_s, c["accel_mps2"], c["max_speed_mps"])
        return self.step_setpoints(self.cmd_body)

    def step_setpoints(self, cmd_body):
        """Track body-frame velocity setpoints [B, M, 2] (m/s) for one policy period; returns the eq. 4 reward.
        Setpoints of another size or not finite raise ValueError and change nothing."""
        c = self.cfg
        cmd = np.asarray(cmd_body, dtype=float)
        if cmd.size != self.B * self.M * 2 or not np.all(np.isfinite(cmd)):
            raise ValueError("setpoints must be %d x %d x 2 finite numbers (m/s), got %r" % (self.B, self.M, cmd_body))
        self.cmd_body = cmd.reshape(self.B, self.M, 2)
        dt = c["physics_dt_s"]
        half = c["arena_m"] / 2.0 + c["wall_margin_m"]
        lag = 1.0 - math.exp(-dt / c["vel_time_constant_s"])
        target = to_world(self.yaw, self.cmd_body)
        for _ in range(c["frame_skip"]):
            # first-order velocity response with an acceleration limit (drone2d velocity mode)
            dv = lag * (target - self.vel)
            dvn = np.hypot(dv[..., 0], dv[..., 1])
            lim = c["max_accel_mps2"] * dt
            dv = dv * np.where(dvn > lim, lim / np.maximum(dvn, 1e-12), 1.0)[..., None]
            v_new = self.vel + dv
            sp = np.hypot(v_new[..., 0], v_new[..., 1])
            v_new = v_new * np.where(sp > c["max_speed_mps"], c["max_speed_mps"] / np.maximum(sp, 1e-12), 1.0)[..., None]
            self.pos = self.pos + 0.5 * (self.vel + v_new) * dt
            self.vel = v_new
            out = np.abs(self.pos) > half
            if out.any():
                self.pos = np.clip(self.pos, -half, half)
                self.vel = np.where(out, 0.0, self.vel)
            self.min_sep = np.minimum(self.min_sep, self.pair_dist().min(axis=(1, 2)))
        self.t_s += self.dt_s
        newly = (self.goal_dist() < c["goal_radius_m"]) & ~self.reached
        self.goals_reached += newly
        self.reached |= newly
        return self.reward()

    # ------------------------------------------------------------------ ranging
    def ranges(self):
        """UWB ranges [B, M, M] with pocket III-A noise (diagonal inf)."""
        c = self.cfg
        d = self.pair_dist()
        noisy = d + self.rng.normal(c["range_bias_m"], c["range_sigma_m"], d.shape)
        return np.abs(noisy)
