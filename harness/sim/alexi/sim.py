"""The Alexi 2-D surrogate simulator (Cook thesis 6.1, 6.3): the learned networks replace the physics.

Each frame (``frame_dt_us``):

1. the command (desired speed l in m/s, yaw rate in rad/s, NED) becomes sprocket speeds by the skid-steer
   kinematics of thesis 5.1.2 (:func:`onboard.control.diffdrive.wheel_speeds`) followed by the vehicle's
   first-order motor lag ``motor_tau_s`` (the motors, not the ground: the networks learn the ground); a
   command holding NaN or inf is rejected (the sprocket commands held stay; counted in ``rejected_commands``);
2. pitch and roll are read off the heightmap at the pose (thesis 6.1, :mod:`heightmap`);
3. the kinematic networks map (v_left, v_right, phi, psi) to v (m per frame, forward) and dtheta (rad per
   frame) -- or, in the three-network variant, to the world-frame dx, dy and dtheta with v = +-sqrt(dx^2 + dy^2)
   signed by the command (thesis 6.1);
4. the pose update of thesis 6.1: north += v cos(yaw), east += v sin(yaw), then yaw += dtheta (NED);
5. with a terrain network, its dh window (inputs: the kinematic inputs and the previous frame's dh) is added
   to the heightmap in the world-aligned window centred on the robot's cell at the frame's start (thesis
   6.3.1: h <- h + dh), wrapped around the tile.

Only the window and four height samples are touched per frame, so the frame time does not depend on the
terrain's size. ``render(ax)`` draws the 2-D view (heightmap, path, robot marker) for PNG frames.
"""
import math

import numpy as np

from harness.sim.alexi import heightmap as hm
from harness.sim.sandbox.terrain import wrap_into_tile
from onboard.control.diffdrive import wheel_speeds


def wrap_angle(a):
    return math.atan2(math.sin(a), math.cos(a))


