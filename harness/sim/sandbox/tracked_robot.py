"""The Sandbox's tracked robot: a rigid skid-steer body on contact points along each track, on soft soil.

Frames: NED plane (north, east; yaw from north towards east, positive yaw rate turns right), body FRD (x
forward, y right). Each track carries ``contact_points`` points evenly spaced along its ground length
``track_length_m`` at lateral offset -/+ ``track_gauge_m``/2 (left/right); each point stands for a patch of
(L / N) x ``track_width_m``.

Vertical (quasi-static, each substep): the body's bottom plane is z + a tan(pitch) - l tan(roll) at a point
(along a, lateral l); a point penetrating the soil by pen > 0 bears Bekker's pressure from the cell's
plastic sinkage s (Bekker's p = (k_c/b + k_phi) (s + pen)^n, reloaded elastically at ``ELASTIC_K_PA_PER_M``
as in Chrono's SCM: p = min(plastic, elastic_k * pen); only the plastic part of a cell's penetration
stays). Newton's method finds (z, tan pitch, tan roll) at which the points carry the weight with no pitch or
roll moment; pitch and roll are read from that plane (so on a planar slope the pitch is the slope's angle). The track footprints are then cut to the plane
(:meth:`TileTerrain.press_track`: sinkage, bulldozing).

Horizontal (dynamics, each substep): the body's (u, v, r) (forward, right, yaw rate) under, per point, the
Janosi-Hanamoto shear stress tau = (c + p tan(phi)) (1 - exp(-j/K)) (:mod:`terramechanics`) opposing the slip
velocity of the belt over the ground (belt ground speed = point velocity - track speed along x); the shear
displacement j = |slip velocity| * the time the soil under the point has been under the track (from the
track's leading end, at the track speed, at least ``MIN_SHEAR_SPEED_MPS``) (Wong ch. 2; Wong and Chiang's
skid-steering model). Plus grade resistance (gravity along the slope, -m g sin(pitch) forward, +m g sin(roll)
to the right), Bekker compaction resistance per track and the tracks' internal resistance
(``track_resistance_coeff`` x the weight), both against each track's motion over the ground (explicit, and at
most the force that reverses that motion within the substep: :func:`resistance_limit_n`). Integrated by
linearised implicit Euler (the shear law is stiff at small slip): that keeps the stiff shear damped at the
substeps used (1 ms: a 0.01 s frame of 10 substeps), but it is NOT stable at any substep length: the
linearisation, the contact's Newton solve (which starts from the last substep's plane) and the footprints
pressed once per substep all assume the pose changes little within a substep. Substeps up to about 20 ms
behave (:data:`MAX_SUBSTEP_US`); at 50 ms the contact Newton already fails to converge at times, and with 1 s
substeps the robot commanded 0.25 m/s moves some 43 m in one frame. SandboxWorld and the INI reader
(:mod:`harness.sim.sandbox.config`) refuse a substep (frame_dt / substeps) longer than MAX_SUBSTEP_US. The
track speeds follow the sprocket commands with a first-order lag ``motor_tau_s``. The horizontal
motion is planar: the body speed is taken as the ground-plane speed (cos(pitch) ~ 1 on the slopes driven).
"""
import math

import numpy as np

from harness.sim.hill_robots import VEHICLE_DEFAULTS as HILL_VEHICLE
from harness.sim.sandbox import terramechanics as tm
from onboard.core.settings import POSITIVE, checked, int_within, within
from onboard.core.units import G_MPS2

# Dagu Rover 5 class geometry (the thesis's chassis; the same as the hill-sensing levelers'), plus the contact
# points per track
VEHICLE_DEFAULTS = dict(HILL_VEHICLE, contact_points=8,
                        # internal resistance of a small rubber track (sprockets, idlers, belt bending), a
                        # fraction of the weight, against the motion like a rolling resistance
                        track_resistance_coeff=0.05)
VEHICLE_SETTING_RANGES = {k: POSITIVE for k in HILL_VEHICLE}
VEHICLE_SETTING_RANGES["contact_points"] = int_within(2, 64)
VEHICLE_SETTING_RANGES["track_resistance_coeff"] = within(0.0, 1.0)
VEHICLE_SETTING_RANGES[("track_width_m", "track_gauge_m")] = (
    "tracks that do not overlap (track_width_m < track_gauge_m)", lambda w, g: w < g)

