"""One pocket drone's onboard swarm agent: learned estimator + particle filters + DQN (uwb-pocket-drones fig. 1).

For every range (``observe``; several per policy period when the UWB driver delivers them) the agent:

1. feeds the tracked object (a neighbour, or the goal) its input state ``(dt, range, v_own,
   v_obj)`` to the learned bearing/orientation estimator (pocket IV-A; modes hybrid and learned,
   the pure filter does not use it) when the caller marks the range as the period's estimator
   input (the last range of the period: the estimator was trained on one input per period);
2. steps that object's particle filter with own and peer velocity and the UWB range,
   refreshing 10 % of the particles around a fresh learned estimate (pocket IV-B); the filter
   is started around the learned estimate once the estimator has ``warmup_steps`` of history.

Every policy period (``decide``, frame skipping pocket V-B) it

3. builds the DQN input (v, goal, nearest neighbour by range, dt) (pocket IV-C), picks the
   greedy action and integrates it into the body-frame velocity setpoint it returns.

On top of the DQN, each off by default and not in the paper (see DEFAULTS): a collision guard
(which hovers instead of backing off while the neighbour's estimate disagrees with its ranges),
a range-rate brake (hover when the ranges alone say contact within a second), a collapsed-estimate
rule (an unresolved neighbour is shown at its measured range), a detour when the goal stops getting
closer, and a final P-approach to the goal estimate. A neighbour whose last range is older than
``range_max_age_s`` (its ranging stopped) is shown neither to the DQN nor to the guard.

``mode`` picks the estimation configuration compared in pocket figs. 5-6: ``hybrid`` (PF +
learned), ``pf`` (pure particle filter, uninformed start, no refresh) or ``learned``
(the estimator's output alone, range times bearing).

Neighbour velocities arrive in the ranging messages (pocket IV-A); the goal is an object
with zero velocity whose range the drone is told (a UWB anchor at the goal or the
mocap-derived distance). Bad input (NaN, inf, not a number) is counted per object and that
object's update is skipped; the agent keeps flying on its last estimates. A finite negative
range is not bad input: DS-TWR noise (sigma ~0.25 m, pocket III-A) makes the measured range of
two drones a few centimetres apart negative; it is used as 0 m ("touching", so the collision
guard sees it), counted in ``negative_ranges``, as the training data's ranges are |d + noise|.
"""
import math

from onboard.core.settings import (BOOLEAN, NON_NEGATIVE, POSITIVE, ConfigError, checked, int_at_least, one_of,
                                   within)
from onboard.estimators.particle_filter import PfInputError, make_filter
from onboard.estimators.particle_filter import checked_config as pf_checked_config
from onboard.swarm import actions as act_mod
from onboard.swarm.bearing_net import BEARING_ROW, ORIENTATION_ROW, BearingInputError, decode, sample_bin

GOAL_ID = "goal"
GUARD = -1                         # last_action when the collision guard overrode the DQN
APPROACH = -2                      # last_action when the final approach to the goal replaced the DQN
GUARD_HOLD = -3                    # last_action when the guard hovered instead of backing off (guard_residual_m)
BRAKE = -4                         # last_action when the range-rate brake hovered (brake_ttc_s)
MODES = ("hybrid", "pf", "learned")
_INF = float("inf")

