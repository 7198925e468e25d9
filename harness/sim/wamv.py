"""Simulated WAM-V: the truth surface vessel of the boat scenarios (two outboards, skid steer).

Two modes (``mode``):

``rich`` (default): a 3-DOF (surge, sway, yaw) manoeuvring model in Fossen's vectorial form, richer
than the onboard model so that fitting that model is no inverse crime,

    M nu_r' + C(nu_r) nu_r + D(nu_r) nu_r = tau_thrust + tau_wind + tau_wave,   eta' = R(yaw) nu,

with nu = (u, v, r) the body velocity over ground (FRD), nu_r = nu - nu_c relative to a constant,
irrotational current nu_c (so M_RB nu' + C_RB(nu) nu = M_RB nu_r' + C_RB(nu_r) nu_r), M = M_RB + M_A
(rigid body plus added mass a_u, a_v, a_r), C the rigid-body plus added-mass Coriolis matrices (their
yaw row gives the Munk moment (a_v - a_u) u_r v_r), D linear plus quadratic damping per axis. Thrust
enters as X = T_l + T_r, N = arm (T_l - T_r). Each thruster: a dead band on the command, a first-order
lag of the shaft, the static curve of ``onboard.vessel.thrust_map`` (the VRX WAM-V table) times a
per-side efficiency. Wind: mean speed plus a first-order Gauss-Markov gust, Fossen's coefficient
model on the relative wind (X ~ -c_x cos g, Y ~ c_y sin g, N ~ c_n sin 2g). Waves: a sum of seeded
sinusoids around a peak period, a force along the wave direction and a yaw moment ~ sin 2(beta - yaw).
Integrated by RK4 at ``dt_s``.

``paper``: robotx eqs. 1-6 exactly as ``onboard.vessel.model.step`` with the constants of ``paper``,
the thrusters exactly ``onboard.vessel.thrust_map.ThrustMap`` (lag and table of ``thrusters``; no dead
band, efficiency 1), no wind, current or waves, plus optional additive process noise
w ~ N(0, diag(noise^2) dt) per step (``paper.noise``; 0 by default): the same model with the same
noise as the boat EKF's process model, for consistency (NEES/NIS) tests and the fit's recovery test.

State and frames: NED, FRD, yaw from north towards east, yaw rate + turning right; ``state()`` gives
the onboard model's slots (yaw, yaw rate, north, east, surge, sway over ground). Randomness comes from
one ``numpy.random.Generator`` (``harness.sim.rng.RunRandom(seed).stream("wamv")``).
"""
import math

import numpy as np

from onboard.core.angles import wrap_pi
from onboard.core.settings import (ANY_NUMBER, NON_NEGATIVE, POSITIVE, checked, int_at_least, is_number, one_of,
                                   under, within)
from onboard.core.units import is_whole_us
from onboard.vessel import model as vm
from onboard.vessel import thrust_map as tm

MODES = ("rich", "paper")
AIR_DENSITY_KGPM3 = 1.225

