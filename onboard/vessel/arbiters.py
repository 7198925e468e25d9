"""Arbiters of the surface vessel (pure, MicroPython-safe): where to head and how fast, from the navigation
state, the perceived obstacles and the destination (RobotX AAVS paper, section III-D, figs. 9-10).

One interface, ``decide(nav_state, obstacles, destination) -> (heading_rad, speed_mps)``:

- ``nav_state``: any object with ``north_m``, ``east_m``, ``yaw_rad``, ``speed_mps`` (NED, yaw from north
  towards east; :class:`NavState` is one);
- ``obstacles``: a sequence of ``(north_m, east_m, radius_m)`` circles (buoys);
- ``destination``: ``(north_m, east_m)``;
- the result: the heading reference (rad, yaw convention, wrapped to [-pi, pi)) and the through-water
  speed reference (m/s, >= 0) for a heading/speed controller (``onboard.control.heading_speed``).

Bad input (a NaN or infinity, a negative radius, a malformed obstacle) raises :class:`ArbiterInputError`
(a ``ValueError``) and changes nothing. Both arbiters keep the vessel's hull out of the obstacles by
inflating each circle by ``hull_radius_m`` + ``margin_m``.

:class:`DamnArbiter` (paper III-D-2, fig. 9; Rosenblatt's DAMN): a polar grid of ``headings`` x ``rings``
sub-regions around the vessel (absolute bearings k * 2 pi / headings from north, ring j at range
(j + 1) * ``range_step_m``). Two behaviours vote on every region, each vote in [-1, 1]:

- go to way-point: g = clamp((D0 - D_region) / s, -1, 1), the progress towards the destination, with
  s = clamp(D0, range_step_m, rings * range_step_m) (the region holding the destination gets 1 when it is
  within the grid). ``goal_vote`` "distance": D is the straight-line distance to the destination (the
  paper's description); "cost_to_go" (default): D is that distance plus the detour around the obstacles
  inflated by hull + margin + ``plan_extra_m`` (:class:`CostToGo`, a grid Dijkstra computed again only when
  the obstacles or the destination change), as the goal-seeking behaviour of Rosenblatt's DAMN voted by a
  map-based planner's cost (D*): a reactive vote on straight-line progress is trapped by a U of buoys or
  a dense cluster;
- avoid obstacles: by the clearance c of each obstacle's inflated radius R = radius + hull + margin, -1 when
  c <= R, rising linearly to 0 at R + ``falloff_m``, the most negative over the obstacles. Without
  ``shadows`` c is the distance of the region's centre; with ``shadows`` it is the distance of the straight
  path from the vessel to the region, so every region hidden behind an inflated obstacle (the vessel as the
  light source) gets -1 and its penumbra less: "anywhere a shadow is cast is heavily downvoted", and a goal
  behind an obstacle is not a trap. Near an obstacle (closer than R + falloff) R and the falloff shrink so
  that only paths that come closer than the vessel is now are objected to.

The total is ``goal_weight`` * g + ``avoid_weight`` * a (avoid obstacles the strongest) plus a weak turn
vote -``turn_weight`` * |bearing - yaw| / pi that breaks near-ties towards the present heading. The arbiter
heads for the region with the highest total (the lowest index on a tie) at a speed proportional to its
distance, min(``max_speed_mps``, ``speed_gain_per_s`` * range) but at least ``min_speed_mps`` (steerage way),
times max(0, cos(heading error)) so that sharp turns are made nearly on the spot; when even the best total
is below ``veto_total`` every region is objected to and it stops (speed 0, heading held). ``last_votes``
holds the grid of the last decision (fig. 9): flat row-major lists (index k * rings + j) of the goal, avoid
and total votes.

:class:`PotentialFieldArbiter` (paper III-D-3, fig. 10): the way-point is a sink with the conic potential
U_a = 1/2 k_a |p - g|, each obstacle a source with Khatib's repulsive potential
U_r = 1/2 k_r (1/rho - 1/rho0)^2 for rho <= rho0 (rho the distance to the inflated circle), combined as the
weighted average U = (w_g U_a + w_o sum U_r) / (w_g + w_o). From the vessel's position it descends the
gradient ``steps`` times by ``step_m`` along -grad U (a look-ahead path), stopping early at the goal or
when the path oscillates (it comes back within step_m / 2 of where it was two steps before); the heading
points to the path's end and the speed is min(``max_speed_mps``, ``speed_gain_per_s`` * |end - start|), so
a local minimum (the end near the start) slows the vessel to a stall. ``last_field`` holds the look-ahead
path and the inputs of the last decision; ``field_vector(north_m, east_m)`` gives -grad U anywhere for a
plot of the field (fig. 10's arrows).
"""
import math