DEFAULTS = {
    "mode": "hybrid",
    "n_particles": 100,
    "warmup_steps": 10,            # estimator history before its estimate is trusted (pocket V-C.2 k)
    "pf_config": None,             # extra ParticleFilter settings
    "goal_pf_config": {},          # ParticleFilter settings for the goal track only (over pf_config)
    "far_obstacle_m": 3.0,         # DQN obstacle input when no neighbour is known yet (straight ahead)
    "obstacle_clip_m": 2.0,        # farther neighbours are shown to the DQN at this distance (as in training)
    # what the 10 % refreshed particles are spread around (pocket IV-B): "mean" = the circular mean of
    # the estimator's 18-bin outputs; "sample" = a bin drawn from each output distribution every step,
    # so a two-mode output (mirror ambiguity) proposes both modes and the ranges pick one
    "learned_refresh": "sample",
    # hybrid: start the filter around the learned estimate (pocket IV-B, "learned") or uninformed on a
    # ring at the measured range ("ring"), both once the estimator has warmup_steps of history, leaving
    # the learned estimate to the refreshed particles; or "ring-first": on a ring at the first range,
    # like the pure filter (no range is lost while the estimator warms up), refreshed around the learned
    # estimate from warmup_steps on
    "pf_init": "learned",
    # refresh only when the estimator is confident: the resultant length of both output
    # distributions (1 = one bin, ~0 = spread out) must reach this (0: always, as the paper)
    "min_confidence": 0.0,
    # collision guard on top of the DQN (not in the paper; 0 turns it off): when the nearest
    # neighbour is closer than guard_distance_m (estimate, or measured range), back off from it
    "guard_distance_m": 0.0,
    "guard_on_range": True,        # the guard also fires on the measured range (not only the estimate)
    "guard_speed_mps": 0.3,        # back-off speed the guard commands
    # ... and when the estimated relative motion brings the neighbour inside guard_distance_m within
    # this horizon (closest approach of the filter's relative position and velocity); 0: now only
    "guard_horizon_s": 0.0,
    # ... but hover instead of backing off while the neighbour's estimate disagrees with its ranges: the
    # filter's low-passed range residual (ParticleFilter lost_residual_m must be on) beyond this, m (0: off).
    # Backing off from a wrong estimate chases the neighbour: two drones can back off from each other in
    # the same direction (the bearing is unobservable while both move alike) and collide. Hovering leaves
    # the escape to the drone whose estimate the ranges confirm, and lets the relative motion resolve the
    # bearing
    "guard_residual_m": 0.0,
    "guard_hold_max_s": 2.0,       # ... for at most this long in a row, then it backs off anyway (no deadlock)
    # a neighbour whose last range is older than this (s) is not shown to the DQN nor to the guard: its ranging
    # stopped (it left, landed, or its radio died) and its last range, and the estimate only dead-reckoned
    # since, would trigger or suppress avoidance for good. Every neighbour is ranged at least once per 0.1 s
    # ranging / policy period (pocket V-B; the token ring several times), so the default is ten ranging
    # periods: ten lost in a row is a silent neighbour, not packet loss (the member's uwb_timeout_us engages
    # the failsafe after the same 1 s without any neighbour range). Counted in stale_neighbour_steps
    "range_max_age_s": 1.0,
    # range-rate brake (not in the paper; 0 turns it off): hover when a neighbour's ranges alone (least-squares
    # rate over brake_window_s, no bearing needed) say it closes faster than brake_min_closing_mps and
    # contact comes within brake_ttc_s
    "brake_ttc_s": 0.0,
    "brake_window_s": 1.0,
    "brake_min_closing_mps": 0.4,
    "brake_min_samples": 6,
    # detour (not in the paper; 0 turns it off): the DQN alone hovers in front of a neighbour parked
    # between it and its goal (a local minimum of its avoidance). When the estimated goal distance has not shrunk by stuck_progress_m
    # within stuck_window_s (and the goal is farther than detour_min_goal_m), the DQN is shown its goal
    # rotated by detour_angle_deg away from the nearest neighbour's side for detour_s
    "stuck_window_s": 0.0,
    "stuck_progress_m": 0.3,
    "detour_s": 4.0,
    "detour_angle_deg": 60.0,
    "detour_min_goal_m": 0.4,
    # a range-only posterior that has not resolved the bearing yet (a ring of particles, at the start of a
    # flight) has its weighted mean near the drone; the DQN and the guard then see the neighbour as if on
    # top of it and flee in a random direction. When the estimate is shorter than this fraction of the measured range, the neighbour is
    # placed at the measured range along the estimate's direction for the DQN and the guard
    # (not in the paper; 0 turns it off)
    "collapsed_estimate_fraction": 0.0,
    # the same for the goal (not in the paper; 0 turns it off): a drone that hovers near its goal on a ring
    # posterior (estimate near the drone, so the DQN and the final approach see the goal as reached) never
    # moves, so its ranges never resolve the bearing. When the goal estimate is shorter than this fraction of the smoothed
    # goal range, it is shown at that range along the estimate's direction: the drone flies, the ranges
    # change, the bearing resolves
    "collapsed_goal_fraction": 0.0,
    "range_smoothing_s": 1.0,      # time constant of the smoothed range (first-order low-pass), s
    # ... only beyond this smoothed range: a drone at its goal measures |d + e| ~ 0.2-0.3 m (folded UWB
    # noise, sigma 0.25 m) while its estimate is rightly a few cm
    "collapsed_goal_min_m": 0.3,
    # final approach (not in the paper; 0 turns it off): inside this estimated goal distance the
    # velocity setpoint is approach_gain_per_s * goal estimate, capped at approach_speed_mps, instead of
    # the DQN's discrete accelerations (trained to a 0.15 m radius on its estimate, the DQN can hover short
    # of a goal whose range-only posterior shrinks towards the drone)
    "approach_radius_m": 0.0,
    "approach_gain_per_s": 1.0,
    "approach_speed_mps": 0.3,
}
REFRESH_MODES = ("mean", "sample")
PF_INITS = ("learned", "ring", "ring-first")