DEFAULTS = {
    "mode": "rich",
    "dt_s": 0.01,
    "start": {"north_m": 0.0, "east_m": 0.0, "yaw_deg": 0.0, "yaw_rate_dps": 0.0, "surge_mps": 0.0,
              "sway_mps": 0.0},
    # paper mode: robotx eqs. 1-6 with these constants, additive noise densities per state (1 sigma / sqrt(s))
    "paper": dict(vm.DEFAULTS, noise={"yaw_rad_per_sqrt_s": 0.0, "yaw_rate_radps_per_sqrt_s": 0.0,
                                      "pos_m_per_sqrt_s": 0.0, "surge_mps_per_sqrt_s": 0.0,
                                      "sway_mps_per_sqrt_s": 0.0}),
    # rich mode hull: VRX WAM-V mass, inertia, surge and yaw damping; sway damping and added mass chosen for a
    # twin-hull boat that holds a straight course (Munk moment (a_v - a_u) U^2 (m + a_u) / Y_v below N_r at 2.3 m/s)
    "hull": {
        "mass_kg": 180.0,
        "yaw_inertia_kgm2": 446.0,
        "added_mass_surge_kg": 9.0,
        "added_mass_sway_kg": 36.0,
        "added_inertia_yaw_kgm2": 150.0,
        "surge_drag_lin_n_per_mps": 51.3,
        "surge_drag_quad_n_per_mps2": 72.4,
        "sway_drag_lin_n_per_mps": 100.0,
        "sway_drag_quad_n_per_mps2": 100.0,
        "yaw_drag_lin_nm_per_radps": 400.0,
        "yaw_drag_quad_nm_per_radps2": 100.0,
    },
    # the two outboards: lag and curve as the onboard thrust map (paper mode uses exactly that);
    # rich mode adds a dead band on |command| and a per-side efficiency
    "thrusters": dict(tm.DEFAULTS, arm_m=1.027, dead_band=0.03, efficiency_left=0.97, efficiency_right=1.03,
                      lag_tau_s=0.4),
    "wind": {"speed_mps": 2.0, "from_deg": 45.0, "gust_sigma_mps": 0.5, "gust_tau_s": 5.0,
             "frontal_area_m2": 1.5, "lateral_area_m2": 3.0, "length_m": 4.9, "cx": 0.6, "cy": 0.8, "cn": 0.08},
    "current": {"speed_mps": 0.1, "to_deg": 90.0},
    "waves": {"force_n": 8.0, "moment_nm": 6.0, "period_s": 3.0, "from_deg": 30.0, "components": 6,
              "spread": 0.3},
}
SETTING_RANGES = {
    "mode": one_of(*MODES),
    # the vessel's clock counts whole microseconds (time_us += dt_us): a step of a fraction of one would make the
    # clock (and the waves read at it) drift from the integrated motion
    "dt_s": ("a number in [0.0001, 0.1] of whole microseconds",
             lambda v: is_number(v) and 1e-4 <= v <= 0.1 and is_whole_us(v)),
    "start.north_m": ANY_NUMBER, "start.east_m": ANY_NUMBER, "start.yaw_deg": ANY_NUMBER,
    "start.yaw_rate_dps": ANY_NUMBER, "start.surge_mps": ANY_NUMBER, "start.sway_mps": ANY_NUMBER,
    "paper.noise.yaw_rad_per_sqrt_s": NON_NEGATIVE, "paper.noise.yaw_rate_radps_per_sqrt_s": NON_NEGATIVE,
    "paper.noise.pos_m_per_sqrt_s": NON_NEGATIVE, "paper.noise.surge_mps_per_sqrt_s": NON_NEGATIVE,
    "paper.noise.sway_mps_per_sqrt_s": NON_NEGATIVE,
    "hull.mass_kg": POSITIVE, "hull.yaw_inertia_kgm2": POSITIVE,
    "hull.added_mass_surge_kg": NON_NEGATIVE, "hull.added_mass_sway_kg": NON_NEGATIVE,
    "hull.added_inertia_yaw_kgm2": NON_NEGATIVE,
    "hull.surge_drag_lin_n_per_mps": NON_NEGATIVE, "hull.surge_drag_quad_n_per_mps2": NON_NEGATIVE,
    "hull.sway_drag_lin_n_per_mps": NON_NEGATIVE, "hull.sway_drag_quad_n_per_mps2": NON_NEGATIVE,
    "hull.yaw_drag_lin_nm_per_radps": NON_NEGATIVE, "hull.yaw_drag_quad_nm_per_radps2": NON_NEGATIVE,
    "thrusters.arm_m": POSITIVE, "thrusters.dead_band": within(0.0, 0.5),
    "thrusters.efficiency_left": within(0.1, 2.0), "thrusters.efficiency_right": within(0.1, 2.0),
    "wind.speed_mps": NON_NEGATIVE, "wind.from_deg": ANY_NUMBER, "wind.gust_sigma_mps": NON_NEGATIVE,
    "wind.gust_tau_s": POSITIVE, "wind.frontal_area_m2": NON_NEGATIVE, "wind.lateral_area_m2": NON_NEGATIVE,
    "wind.length_m": POSITIVE, "wind.cx": NON_NEGATIVE, "wind.cy": NON_NEGATIVE, "wind.cn": ANY_NUMBER,
    "current.speed_mps": NON_NEGATIVE, "current.to_deg": ANY_NUMBER,
    "waves.force_n": NON_NEGATIVE, "waves.moment_nm": NON_NEGATIVE, "waves.period_s": POSITIVE,
    "waves.from_deg": ANY_NUMBER, "waves.components": int_at_least(1), "waves.spread": within(0.0, 0.9),
}
SETTING_RANGES.update(under("paper", vm.SETTING_RANGES))
SETTING_RANGES.update(under("thrusters", tm.SETTING_RANGES))