# elastic reload stiffness (SCM's elastic_K; Chrono's demos use 4e7-2e8 Pa/m; softer here, which keeps the
# contact Newton robust: the elastic spring-back under the Dagu's 1.2 kPa is then 0.2 mm)
ELASTIC_K_PA_PER_M = 6.0e6
MIN_SHEAR_SPEED_MPS = 0.05            # the contact time of the shear displacement uses at least this speed
NEWTON_ITERATIONS = 20
LINE_SEARCH_HALVINGS = 8
FORCE_TOLERANCE = 1e-4                # of the weight (and of weight x length for the moments)
MAX_DZ_M = 0.005                      # Newton step limits
MAX_DTAN = 0.05
# the longest substep (frame_dt / substeps) the integration is sane at (module docstring: 50 ms already has Newton
# failures, 1 s moves the robot tens of metres in a frame); the project's INIs use 1 ms
MAX_SUBSTEP_US = 20000


def resistance_limit_n(ground_mps, response_per_kg, dt_s):
    """The largest resistance (N) a track moving over the ground at ``ground_mps`` may take in a substep of
    ``dt_s`` (s), where a force F on that track changes its ground speed by F dt ``response_per_kg`` (1/kg: the
    step's implicit system, e^T (M - dt D)^-1 e with e = (1, 0, -lateral)): the force that, with the other
    track's equal push, turns that motion into its opposite within the substep, no faster. The resistance
    rc tanh(v / 0.01 m/s) is explicit in the step; beyond this limit the step would make the motion it opposes
    grow (the edge of stability of an explicit damping step), substep after substep without bound, as a stiff
    soil's Bekker compaction term b (k_c/b + k_phi) z^(n+1)/(n+1) (1e5 N at a millimetre of sinkage) did.
    At the example INI's sand, vehicle and 1 ms substeps the resistance stays below the limit."""
    return abs(ground_mps) / (dt_s * response_per_kg)