from onboard.core.angles import wrap_pi
from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_within, is_number, one_of, within

TWO_PI = 2.0 * math.pi
SQRT2 = math.sqrt(2.0)


class ArbiterInputError(ValueError):
    """A navigation state, obstacle or destination an arbiter cannot use (one line)."""


class NavState:
    """The navigation state the arbiters read: position (m, NED), yaw (rad) and speed (m/s)."""

    def __init__(self, north_m, east_m, yaw_rad, speed_mps=0.0):
        self.north_m = north_m
        self.east_m = east_m
        self.yaw_rad = yaw_rad
        self.speed_mps = speed_mps


def _checked_inputs(nav_state, obstacles, destination):
    """(north, east, yaw, obstacles as a list of float triples, goal north, goal east) or ArbiterInputError."""
    try:
        n, e, yaw = nav_state.north_m, nav_state.east_m, nav_state.yaw_rad
        spd = nav_state.speed_mps
    except AttributeError:
        raise ArbiterInputError("arbiter: nav_state needs north_m, east_m, yaw_rad and speed_mps")
    for name, v in (("north_m", n), ("east_m", e), ("yaw_rad", yaw), ("speed_mps", spd)):
        if not is_number(v):
            raise ArbiterInputError("arbiter: nav_state.%s must be a finite number, got %r" % (name, v))
    try:
        gn, ge = destination
    except (TypeError, ValueError):
        raise ArbiterInputError("arbiter: destination must be (north_m, east_m), got %r" % (destination,))
    if not (is_number(gn) and is_number(ge)):
        raise ArbiterInputError("arbiter: destination must be finite, got %r" % (destination,))
    obs = []
    try:
        items = list(obstacles)
    except TypeError:
        raise ArbiterInputError("arbiter: obstacles must be a sequence of (north_m, east_m, radius_m)")
    for i, ob in enumerate(items):
        try:
            on, oe, r = ob
        except (TypeError, ValueError):
            raise ArbiterInputError("arbiter: obstacle %d must be (north_m, east_m, radius_m), got %r" % (i, ob))
        if not (is_number(on) and is_number(oe) and is_number(r)) or r < 0:
            raise ArbiterInputError("arbiter: obstacle %d must be finite with radius_m >= 0, got %r" % (i, ob))
        obs.append((float(on), float(oe), float(r)))
    return float(n), float(e), float(yaw), obs, float(gn), float(ge)