_NOISE_KEYS = ((vm.YAW, "yaw_rad_per_sqrt_s"), (vm.YAW_RATE, "yaw_rate_radps_per_sqrt_s"),
               (vm.NORTH, "pos_m_per_sqrt_s"), (vm.EAST, "pos_m_per_sqrt_s"),
               (vm.SURGE, "surge_mps_per_sqrt_s"), (vm.SWAY, "sway_mps_per_sqrt_s"))


def thrust_map_settings(thrusters):
    """The ``onboard.vessel.thrust_map`` settings inside a ``thrusters`` block."""
    return {k: thrusters[k] for k in tm.DEFAULTS}


class Wamv:
    """The truth vessel (module docstring). ``settings``: overrides of DEFAULTS; ``rng``: a numpy Generator."""

    def __init__(self, settings=None, rng=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, settings, "wamv")
        self.cfg = cfg
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.mode = cfg["mode"]
        self.dt_s = cfg["dt_s"]
        self.dt_us = int(round(self.dt_s * 1e6))
        self.time_us = 0
        st = cfg["start"]
        s = [0.0] * vm.N_STATE
        s[vm.YAW] = wrap_pi(math.radians(st["yaw_deg"]))
        s[vm.YAW_RATE] = math.radians(st["yaw_rate_dps"])
        s[vm.NORTH] = st["north_m"]
        s[vm.EAST] = st["east_m"]
        s[vm.SURGE] = st["surge_mps"]
        s[vm.SWAY] = st["sway_mps"]
        self.params = [cfg["paper"][name] for name in vm.PARAM_NAMES]
        self.noise_sigma = [0.0] * vm.N_STATE
        for slot, key in _NOISE_KEYS:
            self.noise_sigma[slot] = cfg["paper"]["noise"][key] * math.sqrt(self.dt_s)
        thr = cfg["thrusters"]
        self.thrust_map = tm.ThrustMap(thrust_map_settings(thr), "wamv thrusters")
        self.command_lr = [0.0, 0.0]
        self.rejected_commands = 0
        self.applied_thrust_n = (0.0, 0.0)
        # rich mode: current (NED, towards), wind gust state, wave components
        cur = cfg["current"]
        self.current_ned_mps = (cur["speed_mps"] * math.cos(math.radians(cur["to_deg"])),
                                cur["speed_mps"] * math.sin(math.radians(cur["to_deg"])))
        self.gust_mps = 0.0
        wv = cfg["waves"]
        n = wv["components"]
        w_peak = 2.0 * math.pi / wv["period_s"]
        self.wave_freq_radps = [w_peak * (1.0 + wv["spread"] * ((2.0 * i / (n - 1) - 1.0) if n > 1 else 0.0))
                                for i in range(n)]
        self.wave_phase_rad = [float(p) for p in self.rng.uniform(0.0, 2.0 * math.pi, n)]
        self.wave_phase2_rad = [float(p) for p in self.rng.uniform(0.0, 2.0 * math.pi, n)]
        self.wave_gain = math.sqrt(2.0 / n)
        # rich mode constants, looked up once: (arm, m + a_u, m + a_v, a_v - a_u, I_z + a_r, damping X, Y, N)
        h = cfg["hull"]
        m = h["mass_kg"]
        self._hull = (thr["arm_m"], m + h["added_mass_surge_kg"], m + h["added_mass_sway_kg"],
                      h["added_mass_sway_kg"] - h["added_mass_surge_kg"],
                      h["yaw_inertia_kgm2"] + h["added_inertia_yaw_kgm2"],
                      h["surge_drag_lin_n_per_mps"], h["surge_drag_quad_n_per_mps2"],
                      h["sway_drag_lin_n_per_mps"], h["sway_drag_quad_n_per_mps2"],
                      h["yaw_drag_lin_nm_per_radps"], h["yaw_drag_quad_nm_per_radps2"])
        self._wind = cfg["wind"]
        if cfg["wind"]["gust_sigma_mps"] > 0.0:
            a = math.exp(-self.dt_s / cfg["wind"]["gust_tau_s"])
            self._gust_gain = (a, cfg["wind"]["gust_sigma_mps"] * math.sqrt(1.0 - a * a))
        else:
            self._gust_gain = None
        self._wind_from_cos = math.cos(math.radians(cfg["wind"]["from_deg"]))
        self._wind_from_sin = math.sin(math.radians(cfg["wind"]["from_deg"]))
        self._waves_on = wv["force_n"] > 0.0 or wv["moment_nm"] > 0.0
        self._waves_from_rad = math.radians(wv["from_deg"])
        self._wave_cache = {}
        if self.mode == "rich":
            # relative-velocity state (u_r, v_r) replaces the over-ground surge/sway internally
            uc, vc = self._current_body(s[vm.YAW])
            s[vm.SURGE] -= uc
            s[vm.SWAY] -= vc
        self._s = s

    # ------------------------------------------------------------ outputs
    def _current_body(self, yaw):
        cn, ce = self.current_ned_mps
        c, s = math.cos(yaw), math.sin(yaw)
        return (c * cn + s * ce, -s * cn + c * ce)

    def state(self):
        """[yaw_rad, yaw_rate_radps, north_m, east_m, surge_mps, sway_mps] (over ground), model slots."""
        out = list(self._s)
        if self.mode == "rich":
            uc, vc = self._current_body(out[vm.YAW])
            out[vm.SURGE] += uc
            out[vm.SWAY] += vc
        return out

    @property
    def yaw_rad(self):
        return self._s[vm.YAW]

    @property
    def yaw_rate_radps(self):
        return self._s[vm.YAW_RATE]

    @property
    def north_m(self):
        return self._s[vm.NORTH]

    @property
    def east_m(self):
        return self._s[vm.EAST]

    def vel_ned_mps(self):
        """(north, east) velocity over ground, m/s."""
        return vm.body_to_ned_velocity(self.state())

    # ------------------------------------------------------------ inputs
    def command(self, command_left, command_right):
        """Throttle commands in [-1, 1] (clamped), held until the next call. A pair holding NaN or inf is
        refused (the commands held stay; counted in ``rejected_commands``); returns whether it was taken."""
        left, right = float(command_left), float(command_right)
        if not (math.isfinite(left) and math.isfinite(right)):
            self.rejected_commands += 1
            return False
        self.command_lr = [max(-1.0, min(1.0, left)), max(-1.0, min(1.0, right))]
        return True

    def _thrusts(self):
        """Advance the thrusters one step; (T_l, T_r) in N applied over the step."""
        cl, cr = self.command_lr
        if self.mode == "paper":
            return self.thrust_map.step(cl, cr, self.dt_s)
        thr = self.cfg["thrusters"]
        db = thr["dead_band"]
        cl = 0.0 if abs(cl) <= db else cl
        cr = 0.0 if abs(cr) <= db else cr
        t_l, t_r = self.thrust_map.step(cl, cr, self.dt_s)
        return (t_l * thr["efficiency_left"], t_r * thr["efficiency_right"])

    def step(self):
        """Advance one ``dt_s`` with the held commands through the thrusters."""
        self.step_thrust(*self._thrusts())

    def step_thrust(self, thrust_left_n, thrust_right_n):
        """Advance one ``dt_s`` with the given thrusts (N) held, bypassing the thrusters."""
        thrust = (float(thrust_left_n), float(thrust_right_n))
        self.applied_thrust_n = thrust
        if self.mode == "paper":
            s = vm.step(self._s, thrust, self.params, self.dt_s)
            if any(self.noise_sigma):
                w = self.rng.standard_normal(vm.N_STATE)
                for i in range(vm.N_STATE):
                    s[i] += self.noise_sigma[i] * float(w[i])
                s[vm.YAW] = wrap_pi(s[vm.YAW])
            self._s = s
        else:
            self._gust_step()
            self._s = self._rk4(self._s, thrust, self.time_us * 1e-6, self.dt_s)
            self._s[vm.YAW] = wrap_pi(self._s[vm.YAW])
        self.time_us += self.dt_us

    # ------------------------------------------------------------ rich dynamics
    def _gust_step(self):
        """First-order Gauss-Markov gust: g' = a g + sigma sqrt(1 - a^2) w, a = exp(-dt / tau)."""
        if self._gust_gain is None:
            return
        a, gain = self._gust_gain
        self.gust_mps = a * self.gust_mps + gain * float(self.rng.standard_normal())

    def _waves(self, t_s):
        """(force N, moment Nm) of the wave sinusoids at ``t_s`` (before the direction terms); the last two
        times are kept (RK4 asks for t + dt/2 twice and for t + dt again at the next step)."""
        cache = self._wave_cache
        if t_s in cache:
            return cache[t_s]
        wv = self.cfg["waves"]
        f = m = 0.0
        sin = math.sin
        for w, p1, p2 in zip(self.wave_freq_radps, self.wave_phase_rad, self.wave_phase2_rad):
            wt = w * t_s
            f += sin(wt + p1)
            m += sin(wt + p2)
        f *= self.wave_gain * wv["force_n"]
        m *= self.wave_gain * wv["moment_nm"]
        if len(cache) >= 2:
            cache.clear()
        cache[t_s] = (f, m)
        return f, m

    def disturbance(self, s, t_s, cos_yaw=None, sin_yaw=None):
        """(X_n, Y_n, N_nm) of wind and waves on the body (FRD) at state ``s`` (internal slots) and time
        (``cos_yaw``, ``sin_yaw``: of s's yaw when the caller has them)."""
        yaw = s[vm.YAW]
        x_f = y_f = n_m = 0.0
        wind = self._wind
        speed = wind["speed_mps"] + self.gust_mps
        if speed > 0.0:
            wn, we = -speed * self._wind_from_cos, -speed * self._wind_from_sin     # air velocity (towards), NED
            if cos_yaw is None:
                c, sn = math.cos(yaw), math.sin(yaw)
            else:
                c, sn = cos_yaw, sin_yaw
            cn, ce = self.current_ned_mps
            uc, vc = c * cn + sn * ce, -sn * cn + c * ce                   # the current in the body frame
            u_g, v_g = s[vm.SURGE] + uc, s[vm.SWAY] + vc
            u_rw = u_g - (c * wn + sn * we)                               # hull relative to the air, body
            v_rw = v_g - (-sn * wn + c * we)
            v2 = u_rw * u_rw + v_rw * v_rw
            g = -math.atan2(v_rw, u_rw)
            q = 0.5 * AIR_DENSITY_KGPM3 * v2
            x_f += -q * wind["cx"] * math.cos(g) * wind["frontal_area_m2"]
            y_f += q * wind["cy"] * math.sin(g) * wind["lateral_area_m2"]
            n_m += q * wind["cn"] * math.sin(2.0 * g) * wind["lateral_area_m2"] * wind["length_m"]
        if self._waves_on:
            rel = self._waves_from_rad + math.pi - yaw                     # travel direction relative to the bow
            f, m = self._waves(t_s)
            x_f += f * math.cos(rel)
            y_f += f * math.sin(rel)
            n_m += m * math.sin(2.0 * rel)
        return x_f, y_f, n_m

    def derivative(self, s, thrust, t_s):
        """d/dt of the internal state (yaw, r, north, east, u_r, v_r) in rich mode (module docstring)."""
        (arm, m_au, m_av, a_vu, inertia, x_lin, x_quad, y_lin, y_quad, n_lin, n_quad) = self._hull
        yaw, r, u, v = s[vm.YAW], s[vm.YAW_RATE], s[vm.SURGE], s[vm.SWAY]
        c, sn = math.cos(yaw), math.sin(yaw)
        dx, dy, dn = self.disturbance(s, t_s, c, sn)
        x_f = thrust[0] + thrust[1] + dx
        n_f = arm * (thrust[0] - thrust[1]) + dn
        d_u = (x_lin + x_quad * abs(u)) * u
        d_v = (y_lin + y_quad * abs(v)) * v
        d_r = (n_lin + n_quad * abs(r)) * r
        du = (x_f + m_av * v * r - d_u) / m_au
        dv = (dy - m_au * u * r - d_v) / m_av
        dr = (n_f - a_vu * u * v - d_r) / inertia
        cn, ce = self.current_ned_mps
        out = [0.0] * vm.N_STATE
        out[vm.YAW] = r
        out[vm.YAW_RATE] = dr
        out[vm.NORTH] = u * c - v * sn + cn
        out[vm.EAST] = u * sn + v * c + ce
        out[vm.SURGE] = du
        out[vm.SWAY] = dv
        return out

    def _rk4(self, s, thrust, t_s, dt):
        half = 0.5 * dt
        sixth = dt / 6.0
        derivative = self.derivative
        k1 = derivative(s, thrust, t_s)
        k2 = derivative([a + half * b for a, b in zip(s, k1)], thrust, t_s + half)
        k3 = derivative([a + half * b for a, b in zip(s, k2)], thrust, t_s + half)
        k4 = derivative([a + dt * b for a, b in zip(s, k3)], thrust, t_s + dt)
        return [a + sixth * (b1 + 2.0 * b2 + 2.0 * b3 + b4) for a, b1, b2, b3, b4 in zip(s, k1, k2, k3, k4)]


