"""Seeded runs of the simulated WAM-V: the boat EKF (``onboard.estimators.boat_ekf``) against it
(:func:`ekf_run`), and a boat log for the model fit (:func:`simulate_log`).

:func:`ekf_run` drives the truth vessel (``harness.sim.wamv``) with the seeded driving pattern, feeds
the EKF the applied thrusts at the simulation rate (predict, 100 Hz), GNSS fixes (4 Hz), headings and
gyro yaw rates from ``harness.sim.sensors.wamv_sensors``, and records the estimation error, the NEES
e^T P^-1 e of the full state once per ``record_s`` and the NIS of every fused GNSS fix. In "paper" mode
with the EKF's process noise (:func:`paper_noise_settings`) the filter's models are exact, so NEES and
NIS follow chi-square distributions with 6 and 2 degrees of freedom (the consistency tests). The
start state is drawn from the EKF's initial covariance around ``start``, as the filter assumes.
Randomness: ``RunRandom(seed)`` streams "wamv", "pattern", "start", "gnss", "heading", "gyro", "bad" (the
bad inputs :func:`ekf_run` offers when asked; they change nothing else).
"""
import math

import numpy as np

from harness.sim.rng import RunRandom
from harness.sim.sensors.wamv_sensors import Gnss, Heading, YawGyro
from harness.sim.wamv import Wamv, drive_pattern, thrust_map_settings
from onboard.core.angles import wrap_pi
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import BoatEkf
from onboard.vessel import model as vm
from onboard.vessel.samples import HeadingSample, PositionSample, ThrustSample, YawRateSample
from onboard.vessel.thrust_map import ThrustMap


def paper_noise_settings(ekf_cfg):
    """The ``paper.noise`` block of the truth vessel that matches a boat EKF's process noise."""
    return {"yaw_rad_per_sqrt_s": ekf_cfg["yaw_noise_rad_per_sqrt_s"],
            "yaw_rate_radps_per_sqrt_s": ekf_cfg["yaw_rate_noise_radps_per_sqrt_s"],
            "pos_m_per_sqrt_s": ekf_cfg["pos_noise_m_per_sqrt_s"],
            "surge_mps_per_sqrt_s": ekf_cfg["surge_noise_mps_per_sqrt_s"],
            "sway_mps_per_sqrt_s": ekf_cfg["sway_noise_mps_per_sqrt_s"]}


def state_error(x_true, x_est):
    """x_true - x_est with the yaw difference wrapped."""
    e = [x_true[i] - x_est[i] for i in range(vm.N_STATE)]
    e[vm.YAW] = wrap_pi(e[vm.YAW])
    return e


def nees(x_true, x_est, P):
    """e^T P^-1 e of the state error (P flat 6x6)."""
    e = np.array(state_error(x_true, x_est))
    return float(e @ np.linalg.solve(np.array(P).reshape(vm.N_STATE, vm.N_STATE), e))


BAD_INPUT_KINDS = ("nan_position", "inf_heading", "nan_yaw_rate", "nan_thrust", "old_position", "old_heading",
                   "old_yaw_rate", "old_thrust")


def bad_inputs(now_us, rng, older_us=(1000, 200000)):
    """One sample of each of ``BAD_INPUT_KINDS`` at the filter's time ``now_us``: non-finite values
    (NaN/inf in a fix, a heading, a yaw rate, a thrust) and samples stamped ``older_us`` (uniform, us)
    before it (out of order; a thrust not later than the filter). [(kind, method name, sample)]."""
    nan, inf = float("nan"), float("inf")
    old = now_us - int(rng.integers(older_us[0], older_us[1]))
    north, east = (float(v) for v in rng.normal(0.0, 10.0, 2))
    return [("nan_position", "update_position", PositionSample(now_us, (north, nan))),
            ("inf_heading", "update_heading", HeadingSample(now_us, inf)),
            ("nan_yaw_rate", "update_yaw_rate", YawRateSample(now_us, nan)),
            ("nan_thrust", "predict", ThrustSample(now_us + 10000, nan, 100.0)),
            ("old_position", "update_position", PositionSample(old, (north, east))),
            ("old_heading", "update_heading", HeadingSample(old, float(rng.uniform(-3.0, 3.0)))),
            ("old_yaw_rate", "update_yaw_rate", YawRateSample(old, float(rng.normal(0.0, 0.1)))),
            ("old_thrust", "predict", ThrustSample(now_us, 50.0, 50.0))]