def _at_range_if_collapsed(est, range_m, fraction):
    """``est`` (x_m, y_m, yaw_rad) moved out to ``range_m`` along its direction when it is shorter than
    ``fraction`` of that range (an unresolved ring posterior, mean near the drone); else ``est`` itself."""
    d_m = math.sqrt(est[0] * est[0] + est[1] * est[1])
    if 0.0 < d_m < fraction * range_m:
        k = range_m / d_m
        return (est[0] * k, est[1] * k, est[2])
    return est


class Track:
    """What the agent knows about one object: recurrent state, filter, last estimate."""

    def __init__(self, net, pf):
        self.h = net.new_state()
        self.pf = pf
        self.steps = 0
        self.range_m = None
        self.learned = None            # (bearing_rad, rel_yaw_rad)
        self.probs = None              # (bearing bins, orientation bins) of the last estimator step
        self.v_obj = (0.0, 0.0)        # the object's last reported velocity (its own frame, m/s)
        self.est = None                # (x_m, y_m, yaw_rad) in the own body frame
        self.last_us = None
        self.last_range_us = None      # when the last range arrived (us)
        self.last_net_us = None        # the estimator's dt is the time since its previous input
        self.net_steps = 0             # estimator inputs so far (its history length)
        self.rejected = 0
        self.time_faults = 0           # ... of them without a finite time or stamped before the last input
        self.negative_ranges = 0
        self.range_lp_m = None         # low-passed range (range_smoothing_s), m
        self.recent_ranges = []        # (time_us, range_m) of the last brake_window_s (range-rate brake)


# value ranges of the settings (onboard.core.settings rules; checked_config)
SETTING_RANGES = dict(
    {"mode": one_of(*MODES), "pf_init": one_of(*PF_INITS), "learned_refresh": one_of(*REFRESH_MODES),
     "range_smoothing_s": POSITIVE, "brake_window_s": POSITIVE, "range_max_age_s": POSITIVE,
     "min_confidence": within(0.0, 1.0), "collapsed_estimate_fraction": within(0.0, 1.0),
     "collapsed_goal_fraction": within(0.0, 1.0),
     "warmup_steps": int_at_least(0), "brake_min_samples": int_at_least(0), "guard_on_range": BOOLEAN,
     # ParticleFilter settings (checked by the filter's own rules in checked_config)
     "pf_config": ("a table of ParticleFilter settings or null", lambda v: v is None or isinstance(v, dict)),
     "goal_pf_config": ("a table of ParticleFilter settings or null", lambda v: v is None or isinstance(v, dict))},
    **{key: NON_NEGATIVE for key in (
        "far_obstacle_m", "obstacle_clip_m", "guard_distance_m", "guard_speed_mps", "guard_horizon_s",
        "guard_residual_m", "guard_hold_max_s", "brake_ttc_s", "brake_min_closing_mps", "stuck_window_s",
        "stuck_progress_m", "detour_s", "detour_min_goal_m", "collapsed_goal_min_m", "approach_radius_m",
        "approach_gain_per_s", "approach_speed_mps")})