class CostToGo:
    """Distance to a destination around the inflated obstacles, on a square grid (``cell_m``) over
    ``bounds`` = (north_min, east_min, north_max, east_max) m: Dijkstra from the destination's cell over
    8-connected free cells (steps of 1 and sqrt(2) cells). The goal-seeking behaviour of Rosenblatt's DAMN
    votes by such a map-based planner's cost (D* in the original); ``at(north_m, east_m)`` is the cost of the
    nearest cell, infinite in an inflated obstacle, outside the grid or where the destination cannot be
    reached."""

    def __init__(self, obs, destination, bounds, cell_m, inflate_m):
        import heapq
        n_lo, e_lo, n_hi, e_hi = bounds
        self.n0, self.e0, self.cell_m = n_lo, e_lo, cell_m
        rows = self.rows = int((n_hi - n_lo) / cell_m) + 1
        cols = self.cols = int((e_hi - e_lo) / cell_m) + 1
        blocked = bytearray(rows * cols)
        for on, oe, rad in obs:
            reach = rad + inflate_m
            k = int(reach / cell_m) + 1
            i0, j0 = int((on - n_lo) / cell_m + 0.5), int((oe - e_lo) / cell_m + 0.5)
            r2 = reach * reach
            for i in range(max(0, i0 - k), min(rows, i0 + k + 1)):
                dn = n_lo + i * cell_m - on
                for j in range(max(0, j0 - k), min(cols, j0 + k + 1)):
                    de = e_lo + j * cell_m - oe
                    if dn * dn + de * de < r2:
                        blocked[i * cols + j] = 1
        inf = float("inf")
        cost = [inf] * (rows * cols)
        gi, gj = int((destination[0] - n_lo) / cell_m + 0.5), int((destination[1] - e_lo) / cell_m + 0.5)
        self.gi, self.gj = gi, gj
        if 0 <= gi < rows and 0 <= gj < cols:
            start = gi * cols + gj
            blocked[start] = 0
            cost[start] = 0.0
            diag = cell_m * SQRT2
            steps = ((1, 0, cell_m), (-1, 0, cell_m), (0, 1, cell_m), (0, -1, cell_m),
                     (1, 1, diag), (1, -1, diag), (-1, 1, diag), (-1, -1, diag))
            todo = [(0.0, start)]
            while todo:
                c, idx = heapq.heappop(todo)
                if c > cost[idx]:
                    continue
                i, j = idx // cols, idx % cols
                for di, dj, w in steps:
                    a, b = i + di, j + dj
                    if 0 <= a < rows and 0 <= b < cols:
                        nxt = a * cols + b
                        if not blocked[nxt] and c + w < cost[nxt]:
                            cost[nxt] = c + w
                            heapq.heappush(todo, (c + w, nxt))
        self.cost = cost
        self.bounds = bounds
        # the detour of every cell: its cost minus the open-water (octile) distance of the 8-connected grid
        detour = [inf] * (rows * cols)
        root2m1 = SQRT2 - 1.0
        for i in range(rows):
            di = i - gi if i >= gi else gi - i
            base = i * cols
            for j in range(cols):
                c = cost[base + j]
                if c != inf:
                    dj = j - gj if j >= gj else gj - j
                    octile = cell_m * (di + root2m1 * dj if di >= dj else dj + root2m1 * di)
                    detour[base + j] = c - octile if c > octile else 0.0
        self.detours = detour

    def at(self, north_m, east_m):
        i = int((north_m - self.n0) / self.cell_m + 0.5)
        j = int((east_m - self.e0) / self.cell_m + 0.5)
        if 0 <= i < self.rows and 0 <= j < self.cols:
            return self.cost[i * self.cols + j]
        return float("inf")

    def detour(self, north_m, east_m):
        """How much longer than in open water the way to the destination is from the nearest cell (m): its cost
        minus the 8-connected grid's open-water (octile) distance, so 0 where nothing is in the way and the
        grid's direction bias cancels; infinite where ``at`` is."""
        i = int((north_m - self.n0) / self.cell_m + 0.5)
        j = int((east_m - self.e0) / self.cell_m + 0.5)
        if 0 <= i < self.rows and 0 <= j < self.cols:
            return self.detours[i * self.cols + j]
        return float("inf")

    def covers(self, north_m, east_m, reach_m):
        n_lo, e_lo, n_hi, e_hi = self.bounds
        return (n_lo <= north_m - reach_m and north_m + reach_m <= n_hi and e_lo <= east_m - reach_m
                and east_m + reach_m <= e_hi)