def offer_bad_inputs(filt, samples):
    """Offer ``samples`` (:func:`bad_inputs`) to the filter one by one; (offered, refused: raised
    EstimatorInputError, counted in ``rejected`` and every other counter, the state, covariance, time and
    held thrusts unchanged)."""
    refused = 0
    for _kind, method, sample in samples:
        before = (list(filt.x), list(filt.P), filt.time_us, list(filt.thrust_n), filt.counters())
        try:
            getattr(filt, method)(sample)
        except EstimatorInputError:
            after = filt.counters()
            ok_counts = after.pop("rejected") == before[4].pop("rejected") + 1 and after == before[4]
            if ok_counts and (filt.x, filt.P, filt.time_us, filt.thrust_n) == before[:4]:
                refused += 1
    return len(samples), refused


def ekf_run(seed, duration_s=20.0, mode="paper", ekf=None, wamv=None, gnss=None, heading=None, gyro=None,
            start=None, record_s=1.0, bad_every_s=None):
    """Run the EKF for ``duration_s`` simulated seconds; returns a dict of numpy arrays and counters:
    ``t_s`` (record times), ``nees``, ``err`` (state errors, model slots), ``sigma`` (1 sigma per slot),
    ``min_eig`` and ``asym`` (smallest eigenvalue and largest |P - P^T| of the covariance), ``nis_gnss``
    (NIS of each fused fix), ``gated_t_s``, ``counters`` (the EKF's), ``ekf`` (the filter).
    ``ekf``/``wamv``/``gnss``/``heading``/``gyro``: settings overrides; ``start``: the truth start
    block's mean (defaults to 0 at 1 m/s north). In paper mode the truth uses the EKF's constants and,
    unless ``wamv`` sets it, its process noise. ``bad_every_s``: every that many simulated seconds (after
    the step's measurements) the filter is offered :func:`bad_inputs` (stream "bad"), which leave it as it
    was, so the run is the same with or without them; ``bad_offered`` / ``bad_refused`` count them (refused:
    raised, counted, state unchanged; :func:`offer_bad_inputs`)."""
    rr = RunRandom(seed)
    filt = BoatEkf(ekf)
    cfg = filt.cfg
    truth_cfg = {"mode": mode}
    if mode == "paper":
        truth_cfg["paper"] = dict(cfg["model"], noise=paper_noise_settings(cfg))
    for key, value in (wamv or {}).items():
        truth_cfg[key] = dict(truth_cfg.get(key, {}), **value) if isinstance(value, dict) else value
    # start state: mean + N(0, P0) (the filter starts at the mean)
    mean = [0.0] * vm.N_STATE
    mean[vm.SURGE] = 1.0
    for slot, value in (start or {}).items():
        mean[slot] = value
    sig = filt.init_sigmas()
    draw = rr.stream("start").standard_normal(vm.N_STATE)
    x0 = [mean[i] + sig[i] * float(draw[i]) for i in range(vm.N_STATE)]
    truth_cfg["start"] = {"north_m": x0[vm.NORTH], "east_m": x0[vm.EAST], "yaw_deg": math.degrees(x0[vm.YAW]),
                          "yaw_rate_dps": math.degrees(x0[vm.YAW_RATE]), "surge_mps": x0[vm.SURGE],
                          "sway_mps": x0[vm.SWAY]}
    boat = Wamv(truth_cfg, rr.stream("wamv"))
    sensors = [(Gnss(boat, rr.stream("gnss"), dict({"outlier_prob": 0.0, "dropout_prob": 0.0}, **(gnss or {}))),
                "gnss"),
               (Heading(boat, rr.stream("heading"), heading), "heading"),
               (YawGyro(boat, rr.stream("gyro"), gyro), "gyro")]
    commands = drive_pattern(duration_s, boat.dt_s, rr.stream("pattern"))
    filt.initialize(0, mean)
    record_us = int(round(record_s * 1e6))
    next_record_us = 0
    bad_us = int(round(bad_every_s * 1e6)) if bad_every_s else None
    next_bad_us = bad_us
    bad_rng = rr.stream("bad")
    bad = [0, 0]
    out = {"t_s": [], "nees": [], "err": [], "sigma": [], "min_eig": [], "asym": [], "nis_gnss": [], "gated_t_s": []}
    for k in range(len(commands)):
        boat.command(*commands[k])
        boat.step()
        now = boat.time_us
        filt.predict(ThrustSample(now, *boat.applied_thrust_n))
        for sensor, kind in sensors:
            sample = sensor.poll(now)
            if sample is None:
                continue
            try:
                if kind == "gnss":
                    fused = filt.update_position(sample)
                    if fused:
                        out["nis_gnss"].append(filt.last_nis)
                    else:
                        out["gated_t_s"].append(now * 1e-6)
                elif kind == "heading":
                    filt.update_heading(sample)
                else:
                    filt.update_yaw_rate(sample)
            except EstimatorInputError:
                pass
        if bad_us is not None and now >= next_bad_us and filt.initialized:
            next_bad_us += bad_us
            offered, refused = offer_bad_inputs(filt, bad_inputs(now, bad_rng))
            bad[0] += offered
            bad[1] += refused
        if now >= next_record_us:
            next_record_us += record_us
            x_true = boat.state()
            out["t_s"].append(now * 1e-6)
            out["nees"].append(nees(x_true, filt.x, filt.P))
            out["err"].append(state_error(x_true, filt.x))
            out["sigma"].append([math.sqrt(filt.P[i * vm.N_STATE + i]) for i in range(vm.N_STATE)])
            P = np.array(filt.P).reshape(vm.N_STATE, vm.N_STATE)
            out["min_eig"].append(float(np.linalg.eigvalsh(P).min()))
            out["asym"].append(float(np.abs(P - P.T).max()))
    rec = {key: np.array(value) for key, value in out.items()}
    rec["counters"] = filt.counters()
    rec["bad_offered"], rec["bad_refused"] = bad
    rec["ekf"] = filt
    return rec