# ---------------------------------------------------------------- driving pattern
PATTERN_SEGMENTS = ("straight", "zigzag", "circle", "excitation")


def drive_pattern(duration_s, dt_s, rng, segment_s=(8.0, 20.0)):
    """Throttle commands (left, right) per step for ``duration_s``: a seeded sequence of segments, each
    ``segment_s`` long (uniform), cycling through straight legs (both at one throttle), zig-zags
    (differential flipping every 3-6 s), turning circles (constant differential) and excitation
    (random throttle steps every 0.5-2 s); a list of (cmd_left, cmd_right) in [-1, 1]."""
    steps = int(round(duration_s / dt_s))
    out = []
    k = 0
    seg = 0
    while len(out) < steps:
        kind = PATTERN_SEGMENTS[seg % len(PATTERN_SEGMENTS)]
        seg += 1
        n = int(round(float(rng.uniform(*segment_s)) / dt_s))
        base = float(rng.uniform(0.35, 1.0))
        if kind == "straight":
            cmds = [(base, base)] * n
        elif kind == "circle":
            d = float(rng.uniform(0.2, 0.6)) * (1 if rng.uniform() < 0.5 else -1)
            cmds = [(base + d, base - d)] * n
        elif kind == "zigzag":
            d = float(rng.uniform(0.2, 0.5))
            cmds = []
            sign = 1.0
            while len(cmds) < n:
                hold = int(round(float(rng.uniform(3.0, 6.0)) / dt_s))
                cmds += [(base + sign * d, base - sign * d)] * hold
                sign = -sign
            cmds = cmds[:n]
        else:
            cmds = []
            while len(cmds) < n:
                hold = int(round(float(rng.uniform(0.5, 2.0)) / dt_s))
                cmds += [(float(rng.uniform(-0.5, 1.0)), float(rng.uniform(-0.5, 1.0)))] * hold
            cmds = cmds[:n]
        out += [(max(-1.0, min(1.0, a)), max(-1.0, min(1.0, b))) for a, b in cmds]
        k += n
    return out[:steps]