DAMN_DEFAULTS = {
    "headings": 72,                 # sub-regions per ring (5 deg)
    "rings": 12,
    "range_step_m": 2.5,            # ring j at (j + 1) * range_step_m: out to 30 m
    "goal_weight": 1.0,
    "avoid_weight": 3.0,            # avoid obstacles votes strongest (paper III-D-2)
    "turn_weight": 0.1,             # a weak vote for the current heading: -|bearing - yaw| / pi (no dithering)
    "shadows": True,                # obstacles cast vote shadows
    "goal_vote": "cost_to_go",      # "cost_to_go" (around the inflated obstacles) | "distance" (straight line)
    "plan_cell_m": 1.0,             # cost-to-go grid
    "plan_margin_m": 20.0,          # the grid spans the vessel's grid, the destination and this around them
    "plan_extra_m": 1.5,            # the grid's obstacles are inflated by hull + margin + this (passages the
                                    # avoid votes accept)
    "hull_radius_m": 2.5,           # the WAM-V's hull circle
    "margin_m": 1.5,                # clearance kept beyond the hull
    "falloff_m": 2.0,               # avoid vote rises from -1 to 0 over this beyond the inflated radius
    "speed_gain_per_s": 0.25,       # speed = gain * distance of the chosen region
    "max_speed_mps": 2.0,
    "min_speed_mps": 1.0,           # floor of the speed when moving (steerage way)
    "veto_total": -1.5,             # best total below this: stop
}
DAMN_RANGES = {
    "headings": int_within(8, 720), "rings": int_within(1, 200), "range_step_m": POSITIVE,
    "goal_weight": NON_NEGATIVE, "avoid_weight": NON_NEGATIVE, "turn_weight": NON_NEGATIVE, "shadows": BOOLEAN,
    "goal_vote": one_of("cost_to_go", "distance"), "plan_cell_m": within(0.1, 10.0), "plan_margin_m": NON_NEGATIVE,
    "plan_extra_m": NON_NEGATIVE, "min_speed_mps": NON_NEGATIVE,
    "hull_radius_m": NON_NEGATIVE, "margin_m": NON_NEGATIVE, "falloff_m": POSITIVE,
    "speed_gain_per_s": POSITIVE, "max_speed_mps": POSITIVE, "veto_total": within(-1e6, 1e6),
}