class TrackedRobot:
    """Pose ``north_m``, ``east_m``, ``yaw_rad``; bottom plane ``base_m`` (height at the body's centre),
    ``tan_pitch``, ``tan_roll``; body velocity ``u_mps``, ``v_mps``, ``r_radps``; track belt speeds
    ``left_mps``, ``right_mps``; ``rejected_commands`` (non-finite commands refused); the last substep's
    ``slip`` (left, right), ``sinkage_m`` (mean plastic sinkage of the loaded points) and normal loads ``load_n``
    (per point)."""

    def __init__(self, terrain, north_m, east_m, yaw_rad, vehicle=None, soil=None):
        cfg = checked(VEHICLE_DEFAULTS, VEHICLE_SETTING_RANGES, vehicle, "vehicle")
        self.cfg = cfg
        self.soil = dict(tm.SANDY_SOIL) if soil is None else dict(soil)
        self.terrain = terrain
        self.north_m, self.east_m, self.yaw_rad = float(north_m), float(east_m), float(yaw_rad)
        self.mass_kg = float(cfg["mass_kg"])
        self.weight_n = self.mass_kg * G_MPS2
        L, B, b = float(cfg["track_length_m"]), float(cfg["track_gauge_m"]), float(cfg["track_width_m"])
        self.length_m, self.gauge_m, self.width_m = L, B, b
        self.inertia_kgm2 = self.mass_kg * (L * L + B * B) / 12.0
        self.radius_m = float(cfg["sprocket_radius_m"])
        self.max_radps = float(cfg["max_sprocket_radps"])
        self.tau_s = float(cfg["motor_tau_s"])
        self.track_resistance = float(cfg["track_resistance_coeff"])
        n = int(cfg["contact_points"])
        along = L * (0.5 - (np.arange(n) + 0.5) / n)
        self.a = np.concatenate([along, along])                      # along, forward (m)
        self.l = np.concatenate([np.full(n, -0.5 * B), np.full(n, 0.5 * B)])    # lateral, right (m)
        self.left = np.arange(2 * n) < n
        self._gx = np.stack([np.ones(2 * n), np.zeros(2 * n), -self.l])    # d(slip x) / d(u, v, r)
        self._gy = np.stack([np.zeros(2 * n), np.ones(2 * n), self.a])     # d(slip y) / d(u, v, r)
        self._g = np.stack([-np.ones(2 * n), -self.a, self.l])        # d(penetration) / d(base, tan p, tan r)
        self._moments = np.stack([np.ones(2 * n), self.a, self.l])    # force, pitch and roll moment arms
        self.patch_m2 = L * b / n
        s = self.soil
        self.k_bekker = tm.bekker_modulus(s["k_c"], s["k_phi"], b)
        self.n_exp = float(s["n"])
        self._k_patch = self.k_bekker * self.patch_m2
        self._nk_patch = self.n_exp * self._k_patch
        self._ke_patch = ELASTIC_K_PA_PER_M * self.patch_m2
        self.tan_phi = math.tan(math.radians(s["phi_deg"]))
        self.c_pa = float(s["c_pa"])
        self.K_m = float(s["K_m"])
        self.cmd_left_radps = 0.0
        self.cmd_right_radps = 0.0
        self.rejected_commands = 0
        self.left_mps = 0.0
        self.right_mps = 0.0
        self.u_mps = self.v_mps = self.r_radps = 0.0
        # first guess: the plane fitted through the soil under the points (least squares), then settle
        pn, pe = self.points_ne_m()
        fit = np.linalg.lstsq(np.stack([np.ones_like(self.a), self.a, -self.l], axis=1), terrain.sample(pn, pe),
                              rcond=None)[0]
        self.base_m, self.tan_pitch, self.tan_roll = float(fit[0]), float(fit[1]), float(fit[2])
        self.slip = (0.0, 0.0)
        self.sinkage_m = 0.0
        self.load_n = np.zeros(2 * n)
        self.newton_fails = 0
        self.settled = False
        self.balance(iterations=10 * NEWTON_ITERATIONS)
        self.press()

    # ------------------------------------------------------------ commands and geometry
    def command(self, left_radps, right_radps):
        """Sprocket speed commands (rad/s), clipped to +-``max_sprocket_radps``. A pair holding NaN or inf is
        refused (the commands held stay; counted in ``rejected_commands``); returns whether it was taken."""
        left, right = float(left_radps), float(right_radps)
        if not (math.isfinite(left) and math.isfinite(right)):
            self.rejected_commands += 1
            return False
        m = self.max_radps
        self.cmd_left_radps = min(m, max(-m, left))
        self.cmd_right_radps = min(m, max(-m, right))
        return True

    @property
    def pitch_rad(self):
        """Nose up positive (rad)."""
        return math.atan(self.tan_pitch)

    @property
    def roll_rad(self):
        """Right side down positive (rad)."""
        return math.atan(self.tan_roll)

    def points_ne_m(self):
        """(north, east) arrays of the contact points (m, unwrapped)."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        return self.north_m + c * self.a - s * self.l, self.east_m + s * self.a + c * self.l

    def track_centres(self):
        """((north, east) of the left track's centre, of the right track's) (m)."""
        c, s = math.cos(self.yaw_rad), math.sin(self.yaw_rad)
        h = 0.5 * self.gauge_m
        return (self.north_m + s * h, self.east_m - c * h), (self.north_m - s * h, self.east_m + c * h)

    # ------------------------------------------------------------ vertical: contact equilibrium
    def _bearing(self, pen, sunk):
        """Normal force (N) of each point and its stiffness dF/dpen (N/m): Bekker from the cell's plastic
        sinkage, reloaded elastically (SCM): p = min(k (s + pen)^n, k_e pen) for pen > 0, else 0."""
        p_pen = np.maximum(pen, 0.0)
        total = sunk + p_pen
        plastic = self._k_patch * total ** self.n_exp
        elastic = self._ke_patch * p_pen
        f = np.minimum(plastic, elastic)
        stiff = np.where(elastic < plastic, self._ke_patch,
                         self._nk_patch * np.maximum(total, 1e-9) ** (self.n_exp - 1.0))
        stiff[pen <= 0.0] = 0.0
        return f, stiff

    def balance(self, iterations=NEWTON_ITERATIONS):
        """Newton on (base, tan pitch, tan roll): the points carry the weight without a pitch or roll
        moment about the body's centre (module docstring). Sets ``load_n`` and ``settled`` (converged);
        counts ``newton_fails``."""
        pn, pe = self.points_ne_m()
        h = self.terrain.sample(pn, pe)
        i, j = self.terrain.cell_of(pn, pe)
        sunk = self.terrain.sunk_m[i, j]
        w = self.weight_n * math.cos(self.pitch_rad) * math.cos(self.roll_rad)
        x = np.array([self.base_m, self.tan_pitch, self.tan_roll])
        g, moments = self._g, self._moments
        top = float((h + x @ g).max()) + x[0]
        if x[0] > top:
            x[0] = top                          # nothing touching: drop onto the highest point
        scale = np.array([1.0 / w, 1.0 / (w * self.length_m), 1.0 / (w * self.gauge_m)])
        target = np.array([w, 0.0, 0.0])
        regular = np.diag([-1e-3 * w, -1e-6 * w, 1e-6 * w])     # keeps J regular with few points touching
        tol2 = FORCE_TOLERANCE * FORCE_TOLERANCE

        f, k = self._bearing(h + x @ g, sunk)
        res = moments @ f - target
        merit = float(((res * scale) ** 2).sum())
        ok = merit < tol2
        it = 0
        while not ok and it < iterations:
            it += 1
            J = (moments * k) @ g.T + regular
            try:
                dx = np.linalg.solve(J, -res)
            except np.linalg.LinAlgError:
                dx = np.array([-MAX_DZ_M if res[0] < 0 else MAX_DZ_M, 0.0, 0.0])
            dx[0] = min(MAX_DZ_M, max(-MAX_DZ_M, dx[0]))
            dx[1:] = np.clip(dx[1:], -MAX_DTAN, MAX_DTAN)
            # backtracking line search on the scaled residual (the elastic/plastic switch makes it kinked)
            step = 1.0
            for _ in range(LINE_SEARCH_HALVINGS):
                trial = x + step * dx
                f_t, k_t = self._bearing(h + trial @ g, sunk)
                res_t = moments @ f_t - target
                merit_t = float(((res_t * scale) ** 2).sum())
                if merit_t < merit:
                    break
                step *= 0.5
            x, f, k, res, merit = trial, f_t, k_t, res_t, merit_t
            ok = merit < tol2
        self.settled = ok
        if not ok:
            self.newton_fails += 1
        self.base_m, self.tan_pitch, self.tan_roll = float(x[0]), float(x[1]), float(x[2])
        self.load_n = f
        loaded = f > 0.0
        self.sinkage_m = float((sunk[loaded] + (h + x @ g)[loaded]).mean()) if loaded.any() else 0.0

    def press(self):
        """Cut both tracks' footprints to the bottom plane (sinkage) and bulldoze (m^3 moved); nothing when
        the last contact solve did not converge (its plane is not to be trusted)."""
        moved = 0.0
        if not self.settled:
            return moved
        for (tn, te), sign, speed in zip(self.track_centres(), (-1.0, 1.0), (self.left_mps, self.right_mps)):
            lat = sign * 0.5 * self.gauge_m
            base = self.base_m - lat * self.tan_roll         # the plane's height at the track's centre line
            moved += self.terrain.press_track(tn, te, self.yaw_rad, self.length_m, self.width_m, base,
                                              self.tan_pitch, self.tan_roll, 1 if speed >= 0.0 else -1,
                                              self.k_bekker, self.n_exp, ELASTIC_K_PA_PER_M)
        return moved

    # ------------------------------------------------------------ horizontal: traction dynamics
    def _traction(self, dt_s=None):
        """Generalised forces (Fx, Fy forward/right in N, Mz about down in N m) of the soil and gravity,
        and their Jacobian with respect to (u, v, r) (for the implicit step). With ``dt_s`` (s, the substep)
        each track's resistance (compaction and internal) is at most what reverses that track's motion over the
        ground within the substep, both tracks pushing together (:func:`resistance_limit_n`)."""
        a, l = self.a, self.l
        belt = np.where(self.left, self.left_mps, self.right_mps)
        vx = self.u_mps - self.r_radps * l
        vy = self.v_mps + self.r_radps * a
        sx = vx - belt                      # belt over the ground, along x
        sy = vy
        speed = np.maximum(np.abs(belt), MIN_SHEAR_SPEED_MPS)
        from_lead = np.where(belt >= 0.0, 0.5 * self.length_m - a, 0.5 * self.length_m + a)
        t_contact = from_lead / speed
        fn = self.load_n
        fmax = np.where(fn > 0.0, self.c_pa * self.patch_m2 + fn * self.tan_phi, 0.0)
        smag = np.hypot(sx, sy)
        # Janosi-Hanamoto (terramechanics.janosi_shear_pa times the patch): f = fmax (1 - exp(-j/K))
        j = smag * t_contact
        e = np.exp(-j / self.K_m)
        f = fmax * (1.0 - e)
        dfds = fmax * e * t_contact / self.K_m                  # d f / d|s|
        f_over_s = np.where(smag > 1e-12, f / np.maximum(smag, 1e-12), dfds)
        ux = np.where(smag > 1e-12, sx / np.maximum(smag, 1e-12), 0.0)
        uy = np.where(smag > 1e-12, sy / np.maximum(smag, 1e-12), 0.0)
        fx = -f * ux
        fy = -f * uy
        # H = dF/ds = -(dfds uu^T + f/|s| (I - uu^T))
        hxx = -(dfds * ux * ux + f_over_s * (1.0 - ux * ux))
        hyy = -(dfds * uy * uy + f_over_s * (1.0 - uy * uy))
        hxy = -(dfds - f_over_s) * ux * uy
        # s = G q, G = [[1, 0, -l], [0, 1, a]]; Q = sum G^T F; dQ/dq = sum G^T H G
        Q = np.array([fx.sum(), fy.sum(), (a * fy - l * fx).sum()])
        gx, gy = self._gx, self._gy
        D = (gx * hxx) @ gx.T + (gx * hxy) @ gy.T + (gy * hxy) @ gx.T + (gy * hyy) @ gy.T
        # gravity along the slope (grade resistance) and sideways on a cross slope
        Q[0] -= tm.grade_resistance_n(self.weight_n, self.pitch_rad)
        Q[1] += self.weight_n * math.sin(self.roll_rad) * math.cos(self.pitch_rad)
        # Bekker compaction resistance of each track, against its motion over the ground
        for side in (self.left, ~self.left):
            loaded = side & (self.load_n > 0.0)
            if not loaded.any():
                continue
            rc = tm.compaction_resistance_n(self.sinkage_m, self.soil["k_c"], self.soil["k_phi"], self.n_exp,
                                            self.width_m) + 0.5 * self.track_resistance * self.weight_n
            ground = float(vx[side].mean())
            lat = float(l[side][0])
            force = -rc * math.tanh(ground / 0.01)
            if dt_s is not None:
                force = self._limited(force, ground, lat, D, dt_s)
            Q[0] += force
            Q[2] += -lat * force
        return Q, D

    def _limited(self, force, ground, lat, D, dt_s):
        """``force`` (N, a track's resistance at ``lat`` m right of the centre, its ground speed ``ground``
        m/s) held to :func:`resistance_limit_n` through the implicit system M - dt D of the substep."""
        free = 1.0 / self.mass_kg + lat * lat / self.inertia_kgm2
        if abs(force) <= resistance_limit_n(ground, free, dt_s):
            return force                  # the free body's response bounds the step's (D damps): within
        e = np.array([1.0, 0.0, -lat])
        system = np.diag([self.mass_kg, self.mass_kg, self.inertia_kgm2]) - dt_s * D
        cap = resistance_limit_n(ground, float(e @ np.linalg.solve(system, e)), dt_s)
        return math.copysign(cap, force) if abs(force) > cap else force

    def step(self, dt_s):
        """One substep: motors, contact equilibrium, traction dynamics, pose (unwrapped), footprints pressed.
        Returns the volume the tracks moved (m^3)."""
        k = 1.0 - math.exp(-dt_s / self.tau_s)
        self.left_mps += k * (self.cmd_left_radps * self.radius_m - self.left_mps)
        self.right_mps += k * (self.cmd_right_radps * self.radius_m - self.right_mps)
        self.balance()
        Q, D = self._traction(dt_s)
        M = np.diag([self.mass_kg, self.mass_kg, self.inertia_kgm2])
        dq = np.linalg.solve(M - dt_s * D, dt_s * Q)
        self.u_mps += float(dq[0])
        self.v_mps += float(dq[1])
        self.r_radps += float(dq[2])
        mid = self.yaw_rad + 0.5 * self.r_radps * dt_s
        c, s = math.cos(mid), math.sin(mid)
        self.north_m += (c * self.u_mps - s * self.v_mps) * dt_s
        self.east_m += (s * self.u_mps + c * self.v_mps) * dt_s
        self.yaw_rad = math.atan2(math.sin(self.yaw_rad + self.r_radps * dt_s),
                                  math.cos(self.yaw_rad + self.r_radps * dt_s))
        vx = self.u_mps - self.r_radps * self.l
        self.slip = (tm.slip_ratio(self.left_mps, float(vx[self.left].mean())),
                     tm.slip_ratio(self.right_mps, float(vx[~self.left].mean())))
        return self.press()