def simulate_log(seed, duration_s, wamv=None, gnss=None, heading=None, gyro=None, thrust_map=None):
    """A boat log (the columns of ``harness.training.boat_fit``, one row per simulation step) from the
    truth vessel driven by the seeded pattern, plus ``truth`` (rows, 6) states and ``thrust_applied_n``
    (rows, 2). Row i: sensors at t_i; the thrusts the boat's own thrust map (``onboard.vessel.
    thrust_map.ThrustMap`` with ``thrust_map`` settings, default the truth's thruster lag and table)
    gives for the commands held over [t_i, t_i+1). In paper mode that equals the applied thrust; in rich
    mode the truth's dead band and efficiencies make them differ. Heading and gyro are sampled every row."""
    rr = RunRandom(seed)
    boat = Wamv(wamv, rr.stream("wamv"))
    tmap = ThrustMap(thrust_map if thrust_map is not None else thrust_map_settings(boat.cfg["thrusters"]))
    rate = 1.0 / boat.dt_s
    gnss_s = Gnss(boat, rr.stream("gnss"), gnss)
    head_s = Heading(boat, rr.stream("heading"), dict(heading or {}, rate_hz=rate))
    gyro_s = YawGyro(boat, rr.stream("gyro"), dict(gyro or {}, rate_hz=rate))
    commands = drive_pattern(duration_s, boat.dt_s, rr.stream("pattern"))
    n = len(commands)
    cols = {k: np.full(n, np.nan) for k in ("time_s", "thrust_left_n", "thrust_right_n", "gnss_north_m",
                                            "gnss_east_m", "yaw_rad", "yaw_rate_radps")}
    truth = np.empty((n, vm.N_STATE))
    applied = np.empty((n, 2))
    for i in range(n):
        now = boat.time_us
        cols["time_s"][i] = now * 1e-6
        truth[i] = boat.state()
        fix = gnss_s.poll(now)
        if fix is not None:
            cols["gnss_north_m"][i], cols["gnss_east_m"][i] = fix.pos_ne_m
        cols["yaw_rad"][i] = head_s.poll(now).yaw_rad
        cols["yaw_rate_radps"][i] = gyro_s.poll(now).yaw_rate_radps
        boat.command(*commands[i])
        cols["thrust_left_n"][i], cols["thrust_right_n"][i] = tmap.step(commands[i][0], commands[i][1], boat.dt_s)
        boat.step()
        applied[i] = boat.applied_thrust_n
    cols["truth"] = truth
    cols["thrust_applied_n"] = applied
    return cols
