"""2-D pocket drone at a fixed flight height: ground truth for the Crazyflie and swarm scenarios.

The pocket-drone paper trains and flies in a plane: "a simple 2D python simulator with
simple inertia" where the drone's speed "is capped at 1 m/s" and the actions are fixed
accelerations in eight directions at 45 deg or "slow down" (uwb-pocket-drones sec. IV).
This model gives both inputs:

* ``command_velocity(vel_north_mps, vel_east_mps, yaw_rate_radps)``: what the Crazyflie's
  velocity controller does with a velocity setpoint - the velocity follows the target
  with a first-order lag ``vel_time_constant_s`` (inertia), each step's change limited
  by ``max_accel_mps2``;
* ``command_accel(acc_north_mps2, acc_east_mps2)``: the paper's acceleration actions,
  integrated directly (still limited by ``max_accel_mps2``).

Either way the horizontal speed is capped at ``max_speed_mps``. Height is a separate
simple model: a height target followed with a first-order lag and a climb-rate limit
(take-off / hover / land), or a climb-rate command, or motors off (the drone sinks at
``fall_speed_mps`` and stops on the ground). On the ground (height <= ``ground_eps_m``)
the drone does not move horizontally.

Frames follow CONVENTIONS.md: NED plane, ``north_m``/``east_m``, yaw from north
towards east; height is positive up (``height_m = -down``). ``battery_v`` drains
linearly with airborne time (a stand-in for pm.vbat, not a battery model).
Time is passed in: ``step(dt_s)``; the model reads no clock.
"""
import math
import numbers

from onboard.core.settings import ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, pair

DEFAULTS = {
    "max_speed_mps": 1.0,            # paper: speed capped at 1 m/s
    "max_accel_mps2": 2.0,
    "vel_time_constant_s": 0.2,      # first-order velocity response (inertia)
    "yaw_time_constant_s": 0.1,
    "max_yaw_rate_radps": math.radians(200.0),
    "height_time_constant_s": 0.3,
    "max_climb_mps": 1.0,
    "fall_speed_mps": 2.0,
    "ground_eps_m": 0.02,
    "battery_full_v": 4.15,
    "battery_drain_vps": 1.0 / 420.0,  # about 1 V per 7 min of flight
    "battery_empty_v": 3.0,
    "start_ne_m": [0.0, 0.0],
    "start_yaw_deg": 0.0,
    "start_height_m": 0.0,
}
SETTING_RANGES = dict({key: POSITIVE for key in ("max_speed_mps", "max_accel_mps2", "vel_time_constant_s",
                                                 "yaw_time_constant_s", "max_yaw_rate_radps", "height_time_constant_s",
                                                 "max_climb_mps", "fall_speed_mps", "battery_full_v")},
                      ground_eps_m=NON_NEGATIVE, battery_drain_vps=NON_NEGATIVE, battery_empty_v=NON_NEGATIVE,
                      start_ne_m=pair(ANY_NUMBER), start_yaw_deg=ANY_NUMBER, start_height_m=NON_NEGATIVE)

# Modes of the horizontal and vertical inputs (what the last command was).
H_VELOCITY = "velocity"
H_ACCEL = "accel"
V_HEIGHT = "height"
V_CLIMB = "climb"
V_MOTORS_OFF = "motors_off"


def _finite(*values):
    """True when every value is a finite real number (int, float or a numpy scalar) within the floats, not a
    bool."""
    for v in values:
        if isinstance(v, float):
            if not math.isfinite(v):
                return False
        elif isinstance(v, bool) or not isinstance(v, numbers.Real):
            return False
        else:
            try:
                if not math.isfinite(v):
                    return False
            except OverflowError:           # an int beyond the floats
                return False
    return True