class DamnArbiter:
    """The DAMN-style voting arbiter (module docstring; paper III-D-2, fig. 9). ``config``: overrides of
    ``DAMN_DEFAULTS``. After each ``decide``: ``last_votes`` (the vote grid) and ``decisions``."""

    name = "damn"

    def __init__(self, config=None):
        cfg = self.cfg = checked(DAMN_DEFAULTS, DAMN_RANGES, config, "damn arbiter")
        self.headings, self.rings, self.range_step_m = cfg["headings"], cfg["rings"], cfg["range_step_m"]
        self.bearing_step_rad = TWO_PI / self.headings
        # region centres relative to the vessel, flat row-major (heading k, ring j) -> k * rings + j
        cn, ce, rng = [], [], []
        for k in range(self.headings):
            c, s = math.cos(k * self.bearing_step_rad), math.sin(k * self.bearing_step_rad)
            for j in range(self.rings):
                r = (j + 1) * self.range_step_m
                cn.append(r * c)
                ce.append(r * s)
                rng.append(r)
        self._cn, self._ce, self._range = cn, ce, rng
        self.last_votes = None
        self.decisions = 0
        self.vetoes = 0
        self.plans = 0                  # cost-to-go grids computed
        self._plan = None
        self._plan_key = None

    def region_offset_ne_m(self, index):
        """(north, east) of region ``index``'s centre relative to the vessel, m."""
        return (self._cn[index], self._ce[index])

    def _avoid_votes(self, obs, n0, e0):
        """The avoid-obstacles votes of every region: by the clearance of its centre, or with shadows by the
        clearance of the straight path to it (so the shadow and its penumbra behind every obstacle)."""
        cfg = self.cfg
        H, M, step = self.headings, self.rings, self.range_step_m
        cn, ce, rng = self._cn, self._ce, self._range
        infl = cfg["hull_radius_m"] + cfg["margin_m"]
        shadows = cfg["shadows"]
        avoid = [0.0] * (H * M)
        r_max = M * step
        for on, oe, rad in obs:
            dn, de = on - n0, oe - e0
            d = math.sqrt(dn * dn + de * de)
            big_r = rad + infl
            fall = cfg["falloff_m"]
            if shadows and d < big_r + fall:
                # near it (or inside): a path is objected to as far as it comes closer than the vessel is now
                big_r = min(big_r, 0.95 * d)
                fall = min(fall, d - big_r)
            reach = big_r + fall
            if d - reach > r_max or reach <= 0.0:
                continue                        # nothing of it within the grid
            bearing = math.atan2(de, dn)
            # headings whose regions (or paths) can come within reach of it
            if d <= reach:
                ks = range(H)
            else:
                half = math.asin(reach / d) + self.bearing_step_rad
                k0 = int(math.floor((bearing - half) / self.bearing_step_rad))
                k1 = int(math.ceil((bearing + half) / self.bearing_step_rad))
                ks = [k % H for k in range(k0, k1 + 1)]
            for k in ks:
                base = k * M
                for j in range(M):
                    i = base + j
                    pn, pe = cn[i], ce[i]
                    if shadows:
                        # closest point of the path vessel -> region to the centre (light source and shadow)
                        t = (dn * pn + de * pe) / (rng[i] * rng[i])
                        if t > 1.0:
                            t = 1.0
                        elif t < 0.0:
                            t = 0.0
                        qn, qe = t * pn - dn, t * pe - de
                    else:
                        qn, qe = pn - dn, pe - de
                    dc = math.sqrt(qn * qn + qe * qe)
                    if dc <= big_r:
                        v = -1.0
                    elif dc < reach:
                        v = (dc - big_r) / fall - 1.0
                    else:
                        continue
                    if v < avoid[i]:
                        avoid[i] = v
        return avoid

    def _cost_to_go(self, obs, gn, ge, n0, e0):
        """The cost-to-go grid for these obstacles and destination, computed again only when they change or
        the vessel's grid leaves it."""
        cfg = self.cfg
        reach = self.rings * self.range_step_m
        key = (tuple(obs), gn, ge)
        if self._plan is None or self._plan_key != key or not self._plan.covers(n0, e0, reach):
            m = cfg["plan_margin_m"]
            bounds = (min(n0 - reach, gn) - m, min(e0 - reach, ge) - m, max(n0 + reach, gn) + m,
                      max(e0 + reach, ge) + m)
            self._plan = CostToGo(obs, (gn, ge), bounds, cfg["plan_cell_m"],
                                  cfg["hull_radius_m"] + cfg["margin_m"] + cfg["plan_extra_m"])
            self._plan_key = key
            self.plans += 1
        return self._plan

    def decide(self, nav_state, obstacles, destination):
        """(heading_rad, speed_mps) towards the best-voted region (module docstring)."""
        n0, e0, yaw, obs, gn, ge = _checked_inputs(nav_state, obstacles, destination)
        cfg = self.cfg
        H, M = self.headings, self.rings
        cn, ce = self._cn, self._ce
        gdn, gde = gn - n0, ge - e0
        d0 = math.sqrt(gdn * gdn + gde * gde)
        plan = self._cost_to_go(obs, gn, ge, n0, e0) if cfg["goal_vote"] == "cost_to_go" else None
        if plan is not None:
            # the way from the vessel: straight-line distance plus the detour (from the best region when the
            # vessel is inside an inflated obstacle); none at all: straight-line votes
            x0 = plan.detour(n0, e0)
            if x0 == float("inf"):
                x0 = min(plan.detour(n0 + cn[i], e0 + ce[i]) for i in range(H * M))
            if x0 == float("inf"):
                plan = None
            else:
                d0 += x0
        scale = min(max(d0, self.range_step_m), M * self.range_step_m)
        inf = float("inf")
        if plan is not None:
            pn0, pe0, inv_cell = plan.n0, plan.e0, 1.0 / plan.cell_m
            prows, pcols, detours = plan.rows, plan.cols, plan.detours
        wg, wa = cfg["goal_weight"], cfg["avoid_weight"]
        avoid = self._avoid_votes(obs, n0, e0)
        goal = [0.0] * (H * M)
        total = [0.0] * (H * M)
        # the turn vote per heading: -|wrap(bearing - yaw)| / pi
        wt = cfg["turn_weight"] / math.pi
        turn = [-wt * abs(wrap_pi(k * self.bearing_step_rad - yaw)) for k in range(H)]
        best, best_i = None, 0
        for i in range(H * M):
            qn, qe = gdn - cn[i], gde - ce[i]
            g = d0 - math.sqrt(qn * qn + qe * qe)
            if plan is not None:
                # plan.detour inlined (the hot loop)
                pi = int((n0 + cn[i] - pn0) * inv_cell + 0.5)
                pj = int((e0 + ce[i] - pe0) * inv_cell + 0.5)
                g -= detours[pi * pcols + pj] if (0 <= pi < prows and 0 <= pj < pcols) else inf
            g /= scale
            if g > 1.0:
                g = 1.0
            elif g < -1.0:
                g = -1.0
            goal[i] = g
            t = wg * g + wa * avoid[i] + turn[i // M]
            total[i] = t
            if best is None or t > best:
                best, best_i = t, i
        self.decisions += 1
        veto = best < cfg["veto_total"]
        self.last_votes = {
            "headings": H, "rings": M, "bearing_step_rad": self.bearing_step_rad,
            "range_step_m": self.range_step_m, "origin_ne_m": (n0, e0), "destination_ne_m": (gn, ge),
            "shadows": cfg["shadows"], "goal": goal, "avoid": avoid, "total": total, "best": best_i,
            "veto": veto,
        }
        if veto:
            self.vetoes += 1
            return (wrap_pi(yaw), 0.0)
        heading = wrap_pi((best_i // M) * self.bearing_step_rad)
        # proportional to the region's distance but at least steerage way, times the cos of the turn still to
        # make: a sharp turn is made nearly on the spot (skid steer), not on a wide circle towards what the
        # vessel turns from, and the vessel does not orbit a close destination
        speed = max(cfg["min_speed_mps"], min(cfg["max_speed_mps"], cfg["speed_gain_per_s"] * self._range[best_i]))
        speed *= max(0.0, math.cos(heading - yaw))
        return (heading, speed)


PF_DEFAULTS = {
    "attract_gain": 5.0,            # k_a of the conic sink 1/2 k_a |p - g|
    # k_r of Khatib's source 1/2 k_r (1/rho - 1/rho0)^2 and its reach rho0 (m). PythonRobotics' k_r = 100 with
    # rho0 = 8 m and the 3:1 weight hold the vessel about 4 m off every inflated circle (stalls in any gap
    # under ~13 m); these hold it about 1.5 m off
    "repulse_gain": 20.0,
    "influence_m": 5.0,
    "goal_weight": 1.0,
    "avoid_weight": 3.0,            # avoid obstacles dominant (paper III-D-3)
    "hull_radius_m": 2.5,
    "margin_m": 0.5,                # added to the hull radius for rho
    "min_rho_m": 0.1,               # rho is clamped to this inside an inflated circle
    "steps": 20,                    # gradient-descent look-ahead
    "step_m": 0.5,
    "speed_gain_per_s": 0.25,       # speed = gain * |look-ahead end - start|
    "max_speed_mps": 2.0,
}
PF_RANGES = {
    "attract_gain": POSITIVE, "repulse_gain": NON_NEGATIVE, "influence_m": POSITIVE,
    "goal_weight": POSITIVE, "avoid_weight": NON_NEGATIVE, "hull_radius_m": NON_NEGATIVE,
    "margin_m": NON_NEGATIVE, "min_rho_m": POSITIVE, "steps": int_within(1, 1000), "step_m": POSITIVE,
    "speed_gain_per_s": POSITIVE, "max_speed_mps": POSITIVE,
}


class PotentialFieldArbiter:
    """The potential-field arbiter (module docstring; paper III-D-3, fig. 10). ``config``: overrides of
    ``PF_DEFAULTS``. After each ``decide``: ``last_field`` (look-ahead path and inputs), ``decisions``,
    ``oscillations`` (look-aheads stopped by the oscillation test)."""

    name = "potential_field"

    def __init__(self, config=None):
        self.cfg = checked(PF_DEFAULTS, PF_RANGES, config, "potential-field arbiter")
        self.last_field = None
        self.decisions = 0
        self.oscillations = 0

    def _descent(self, pn, pe, obs, gn, ge):
        """-grad U at (pn, pe): the weighted average of the sink's and the sources' forces (N, E)."""
        cfg = self.cfg
        dn, de = gn - pn, ge - pe
        d = math.sqrt(dn * dn + de * de)
        # conic sink: -grad 1/2 k_a |p - g| = 1/2 k_a (g - p) / |g - p|
        if d > 0.0:
            fa_n, fa_e = 0.5 * cfg["attract_gain"] * dn / d, 0.5 * cfg["attract_gain"] * de / d
        else:
            fa_n = fa_e = 0.0
        infl = cfg["hull_radius_m"] + cfg["margin_m"]
        rho0, kr, rmin = cfg["influence_m"], cfg["repulse_gain"], cfg["min_rho_m"]
        fr_n = fr_e = 0.0
        for on, oe, rad in obs:
            qn, qe = pn - on, pe - oe
            dc = math.sqrt(qn * qn + qe * qe)
            rho = dc - rad - infl
            if rho >= rho0 or dc == 0.0:
                continue
            if rho < rmin:
                rho = rmin
            # Khatib: -grad 1/2 k_r (1/rho - 1/rho0)^2 = k_r (1/rho - 1/rho0) / rho^2 * (p - c) / |p - c|
            mag = kr * (1.0 / rho - 1.0 / rho0) / (rho * rho)
            fr_n += mag * qn / dc
            fr_e += mag * qe / dc
        wg, wo = cfg["goal_weight"], cfg["avoid_weight"]
        w = wg + wo
        return ((wg * fa_n + wo * fr_n) / w, (wg * fa_e + wo * fr_e) / w)

    def field_vector(self, north_m, east_m, obstacles=None, destination=None):
        """-grad U (the weighted-average force) at a point, with the last decision's obstacles and
        destination unless given (fig. 10's arrows)."""
        if obstacles is None or destination is None:
            if self.last_field is None:
                raise ArbiterInputError("potential-field arbiter: no decision yet, pass obstacles and destination")
            obs, dest = self.last_field["obstacles"], self.last_field["destination_ne_m"]
        else:
            _, _, _, obs, gn, ge = _checked_inputs(NavState(north_m, east_m, 0.0), obstacles, destination)
            dest = (gn, ge)
        return self._descent(north_m, east_m, obs, dest[0], dest[1])

    def decide(self, nav_state, obstacles, destination):
        """(heading_rad, speed_mps) towards the end of the gradient-descent look-ahead (module docstring)."""
        n0, e0, yaw, obs, gn, ge = _checked_inputs(nav_state, obstacles, destination)
        cfg = self.cfg
        step = cfg["step_m"]
        pn, pe = n0, e0
        path = [(pn, pe)]
        oscillated = False
        for _ in range(cfg["steps"]):
            dn, de = gn - pn, ge - pe
            if dn * dn + de * de <= step * step:
                pn, pe = gn, ge                     # the goal is within one step: the path ends there
                path.append((pn, pe))
                break
            fn, fe = self._descent(pn, pe, obs, gn, ge)
            f = math.sqrt(fn * fn + fe * fe)
            if f == 0.0:
                break                               # a stationary point of the field
            pn, pe = pn + step * fn / f, pe + step * fe / f
            path.append((pn, pe))
            if len(path) >= 3:
                an, ae = path[-3]
                if (pn - an) * (pn - an) + (pe - ae) * (pe - ae) < 0.25 * step * step:
                    oscillated = True
                    break
        self.decisions += 1
        if oscillated:
            self.oscillations += 1
        dn, de = pn - n0, pe - e0
        reach = math.sqrt(dn * dn + de * de)
        self.last_field = {"origin_ne_m": (n0, e0), "destination_ne_m": (gn, ge), "obstacles": obs,
                           "path_ne_m": path, "oscillated": oscillated, "reach_m": reach}
        if reach < 1e-9:
            return (wrap_pi(yaw), 0.0)
        heading = wrap_pi(math.atan2(de, dn))
        return (heading, min(cfg["max_speed_mps"], cfg["speed_gain_per_s"] * reach))


ARBITERS = {"damn": DamnArbiter, "potential_field": PotentialFieldArbiter}


def make_arbiter(name, config=None):
    """The arbiter called ``name`` ("damn" | "potential_field") with its settings ``config``."""
    if name not in ARBITERS:
        raise ArbiterInputError("arbiter must be one of %s, got %r" % (", ".join(sorted(ARBITERS)), name))
    return ARBITERS[name](config)
