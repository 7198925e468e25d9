"""Seeded runs of the simulated WAM-V: the boat EKF (``onboard.estimators.boat_ekf``) against it
(:func:`ekf_run`), and a boat log for the model fit (:func:`simulate_log`).

:func:`ekf_run` drives the truth vessel (``harness.sim.wamv``) with the seeded driving pattern, feeds
the EKF the applied thrusts at the simulation rate (predict, 100 Hz), GNSS fixes (4 Hz), headings and
gyro yaw rates from ``harness.sim.sensors.wamv_sensors``, and records the estimation error, the NEES
e^T P^-1 e of the full state once per ``record_s`` and the NIS of every fused GNSS fix. In "paper" mode
with the EKF's process noise (:func:`paper_noise_settings`) the filter's models are exact, so NEES and
NIS follow chi-square distributions with 6 and 2 degrees of freedom (the consistency tests). The
start state is drawn from the EKF's initial covariance around ``start``, as the filter assumes.
Randomness: ``RunRandom(seed)`` streams "wamv", "pattern", "start", "gnss", "heading", "gyro".
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
from onboard.vessel.samples import ThrustSample
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


def ekf_run(seed, duration_s=20.0, mode="paper", ekf=None, wamv=None, gnss=None, heading=None, gyro=None,
            start=None, record_s=1.0):
    """Run the EKF for ``duration_s`` simulated seconds; returns a dict of numpy arrays and counters:
    ``t_s`` (record times), ``nees``, ``err`` (state errors, model slots), ``sigma`` (1 sigma per slot),
    ``min_eig`` and ``asym`` (smallest eigenvalue and largest |P - P^T| of the covariance), ``nis_gnss``
    (NIS of each fused fix), ``gated_t_s``, ``counters`` (the EKF's), ``ekf`` (the filter).
    ``ekf``/``wamv``/``gnss``/``heading``/``gyro``: settings overrides; ``start``: the truth start
    block's mean (defaults to 0 at 1 m/s north). In paper mode the truth uses the EKF's constants and,
    unless ``wamv`` sets it, its process noise."""
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