class Drone2D:
    """Planar drone with inertia and a speed cap, plus a take-off/land height model."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "Drone2D")
        self.cfg = cfg
        self.north_m = float(cfg["start_ne_m"][0])
        self.east_m = float(cfg["start_ne_m"][1])
        self.yaw_rad = math.radians(cfg["start_yaw_deg"])
        self.height_m = float(cfg["start_height_m"])
        self.vel_north_mps = 0.0
        self.vel_east_mps = 0.0
        self.yaw_rate_radps = 0.0
        self.climb_mps = 0.0
        self.acc_north_mps2 = 0.0
        self.acc_east_mps2 = 0.0
        self.battery_v = float(cfg["battery_full_v"])
        self.h_mode = H_VELOCITY
        self.v_mode = V_MOTORS_OFF if self.height_m <= cfg["ground_eps_m"] else V_HEIGHT
        self.cmd_vel_ne_mps = (0.0, 0.0)
        self.cmd_acc_ne_mps2 = (0.0, 0.0)
        self.cmd_yaw_rate_radps = 0.0
        self.cmd_height_m = self.height_m
        self.cmd_climb_mps = 0.0
        self.rejected_commands = 0
        self.distance_m = 0.0
        self.airborne_s = 0.0
        self._lag_dt_s = None            # the step length the first-order factors below are for
        self._lag = None                 # (velocity, yaw-rate, height) 1 - exp(-dt / tau)

    # ---- inputs -----------------------------------------------------------------------
    def command_velocity(self, vel_north_mps, vel_east_mps, yaw_rate_radps=0.0):
        """Horizontal velocity target (m/s, NED) and yaw rate (rad/s); non-finite input is rejected."""
        if not _finite(vel_north_mps, vel_east_mps, yaw_rate_radps):
            self.rejected_commands += 1
            return False
        self.h_mode = H_VELOCITY
        self.cmd_vel_ne_mps = (float(vel_north_mps), float(vel_east_mps))
        self.cmd_yaw_rate_radps = float(yaw_rate_radps)
        return True

    def command_accel(self, acc_north_mps2, acc_east_mps2, yaw_rate_radps=0.0):
        """Horizontal acceleration command (m/s^2, NED), the paper's discrete actions."""
        if not _finite(acc_north_mps2, acc_east_mps2, yaw_rate_radps):
            self.rejected_commands += 1
            return False
        self.h_mode = H_ACCEL
        self.cmd_acc_ne_mps2 = (float(acc_north_mps2), float(acc_east_mps2))
        self.cmd_yaw_rate_radps = float(yaw_rate_radps)
        return True

    def command_height(self, height_m):
        """Height target (m above ground, positive up); 0 lands and then stops the motors."""
        if not _finite(height_m):
            self.rejected_commands += 1
            return False
        self.v_mode = V_HEIGHT
        self.cmd_height_m = max(0.0, float(height_m))
        return True

    def command_climb(self, climb_mps):
        """Vertical speed command (m/s, positive up)."""
        if not _finite(climb_mps):
            self.rejected_commands += 1
            return False
        self.v_mode = V_CLIMB
        self.cmd_climb_mps = float(climb_mps)
        return True

    def motors_off(self):
        """Motors stop: horizontal command drops to zero and the drone sinks to the ground."""
        self.v_mode = V_MOTORS_OFF
        self.h_mode = H_VELOCITY
        self.cmd_vel_ne_mps = (0.0, 0.0)
        self.cmd_yaw_rate_radps = 0.0

    # ---- state ------------------------------------------------------------------------
    @property
    def airborne(self):
        return self.height_m > self.cfg["ground_eps_m"]

    @property
    def motors_on(self):
        return self.v_mode != V_MOTORS_OFF

    def speed_mps(self):
        return math.hypot(self.vel_north_mps, self.vel_east_mps)

    def pos_ned_m(self):
        return (self.north_m, self.east_m, -self.height_m)

    def vel_ned_mps(self):
        return (self.vel_north_mps, self.vel_east_mps, -self.climb_mps)

    # ---- physics ----------------------------------------------------------------------
    def _lag_factors(self, dt_s):
        """(velocity, yaw rate, height) first-order factors 1 - exp(-dt_s / tau), kept for the last step
        length (the physics steps at one dt nearly always)."""
        if dt_s != self._lag_dt_s:
            cfg = self.cfg
            self._lag = (1.0 - math.exp(-dt_s / cfg["vel_time_constant_s"]),
                         1.0 - math.exp(-dt_s / cfg["yaw_time_constant_s"]),
                         1.0 - math.exp(-dt_s / cfg["height_time_constant_s"]))
            self._lag_dt_s = dt_s
        return self._lag

    def step(self, dt_s):
        """Advance dt_s seconds (exact first-order responses, then limits); 0 does nothing. ValueError for a
        negative, NaN or infinite dt_s, the state unchanged."""
        if dt_s == 0:
            return
        if not 0.0 < dt_s < math.inf:
            raise ValueError("Drone2D.step: dt_s must be a finite number of seconds >= 0, got %r" % (dt_s,))
        cfg = self.cfg
        lag_vel, lag_yaw, lag_height = self._lag_factors(dt_s)
        self._step_vertical(dt_s, lag_height)
        vn0, ve0 = self.vel_north_mps, self.vel_east_mps
        if self.airborne and self.motors_on:
            if self.h_mode == H_VELOCITY:
                dvn = lag_vel * (self.cmd_vel_ne_mps[0] - vn0)
                dve = lag_vel * (self.cmd_vel_ne_mps[1] - ve0)
            else:
                dvn = self.cmd_acc_ne_mps2[0] * dt_s
                dve = self.cmd_acc_ne_mps2[1] * dt_s
            dv = math.hypot(dvn, dve)
            dv_max = cfg["max_accel_mps2"] * dt_s
            if dv > dv_max:
                dvn *= dv_max / dv
                dve *= dv_max / dv
            vn, ve = vn0 + dvn, ve0 + dve
            speed = math.hypot(vn, ve)
            if speed > cfg["max_speed_mps"]:
                vn *= cfg["max_speed_mps"] / speed
                ve *= cfg["max_speed_mps"] / speed
            lim = cfg["max_yaw_rate_radps"]
            yaw_cmd = max(-lim, min(lim, self.cmd_yaw_rate_radps))
            self.yaw_rate_radps += lag_yaw * (yaw_cmd - self.yaw_rate_radps)
        elif self.airborne:
            # motors off in the air: no horizontal control, drag bleeds off the speed
            vn, ve = vn0 - lag_vel * vn0, ve0 - lag_vel * ve0
            self.yaw_rate_radps = 0.0
        else:
            vn, ve = 0.0, 0.0
            self.yaw_rate_radps = 0.0
        self.acc_north_mps2 = (vn - vn0) / dt_s
        self.acc_east_mps2 = (ve - ve0) / dt_s
        # trapezoidal position update
        dn = 0.5 * (vn0 + vn) * dt_s
        de = 0.5 * (ve0 + ve) * dt_s
        self.north_m += dn
        self.east_m += de
        self.distance_m += math.hypot(dn, de)
        self.vel_north_mps, self.vel_east_mps = vn, ve
        self.yaw_rad = math.atan2(math.sin(self.yaw_rad + self.yaw_rate_radps * dt_s),
                                  math.cos(self.yaw_rad + self.yaw_rate_radps * dt_s))
        if self.airborne:
            self.airborne_s += dt_s
            self.battery_v = max(cfg["battery_empty_v"], self.battery_v - cfg["battery_drain_vps"] * dt_s)

    def _step_vertical(self, dt_s, lag_height):
        cfg = self.cfg
        h0 = self.height_m
        if self.v_mode == V_HEIGHT:
            dh = lag_height * (self.cmd_height_m - h0)
            dh_max = cfg["max_climb_mps"] * dt_s
            dh = max(-dh_max, min(dh_max, dh))
            h = h0 + dh
            if self.cmd_height_m <= 0.0 and h <= cfg["ground_eps_m"]:
                h = 0.0
                self.v_mode = V_MOTORS_OFF      # landed: motors stop
        elif self.v_mode == V_CLIMB:
            c = max(-cfg["max_climb_mps"], min(cfg["max_climb_mps"], self.cmd_climb_mps))
            h = h0 + c * dt_s
        else:
            h = h0 - cfg["fall_speed_mps"] * dt_s
        h = max(0.0, h)
        self.climb_mps = (h - h0) / dt_s
        self.height_m = h