class AlexiSim:
    """``heights_m`` (rows x cols, m; copied), ``cell_m``, start pose (north, east in m, yaw in rad),
    ``vehicle`` (track_length_m, track_gauge_m, sprocket_radius_m, max_sprocket_radps, motor_tau_s),
    ``kin``: {"speed": Net, "dyaw": Net} or {"dnorth": Net, "deast": Net, "dyaw": Net} (:mod:`nets`),
    ``terrain``: a terrain Net or None."""

    def __init__(self, heights_m, cell_m, north_m, east_m, yaw_rad, vehicle, kin, terrain=None, frame_dt_us=10000):
        self.h = np.array(heights_m, dtype=np.float64)
        if self.h.ndim != 2 or min(self.h.shape) < 2 or not np.all(np.isfinite(self.h)):
            raise ValueError("heights_m must be a 2-D grid of finite heights (m), at least 2 x 2, got shape %s%s"
                             % (self.h.shape, "" if np.all(np.isfinite(self.h)) else " holding NaN or inf"))
        if not all(math.isfinite(float(v)) for v in (cell_m, north_m, east_m, yaw_rad)) or float(cell_m) <= 0.0:
            raise ValueError("cell_m must be > 0 and the start pose finite, got cell %r m, north %r m, east %r m, "
                             "yaw %r rad" % (cell_m, north_m, east_m, yaw_rad))
        if int(frame_dt_us) <= 0 or float(vehicle["motor_tau_s"]) <= 0.0:
            raise ValueError("frame_dt_us and motor_tau_s must be > 0, got %r us, %r s"
                             % (frame_dt_us, vehicle["motor_tau_s"]))
        self.rows, self.cols = self.h.shape
        self.cell_m = float(cell_m)
        self.size_n_m, self.size_e_m = self.rows * self.cell_m, self.cols * self.cell_m
        self.north_m, self.east_m = wrap_into_tile(north_m, self.size_n_m), wrap_into_tile(east_m, self.size_e_m)
        self.yaw_rad = float(yaw_rad)
        self.unwrapped_ne_m = [float(north_m), float(east_m)]
        self.vehicle = dict(vehicle)
        self.r_pitch_m = 0.5 * float(vehicle["track_length_m"])
        self.r_roll_m = 0.5 * float(vehicle["track_gauge_m"])
        self.frame_dt_us = int(frame_dt_us)
        self.lag = 1.0 - math.exp(-self.frame_dt_us * 1e-6 / float(vehicle["motor_tau_s"]))
        self.left_radps = self.right_radps = 0.0
        self.cmd_left_radps = self.cmd_right_radps = self.cmd_speed_mps = 0.0
        self.rejected_commands = 0
        if not ("speed" in kin and "dyaw" in kin) and not all(k in kin for k in ("dnorth", "deast", "dyaw")):
            raise ValueError("kinematic networks must be {speed, dyaw} or {dnorth, deast, dyaw}, got %s" % sorted(kin))
        self.kin = kin
        self.three = "speed" not in kin
        self.terrain = terrain
        if terrain is not None:
            self.window = int(terrain.card["alexi"]["window_cells"])
            if self.window > min(self.rows, self.cols):
                # a window wrapping onto itself covers cells twice, and the index += keeps only one of their dh
                raise ValueError("the terrain net's %d-cell window is larger than the %d x %d heightmap"
                                 % (self.window, self.rows, self.cols))
            self.prev_dh = np.zeros((self.window, self.window))
            self.prev_centre = None
        self.now_us = 0
        self.frames = 0

    def _kin_predict(self, x):
        if not self.three:
            return float(self.kin["speed"].predict_one(x)[0]), float(self.kin["dyaw"].predict_one(x)[0])
        dn = float(self.kin["dnorth"].predict_one(x)[0])
        de = float(self.kin["deast"].predict_one(x)[0])
        return math.hypot(dn, de), float(self.kin["dyaw"].predict_one(x)[0])

    def _window_index(self, i, j):
        half = self.window // 2
        return (np.arange(self.window) - half + i) % self.rows, (np.arange(self.window) - half + j) % self.cols

    def frame(self, speed_mps, yaw_rate_radps):
        """Advance one frame; returns the frame's record (table 5.1 names: dx_body_m, dyaw_rad, left_radps,
        right_radps, pitch_start_rad, roll_start_rad, north_m, east_m, yaw_rad, teleport)."""
        v = self.vehicle
        lc, rc = wheel_speeds(speed_mps, yaw_rate_radps, v["track_gauge_m"], v["sprocket_radius_m"],
                              v["max_sprocket_radps"])
        if math.isfinite(lc) and math.isfinite(rc):
            self.cmd_left_radps, self.cmd_right_radps, self.cmd_speed_mps = lc, rc, float(speed_mps)
        else:
            self.rejected_commands += 1
        self.left_radps += self.lag * (self.cmd_left_radps - self.left_radps)
        self.right_radps += self.lag * (self.cmd_right_radps - self.right_radps)
        pitch, roll = hm.pitch_roll(self.h, self.cell_m, self.north_m, self.east_m, self.yaw_rad,
                                    self.r_pitch_m, self.r_roll_m)
        x = np.array([self.left_radps, self.right_radps, pitch, roll])
        ds_m, dyaw = self._kin_predict(x)
        if self.three and self.cmd_speed_mps < 0.0:
            ds_m = -ds_m               # thesis 6.1: v is multiplied by -1 when the desired speed is negative
        if self.terrain is not None:
            self._deform(x)
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        dn, de = ds_m * c, ds_m * s
        self.unwrapped_ne_m[0] += dn
        self.unwrapped_ne_m[1] += de
        n, e = self.north_m + dn, self.east_m + de
        teleport = not (0.0 <= n < self.size_n_m and 0.0 <= e < self.size_e_m)
        self.north_m, self.east_m = wrap_into_tile(n, self.size_n_m), wrap_into_tile(e, self.size_e_m)
        self.yaw_rad = wrap_angle(self.yaw_rad + dyaw)
        self.now_us += self.frame_dt_us
        self.frames += 1
        return {"dx_body_m": ds_m, "dyaw_rad": dyaw, "left_radps": self.left_radps, "right_radps": self.right_radps,
                "pitch_start_rad": pitch, "roll_start_rad": roll, "north_m": self.north_m, "east_m": self.east_m,
                "yaw_rad": self.yaw_rad, "teleport": teleport}

    def _deform(self, x):
        i = int(math.floor(self.north_m / self.cell_m)) % self.rows
        j = int(math.floor(self.east_m / self.cell_m)) % self.cols
        prev = self.prev_dh
        if self.prev_centre is not None and (i, j) != self.prev_centre:
            prev = _shifted(prev, i - self.prev_centre[0], j - self.prev_centre[1], self.rows, self.cols)
        dh = self.terrain.predict_one(np.concatenate([x, prev.ravel()])).reshape(self.window, self.window)
        rows, cols = self._window_index(i, j)
        self.h[np.ix_(rows, cols)] += dh
        self.prev_dh = dh
        self.prev_centre = (i, j)
        self.last_dh = dh

    def render(self, ax, path_ne=None, title="Alexi"):
        """Draw the heightmap (mm), the path and the robot (a triangle pointing along the heading) on ``ax``."""
        extent = (0.0, self.size_e_m, 0.0, self.size_n_m)
        im = ax.imshow(self.h * 1000.0, origin="lower", cmap="terrain", extent=extent)
        ax.figure.colorbar(im, ax=ax).set_label("height (mm)")
        if path_ne is not None and len(path_ne):
            p = np.asarray(path_ne)
            ax.plot(p[:, 1], p[:, 0], ",", color="k", label="path")
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        L = self.r_pitch_m
        tri = np.array([[self.north_m + L * c, self.east_m + L * s],
                        [self.north_m - 0.6 * L * c - 0.6 * L * s, self.east_m - 0.6 * L * s + 0.6 * L * c],
                        [self.north_m - 0.6 * L * c + 0.6 * L * s, self.east_m - 0.6 * L * s - 0.6 * L * c]])
        ax.fill(tri[:, 1], tri[:, 0], color="C3", label="robot")
        ax.set_title(title)
        ax.set_xlabel("east (m)")
        ax.set_ylabel("north (m)")
        ax.legend(fontsize="small")


def _shifted(prev, di, dj, rows, cols):
    """The previous window seen from a window whose centre moved by (di, dj) cells (zeros where unseen)."""
    if di > rows // 2:
        di -= rows
    elif di < -rows // 2:
        di += rows
    if dj > cols // 2:
        dj -= cols
    elif dj < -cols // 2:
        dj += cols
    w = prev.shape[0]
    out = np.zeros_like(prev)
    if abs(di) >= w or abs(dj) >= w:
        return out
    r0, r1 = max(0, di), min(w, w + di)
    c0, c1 = max(0, dj), min(w, w + dj)
    out[r0 - di:r1 - di, c0 - dj:c1 - dj] = prev[r0:r1, c0:c1]
    return out