def checked_config(config=None):
    """DEFAULTS updated with ``config``, checked by ``onboard.core.settings.checked``: ConfigError (a ValueError)
    naming the setting on an unknown key, a wrong type, a choice outside its choices, a number outside its
    range, or a particle-filter setting (pf_config, with goal_pf_config over it for the goal) the filter
    rejects."""
    cfg = checked(DEFAULTS, SETTING_RANGES, config, "SwarmAgent")
    pf_cfg = dict(cfg["pf_config"] or {}, n_particles=cfg["n_particles"])
    for name, extra in (("pf_config", {}), ("goal_pf_config", cfg["goal_pf_config"] or {})):
        try:
            pf_checked_config(dict(pf_cfg, **extra))
        except (ValueError, TypeError) as exc:
            raise ConfigError("SwarmAgent setting %s: %s" % (name, exc))
    return cfg


class SwarmAgent:
    """``net``: the learned bearing estimator (``bearing_net.BearingNet`` or ``BearingPolicy``: ``new_state()``
    and ``step_probs(h, x)``)."""

    def __init__(self, policy, net, draws, config=None, kernels=None):
        cfg = checked_config(config)
        self.cfg = cfg
        self.policy = policy
        self.net = net
        self.draws = draws
        self.kernels = kernels
        self.tracks = {}
        self.setpoint_body_mps = (0.0, 0.0)
        self.last_action = act_mod.SLOW_DOWN
        self.last_us = None
        self.steps = 0
        self.time_faults = 0            # policy steps refused: their time was not finite or before the last one's
        self.rejected_steps = 0         # policy steps refused: the own velocity was not two finite numbers
        self.guard_overrides = 0
        self.guard_holds = 0            # policy steps the guard hovered (guard_residual_m)
        self.brakes = 0                 # policy steps the range-rate brake hovered (brake_ttc_s)
        self.stale_neighbours = 0       # neighbours left out at the last policy step: range older than range_max_age_s
        self.stale_neighbour_steps = 0  # ... summed over the policy steps
        self._hold_since_us = None      # when the present run of guard holds began
        self.detours = 0
        self.approach_steps = 0
        self.collapsed_goal_steps = 0    # policy steps the goal estimate was shown at the smoothed range
        self._progress_m = None         # goal distance (estimate) the progress is measured from
        self._progress_us = None        # ... and when it was last beaten
        self._detour_until_us = None
        self._detour_rad = 0.0

    def _track(self, obj_id):
        t = self.tracks.get(obj_id)
        if t is None:
            pf_cfg = dict(self.cfg["pf_config"] or {})
            if obj_id == GOAL_ID:
                pf_cfg.update(self.cfg["goal_pf_config"] or {})
            pf_cfg["n_particles"] = self.cfg["n_particles"]
            t = Track(self.net, make_filter(pf_cfg, kernels=self.kernels))
            self.tracks[obj_id] = t
        return t

    def forget(self, obj_id):
        """Drop what is known about an object (a new goal, a neighbour that left): its recurrent
        state, particles and estimate start afresh at its next range."""
        self.tracks.pop(obj_id, None)
        if obj_id == GOAL_ID:
            self._progress_m = self._progress_us = self._detour_until_us = None

    def observe(self, now_us, obj_id, range_m, v_own_body_mps, v_obj_body_mps, estimator_input=True):
        """Update one object's estimate from a range (None on dropout) and velocities.

        The object's velocity (its own frame, m/s) comes with its range in the ranging message; on a
        dropout (range_m None) v_obj_body_mps is ignored (may be None) and its last reported velocity
        is held. Every range steps the filter; the learned estimator takes only the ranges marked
        ``estimator_input``: it was trained on one input per policy period (0.1 s, pocket V-B, its dt
        input constant), and stepped per range (a 2-drone token ring ranges a pair ~7 times per period)
        it reads each step as a period of motion (replayed flights: 0.31 m / 28 deg vs 0.30 m / 13 deg
        fed once per period). Callers with several ranges in a period mark the last one."""
        t = self._track(obj_id)
        if range_m is not None and not (isinstance(range_m, (int, float)) and not isinstance(range_m, bool)
                                        and range_m == range_m and range_m != _INF and range_m != -_INF):
            t.rejected += 1
            return t.est
        if not act_mod.finite_number(now_us):
            t.rejected += 1                  # no time to step to (None, text, NaN): nothing is applied
            t.time_faults += 1
            return t.est
        latest_us = t.last_us
        for us in (t.last_range_us, t.last_net_us):
            if us is not None and (latest_us is None or us > latest_us):
                latest_us = us
        if latest_us is not None and now_us < latest_us:
            # a range stamped before this track's last input: its filter cannot step back in time, and
            # applied it would move the smoothed range and the brake's window backwards (dt < 0)
            t.rejected += 1
            t.time_faults += 1
            return t.est
        # what a refused update must leave as it was (the filter leaves its particles untouched itself)
        saved = dict(t.__dict__)
        saved_ranges = list(t.recent_ranges)
        if range_m is not None and range_m < 0.0:
            t.negative_ranges += 1
            range_m = 0.0
        dt_s = 0.0 if t.last_range_us is None else (now_us - t.last_range_us) * 1e-6
        net_dt_s = 0.0 if t.last_net_us is None else (now_us - t.last_net_us) * 1e-6
        mode = self.cfg["mode"]
        net_due = False
        try:
            if range_m is not None:
                x = (net_dt_s, range_m, v_own_body_mps[0], v_own_body_mps[1], v_obj_body_mps[0], v_obj_body_mps[1])
                # the pure filter never reads the learned estimate: skip the recurrent step (a fifth of a
                # flight's compute); so does a range that is not the period's estimator input. The inputs
                # are checked before anything is stored either way
                net_due = mode != "pf" and estimator_input
                if not net_due:
                    for v in x:
                        if type(v) is float and v - v == 0.0:       # finite (inf - inf, nan - nan: nan)
                            continue
                        v = float(v)
                        if v != v or v == _INF or v == -_INF:
                            raise ValueError("non-finite input %r" % (x,))
                else:
                    h, probs = self.net.step_probs(t.h, x)
                    t.h = h
                    angles_rad = decode(probs)[0]            # both distributions in one call
                    t.learned = (float(angles_rad[BEARING_ROW]), float(angles_rad[ORIENTATION_ROW]))
                    t.probs = (probs[BEARING_ROW], probs[ORIENTATION_ROW])
                    t.last_net_us = now_us
                    t.net_steps += 1
                t.range_m = float(range_m)
                if t.range_lp_m is None:
                    t.range_lp_m = t.range_m
                else:
                    a = dt_s / (self.cfg["range_smoothing_s"] + dt_s)
                    t.range_lp_m += a * (t.range_m - t.range_lp_m)
                t.last_range_us = now_us
                t.v_obj = (float(v_obj_body_mps[0]), float(v_obj_body_mps[1]))
                if self.cfg["brake_ttc_s"] > 0.0 and obj_id != GOAL_ID:
                    t.recent_ranges.append((now_us, t.range_m))
                    oldest_us = now_us - int(self.cfg["brake_window_s"] * 1e6)
                    while t.recent_ranges[0][0] < oldest_us:
                        t.recent_ranges.pop(0)
            else:
                # no ranging message this period, so no fresh peer velocity either: the object keeps
                # moving at its last reported velocity (propagating it as if it stood still loses
                # dt of its motion per dropout)
                v_obj_body_mps = t.v_obj
            t.steps += 1
            trusted = t.net_steps > self.cfg["warmup_steps"]
            if mode == "learned" or (mode == "hybrid" and not t.pf.initialized):
                if t.learned is not None and t.range_m is not None:
                    b = t.learned[0]
                    t.est = (t.range_m * math.cos(b), t.range_m * math.sin(b), t.learned[1])
                if mode == "hybrid" and range_m is not None and (trusted or self.cfg["pf_init"] == "ring-first"):
                    t.pf.initialize(now_us, range_m, self.draws,
                                    learned=t.learned if self.cfg["pf_init"] == "learned" else None)
            elif mode == "pf" and not t.pf.initialized:
                if range_m is not None:
                    t.pf.initialize(now_us, range_m, self.draws)     # no estimate until its first step
            else:
                learned = None
                if mode == "hybrid" and range_m is not None and trusted and net_due:
                    # refresh around a fresh learned estimate only (once per estimator step, not per range)
                    learned = self._proposal(t)
                t.est = t.pf.step(now_us, v_own_body_mps, v_obj_body_mps, range_m, self.draws, learned=learned)
        except (PfInputError, BearingInputError, TypeError, ValueError):
            t.__dict__.update(saved)
            t.recent_ranges = saved_ranges
            t.rejected += 1
            return t.est
        t.last_us = now_us
        return t.est

    def _proposal(self, t):
        """(bearing_rad, rel_yaw_rad) the refreshed particles are spread around this step (None: no refresh)."""
        if self.cfg["min_confidence"] > 0.0 and t.probs is not None:
            conf = min(float(decode(t.probs[0])[1]), float(decode(t.probs[1])[1]))
            if conf < self.cfg["min_confidence"]:
                return None
        if self.cfg["learned_refresh"] == "mean" or t.probs is None:
            return t.learned
        u = self.draws.uniforms(2)
        return (sample_bin(t.probs[0], float(u[0])), sample_bin(t.probs[1], float(u[1])))

    def _detour_goal(self, now_us, gx_m, gy_m, d_goal_m, near):
        """The goal vector (own body frame, m; d_goal_m its length) the DQN is shown: the estimate, or
        while a detour runs that vector rotated away from the nearest neighbour (see stuck_window_s)."""
        window_s = self.cfg["stuck_window_s"]
        if window_s <= 0.0:
            return gx_m, gy_m
        detouring = self._detour_until_us is not None and now_us < self._detour_until_us
        if not detouring:
            if self._progress_us is None or d_goal_m < self._progress_m - self.cfg["stuck_progress_m"]:
                self._progress_m, self._progress_us = d_goal_m, now_us
            elif (now_us - self._progress_us) * 1e-6 > window_s and d_goal_m > self.cfg["detour_min_goal_m"]:
                side = 1.0
                if near is not None and near.est is not None:
                    # neighbour on the goal's positive-angle side (cross > 0): turn the other way
                    side = -1.0 if gx_m * near.est[1] - gy_m * near.est[0] > 0.0 else 1.0
                self._detour_rad = side * math.radians(self.cfg["detour_angle_deg"])
                self._detour_until_us = now_us + int(self.cfg["detour_s"] * 1e6)
                self._progress_m, self._progress_us = d_goal_m, self._detour_until_us
                self.detours += 1
                detouring = True
        if not detouring:
            return gx_m, gy_m
        c, s = math.cos(self._detour_rad), math.sin(self._detour_rad)
        return c * gx_m - s * gy_m, s * gx_m + c * gy_m

    def _closing(self, now_us):
        """Whether a neighbour's ranges alone say contact within brake_ttc_s (range-rate brake)."""
        ttc_s = self.cfg["brake_ttc_s"]
        if ttc_s <= 0.0:
            return False
        oldest_us = now_us - int(self.cfg["brake_window_s"] * 1e6)
        for obj_id, t in self.tracks.items():
            pts = t.recent_ranges
            if obj_id == GOAL_ID or not pts or len(pts) < self.cfg["brake_min_samples"]:
                continue
            if pts[-1][0] < oldest_us:
                # no range within the window (a neighbour gone silent): its old fit, extrapolated, only
                # ever closes in and would hold the brake for good
                continue
            n = len(pts)
            ts = [p[0] for p in pts]
            rs = [p[1] for p in pts]
            tm = sum(ts) / n
            rm = sum(rs) / n
            dts = [t - tm for t in ts]
            stt = sum([d * d for d in dts])
            if stt <= 0.0:
                continue
            rate_mps = sum([d * (r - rm) for d, r in zip(dts, rs)]) / stt * 1e6
            if rate_mps > -self.cfg["brake_min_closing_mps"]:
                continue
            r_now_m = rm + rate_mps * (now_us - tm) * 1e-6          # the fitted range now
            if r_now_m < -rate_mps * ttc_s:
                return True
        return False

    def _guard_hold(self, now_us, near):
        """Whether the guard hovers this step instead of backing off (see guard_residual_m)."""
        limit_m = self.cfg["guard_residual_m"]
        if limit_m <= 0.0 or abs(near.pf.residual_lp_m) <= limit_m:
            self._hold_since_us = None
            return False
        if self._hold_since_us is None:
            self._hold_since_us = now_us
        return (now_us - self._hold_since_us) * 1e-6 < self.cfg["guard_hold_max_s"]

    def decide(self, now_us, v_own_body_mps):
        """DQN action from the current estimates; returns the new body-frame velocity setpoint (m/s).

        A time that is not a finite number, or one before the last step's, is a fault (counted in
        ``time_faults``): the setpoint is held and nothing changes (integrated over dt < 0, slowing down
        sped the drone up). An own velocity that is not two finite numbers (m/s) is refused the same way
        (counted in ``rejected_steps``). A neighbour whose last range is older than ``range_max_age_s`` is
        left out of the DQN's input and the guard (counted in ``stale_neighbours`` /
        ``stale_neighbour_steps``)."""
        if not act_mod.finite_number(now_us) or (self.last_us is not None and now_us < self.last_us):
            self.time_faults += 1
            return self.setpoint_body_mps
        try:
            v_ok = act_mod.finite_number(v_own_body_mps[0]) and act_mod.finite_number(v_own_body_mps[1])
        except (TypeError, IndexError, KeyError):
            v_ok = False
        if not v_ok:
            self.rejected_steps += 1
            return self.setpoint_body_mps
        dt_s = 0.1 if self.last_us is None else (now_us - self.last_us) * 1e-6
        goal = self.tracks.get(GOAL_ID)
        g = goal.est if goal is not None and goal.est is not None else None
        d_goal_m = math.sqrt(g[0] * g[0] + g[1] * g[1]) if g is not None else None
        if d_goal_m is not None and goal.range_lp_m is not None and goal.range_lp_m > self.cfg["collapsed_goal_min_m"]:
            shown = _at_range_if_collapsed(g, goal.range_lp_m, self.cfg["collapsed_goal_fraction"])
            if shown is not g:
                g, d_goal_m = shown, goal.range_lp_m
                self.collapsed_goal_steps += 1
        near = None
        max_age_us = int(self.cfg["range_max_age_s"] * 1e6)
        stale = 0
        for obj_id, t in self.tracks.items():
            if obj_id == GOAL_ID or t.est is None or t.range_m is None:
                continue
            if t.last_range_us is not None and now_us - t.last_range_us > max_age_us:
                stale += 1                                 # its ranging stopped: see range_max_age_s
                continue
            if near is None or t.range_m < near.range_m:
                near = t
        self.stale_neighbours = stale
        self.stale_neighbour_steps += stale
        if g is None:
            action = act_mod.SLOW_DOWN                    # nothing to fly to yet: hold still
        else:
            o = near.est if near is not None else (self.cfg["far_obstacle_m"], 0.0, 0.0)
            if near is not None and near.range_m is not None:
                o = _at_range_if_collapsed(o, near.range_m, self.cfg["collapsed_estimate_fraction"])
            ox, oy = o[0], o[1]
            d_o = math.sqrt(ox * ox + oy * oy)
            clip = self.cfg["obstacle_clip_m"]
            if d_o > clip:
                ox, oy = ox * clip / d_o, oy * clip / d_o
            gx, gy = self._detour_goal(now_us, g[0], g[1], d_goal_m, near)
            obs = (v_own_body_mps[0], v_own_body_mps[1], gx, gy, ox, oy, dt_s)
            action = self.policy.act(obs)
            d_g = d_o
            px, py = o[0], o[1]                  # where to back off from
            if near is not None and self.cfg["guard_on_range"] and near.range_m is not None:
                d_g = min(d_o, near.range_m)
            if near is not None and self.cfg["guard_horizon_s"] > 0.0:
                # closest approach within the horizon: p + v_rel t, v_rel = R(yaw) v_peer - v_own (pocket IV-B)
                c, sn = math.cos(o[2]), math.sin(o[2])
                vx = c * near.v_obj[0] - sn * near.v_obj[1] - v_own_body_mps[0]
                vy = sn * near.v_obj[0] + c * near.v_obj[1] - v_own_body_mps[1]
                vv = vx * vx + vy * vy
                if vv > 0.0:
                    tc = min(self.cfg["guard_horizon_s"], max(0.0, -(o[0] * vx + o[1] * vy) / vv))
                    cx, cy = o[0] + vx * tc, o[1] + vy * tc
                    d_c = math.sqrt(cx * cx + cy * cy)
                    if d_c < d_g:
                        d_g = d_c
                        if d_c > 0.0:
                            px, py = cx, cy
            d_p = math.sqrt(px * px + py * py)
            if near is not None and d_g < self.cfg["guard_distance_m"]:
                # safety layer: back off at guard_speed straight away from the neighbour's estimated
                # (or predicted closest) position (a setpoint, not a 1 m/s^2 action: it must brake within
                # a few periods) - or hover while that estimate disagrees with the ranges, or when it is
                # on the drone itself (0 m: no direction to back off in)
                self.guard_overrides += 1
                if self._guard_hold(now_us, near):
                    self.guard_holds += 1
                    return self._command(now_us, GUARD_HOLD, (0.0, 0.0))
                if d_p <= 0.0:
                    return self._command(now_us, GUARD, (0.0, 0.0))
                k = -self.cfg["guard_speed_mps"] / d_p
                return self._command(now_us, GUARD, (k * px, k * py))
        self._hold_since_us = None
        if self._closing(now_us):
            self.brakes += 1
            return self._command(now_us, BRAKE, (0.0, 0.0))
        if d_goal_m is not None and d_goal_m < self.cfg["approach_radius_m"]:
            speed = min(self.cfg["approach_speed_mps"], self.cfg["approach_gain_per_s"] * d_goal_m)
            k = speed / d_goal_m if d_goal_m > 0.0 else 0.0
            self.approach_steps += 1
            return self._command(now_us, APPROACH, (k * g[0], k * g[1]))
        return self._command(now_us, action, act_mod.update_setpoint(self.setpoint_body_mps[0],
                                                                    self.setpoint_body_mps[1], action, dt_s))

    def _command(self, now_us, action, setpoint_body_mps):
        """Record this policy step's action (a DQN action or GUARD, GUARD_HOLD, BRAKE, APPROACH) and its
        body-frame velocity setpoint (m/s), which it returns."""
        self.last_action = action
        self.setpoint_body_mps = setpoint_body_mps
        self.last_us = now_us
        self.steps += 1
        return setpoint_body_mps
