"""Scenario `ins-eskf`: strapdown INS + 15-state ESKF on a dozer trajectory (ag2u III-C, IV-A/B).

A dozer-like grading trajectory (straight legs, slerp attitude) is sampled at the
IMU rate; clean increments are derived from it (Algorithm 2), corrupted by the IMU
error model (eq. 10); the filter starts from erroneous initial conditions (eqs.
11-12) and fuses noisy aiding poses (eq. 13) at the aiding rate. It runs once per
noise setting of the paper (noise-less, sensor-fusion, extreme), on the simulated
clock, through the same ``predict(ImuSample)`` / ``update_pose(PoseSample)`` calls
a board's drivers make. Metrics: position/velocity/attitude/bias errors against
the truth, NEES and NIS, gated outliers; ``success``: every setting's estimate stayed
finite and the noise-less setting (when run) reconstructs the truth. Plots of the errors
with the filter's 3-sigma bounds, of the bias estimates, and of the trajectories. The log
(``log.mcap``) holds, per setting, every IMU sample and aiding pose the filter took, its
estimate and the truth at ``record_hz`` (also as Foxglove poses under ``/viz/<setting>/``).

The aiding sensor samples from t0 on (the first pose arrives with the first IMU
sample's interval start). Without it, the paper's 4-5 deg initial attitude errors act for
a whole aiding period through the second-order gravity term g (1 - cos tilt) that the
linear error model leaves out (~0.05 m/s^2 at 4 deg per axis), and the filter ends up
overconfident in the vertical channel (Monte Carlo ANEES ~24 instead of 15);
``aiding_at_start=False`` reproduces that.

``run_case`` is also what the Monte Carlo tests call.
"""
import math

import numpy as np

from harness.parallel import ordered_map
from harness.sim.clock import PRIORITY_SENSOR, SimClock
from harness.sim.rng import RunRandom
from harness.config import ANY_NUMBER, POSITIVE, RATE_HZ, ConfigError, non_empty_list, one_of, vector
from harness.metrics import rms
from harness.report.plots import figure, label
from harness.sim.sensors.ins_errors import (NOISE_SETTINGS, ImuErrors, aiding_pose, initial_conditions,
                                        noise_setting)
from harness.sim.trajectory import PROFILES, TrajectoryError, dozer_legs, generate, leg_samples, rotvec_of_dcm_array
from onboard.core.rotations import quat_from_euler
from onboard.core.samples import ImuSample, PoseSample
from onboard.impl import IMPLEMENTATIONS
from onboard.core.units import US_PER_S, hz_to_period_us
from onboard.estimators.eskf import N_STATE, make_eskf

DESCRIPTION = "strapdown INS + 15-state ESKF on a dozer trajectory under the ag2u noise settings"

DEFAULTS = {
    "settings": ["noise_less", "sensor_fusion", "extreme"],
    "duration_s": 120.0,
    "imu_rate_hz": 100,
    "aiding_rate_hz": 1,
    "record_hz": 10,
    "profile": "smooth",              # leg speed profile: smooth (minimum jerk) or linear (Algorithm 1 steps)
    "gyro_increments": "euler",       # euler (consistent with eq. 4a) or rotvec (physical gyro)
    "ic_mode": "random",              # IC errors drawn with the paper's values as 1 sigma, or "fixed" offsets
    "impl": "",                       # pure | cython | numpy; "" = $ONBOARD_IMPL (default pure)
    "legs": [],                       # [] = harness.sim.trajectory.dozer_legs(duration_s)
}

# a run of a few seconds (`run --reduced`): the three settings over 15 s of the dozer pattern
REDUCED = {"duration_s": 15.0}

# Floors keep the filter's covariances positive in the noise-less setting.
_MIN_POS_SIGMA_M = 1e-3
_MIN_VEL_SIGMA_MPS = 1e-3
_MIN_ANGLE_SIGMA_RAD = 1e-4
_MIN_ACCEL_BIAS_SIGMA_MPS2 = 1e-3


def filter_config(setting):
    """ESKF settings matching a noise setting (what the filter is told about the sensors)."""
    imu = setting["imu"]
    rad = math.radians
    return {
        "accel_noise_mps_per_sqrt_s": imu["accel_rw_mps_per_sqrt_s"],
        "gyro_noise_rad_per_sqrt_s": rad(imu["gyro_rw_dps_per_sqrt_s"]),
        "init_pos_sigma_m": [max(v, _MIN_POS_SIGMA_M) for v in setting["ic_pos_m"]],
        "init_vel_sigma_mps": [max(v, _MIN_VEL_SIGMA_MPS) for v in setting["ic_vel_mps"]],
        "init_att_sigma_rad": [max(rad(v), _MIN_ANGLE_SIGMA_RAD) for v in setting["ic_att_deg"]],
        "init_accel_bias_sigma_mps2": [max(imu["accel_bias_sigma_mps2"], _MIN_ACCEL_BIAS_SIGMA_MPS2)] * 3,
        "init_gyro_bias_sigma_radps": [max(rad(imu["gyro_bias_sigma_dps"]), _MIN_ANGLE_SIGMA_RAD)] * 3,
        "pose_pos_sigma_m": [max(v, _MIN_POS_SIGMA_M) for v in setting["aiding_pos_m"]],
        "pose_att_sigma_rad": [max(rad(v), _MIN_ANGLE_SIGMA_RAD) for v in setting["aiding_att_deg"]],
    }


def make_trajectory(config):
    legs = config["legs"] or dozer_legs(config["duration_s"])
    return generate(legs, config["imu_rate_hz"], config["profile"])


def run_case(traj, setting, random, impl=None, aiding_rate_hz=1, record_hz=10, ic_mode="random",
             gyro_increments="euler", imu_errors=None, filter_overrides=None, outliers=None,
             dropouts=(), aiding_at_start=True, log=None, on_progress=None):
    """Run the INS/ESKF once over ``traj`` under one noise ``setting``; returns the record dict.

    random: harness.sim.rng.RunRandom (streams "imu", "imu-noise", "ic", "aiding"). imu_errors: an
    ImuErrors to use instead of drawing one. outliers: {aiding time_us: (n_pos (3), n_att (3))}
    adds n times the innovation's 1-sigma, sqrt(P + R) per axis, to that aiding sample.
    dropouts: [(start_s, end_s)] windows without aiding. aiding_at_start: the aiding
    sensor also samples at t0 (see the module docstring). Records (at record_hz,
    after any update at the same time): error state e (truth minus estimate, NED
    attitude error as a rotation vector), 1-sigma of every state, NEES; NIS of every
    fused or gated aiding sample. log: None, or ``log(topic, time_us, message)`` (topics ``imu``,
    ``aiding/pose``, ``estimate``, ``truth``: every sample the filter takes, and at record_hz its
    NavState and the true pose). on_progress: None, or called with the simulated seconds run so far,
    once per simulated second.
    """
    cfg = filter_config(setting)
    cfg.update(filter_overrides or {})
    eskf = make_eskf(cfg, impl or None)
    dt_us = traj.dt_us
    dt_s = dt_us / US_PER_S
    dvel, dang = traj.clean_increments(gyro_increments=gyro_increments)
    if imu_errors is None:
        imu_errors = ImuErrors.draw(setting["imu"], random.stream("imu"))
    dvel_e, dang_e = imu_errors.apply(dvel, dang, dt_s, random.stream("imu-noise"))
    pos0, vel0, euler0, ic = initial_conditions(traj.pos_ned_m[0], traj.vel_ned_mps[0], traj.euler_rad[0],
                                                setting, random.stream("ic"), ic_mode)
    t0 = int(traj.t_us[0])
    eskf.initialize(t0, pos0, vel0, euler0)
    dvel_l = dvel_e.tolist()
    dang_l = dang_e.tolist()
    aid_rng = random.stream("aiding")
    outliers = outliers or {}
    rec = {"t_s": [], "err": [], "sigma": [], "nees": [], "nis": [], "nis_t_s": [], "gated_t_s": []}
    ba_true = imu_errors.accel_bias_mps2
    bg_true = imu_errors.gyro_bias_radps

    def imu_tick(t):
        k = (t - t0) // dt_us
        sample = ImuSample(t, dt_us, dvel_l[k - 1], dang_l[k - 1])
        eskf.predict(sample)
        if log is not None:
            log("imu", t, sample)

    def aiding_tick(t):
        k = (t - t0) // dt_us
        pos, euler = aiding_pose(traj.pos_ned_m[k], traj.euler_rad[k], setting, aid_rng)
        t_s = t / US_PER_S
        for start_s, end_s in dropouts:
            if start_s <= t_s < end_s:
                return
        if t in outliers:
            n_pos, n_att = outliers[t]
            pc = eskf.pose_covariance()
            r = [v * v for v in cfg["pose_pos_sigma_m"] + cfg["pose_att_sigma_rad"]]
            sig = [math.sqrt(pc[i * 6 + i] + r[i]) for i in range(6)]
            pos = [pos[i] + n_pos[i] * sig[i] for i in range(3)]
            euler = [euler[i] + n_att[i] * sig[3 + i] for i in range(3)]
        sample = PoseSample(t, pos, euler)
        fused = eskf.update_pose(sample)
        if log is not None:
            log("aiding/pose", t, sample)
        rec["nis"].append(eskf.last_nis)
        rec["nis_t_s"].append(t / US_PER_S)
        if not fused:
            rec["gated_t_s"].append(t / US_PER_S)

    def record(t):
        k = (t - t0) // dt_us
        st = eskf.get_state()
        P = np.array(st["P"]).reshape(N_STATE, N_STATE)
        R_est = np.array(st["D_ned_to_body"]).reshape(3, 3).T
        e = np.empty(N_STATE)
        e[0:3] = traj.pos_ned_m[k] - st["pos_ned_m"]
        e[3:6] = rotvec_of_dcm_array((traj.R_body_to_ned[k] @ R_est.T)[None])[0]
        e[6:9] = traj.vel_ned_mps[k] - st["vel_ned_mps"]
        e[9:12] = ba_true - st["accel_bias_mps2"]
        e[12:15] = bg_true - st["gyro_bias_radps"]
        rec["t_s"].append(t / US_PER_S)
        rec["err"].append(e)
        rec["sigma"].append(np.sqrt(np.maximum(np.diag(P), 0.0)))
        rec["nees"].append(float(e @ np.linalg.solve(P, e)))
        if log is not None:
            log("estimate", t, eskf.nav_state())
            log("truth", t, {"time_us": t, "pos_ned_m": traj.pos_ned_m[k].tolist(),
                             "vel_ned_mps": traj.vel_ned_mps[k].tolist(), "euler_rad": traj.euler_rad[k].tolist()})

    clock = SimClock(t0)
    clock.call_every(dt_us, imu_tick, start_us=t0 + dt_us, priority=PRIORITY_SENSOR)
    aid_start_us = t0 if aiding_at_start else t0 + hz_to_period_us(aiding_rate_hz)
    clock.call_every(hz_to_period_us(aiding_rate_hz), aiding_tick, start_us=aid_start_us,
                     priority=PRIORITY_SENSOR + 1)
    clock.call_every(hz_to_period_us(record_hz), record, start_us=t0, priority=PRIORITY_SENSOR + 2)
    end_us = int(traj.t_us[-1])
    t = t0
    while t < end_us:                       # one simulated second at a time, for the progress bar
        t = min(t + US_PER_S, end_us)
        clock.advance_to(t)
        if on_progress is not None:
            on_progress((t - t0) / US_PER_S)
    for key in ("t_s", "nees", "nis", "nis_t_s"):
        rec[key] = np.asarray(rec[key], dtype=float)
    rec["err"] = np.asarray(rec["err"])
    rec["sigma"] = np.asarray(rec["sigma"])
    rec["counters"] = eskf.counters()
    rec["ic"] = ic
    rec["accel_bias_true_mps2"] = ba_true.tolist()
    rec["gyro_bias_true_radps"] = bg_true.tolist()
    rec["accel_bias_est_mps2"] = list(eskf.accel_bias_mps2)
    rec["gyro_bias_est_radps"] = list(eskf.gyro_bias_radps)
    rec["final_nav"] = eskf.nav_state()
    rec["impl"] = eskf.impl
    return rec


_TRAJECTORIES = {}


def consistency_run(duration_s, setting_name, seed, impl="cython"):
    """(NEES per epoch, NIS per epoch) of one seeded filter run on the dozer trajectory of ``duration_s``
    (ag2u IV-A) with 1 Hz aiding: a self-contained sweep job (the trajectory is built once per process)."""
    if duration_s not in _TRAJECTORIES:
        _TRAJECTORIES[duration_s] = generate(dozer_legs(duration_s), 100)
    rec = run_case(_TRAJECTORIES[duration_s], noise_setting(setting_name), RunRandom(seed), impl=impl, record_hz=1)
    return np.asarray(rec["nees"]), np.asarray(rec["nis"])


def monte_carlo_consistency(runs, duration_s=60.0, setting_name="sensor_fusion", first_seed=1000, impl="cython",
                            runner=None, workers=1):
    """(NEES, NIS) arrays of shape (runs, epochs) over seeds ``first_seed`` .. ``first_seed + runs - 1``,
    through the sweep runner (``runner``, else ``workers`` local processes): the same arrays whatever
    runs them."""
    jobs = [(duration_s, setting_name, first_seed + run, impl) for run in range(runs)]
    pairs = list(ordered_map(_consistency_job, jobs, workers=workers, runner=runner))
    return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])


def _consistency_job(job):
    return consistency_run(*job)


def case_metrics(rec, settle_s=10.0):
    """Summary numbers of one run_case record (units in the names)."""
    err = rec["err"]
    t = rec["t_s"]
    pos = np.linalg.norm(err[:, 0:3], axis=1)
    att = np.degrees(np.linalg.norm(err[:, 3:6], axis=1))
    vel = np.linalg.norm(err[:, 6:9], axis=1)
    late = t >= settle_s
    inside = np.abs(err) <= 3.0 * rec["sigma"] + 1e-12
    settled = bool(late.any())          # no sample after settle_s (a short run): the rms are null, not 0.0
    return {
        "position_error_rms_m": rms(pos[late]) if settled else None,
        "position_error_final_m": float(pos[-1]),
        "attitude_error_rms_deg": rms(att[late]) if settled else None,
        "attitude_error_final_deg": float(att[-1]),
        "velocity_error_rms_mps": rms(vel[late]) if settled else None,
        "accel_bias_true_mps2": rec["accel_bias_true_mps2"],
        "accel_bias_est_mps2": rec["accel_bias_est_mps2"],
        "accel_bias_error_final_mps2": [float(v) for v in err[-1, 9:12]],
        "gyro_bias_true_dps": [math.degrees(v) for v in rec["gyro_bias_true_radps"]],
        "gyro_bias_est_dps": [math.degrees(v) for v in rec["gyro_bias_est_radps"]],
        "gyro_bias_error_final_dps": [math.degrees(float(v)) for v in err[-1, 12:15]],
        "nees_mean": float(np.mean(rec["nees"][late])) if settled else None,
        "nis_mean": float(np.mean(rec["nis"])) if rec["nis"].size else None,
        "within_3sigma_fraction": float(np.mean(inside[late])) if settled else None,
        "counters": rec["counters"],
        "impl": rec["impl"],
    }


MAX_IMU_SAMPLES = 1000000
SETTING_RANGES = {
    "settings": non_empty_list(one_of(*NOISE_SETTINGS),       # distinct: results keyed by setting
                               "a non-empty list of distinct values of %s" % ", ".join(sorted(NOISE_SETTINGS)),
                               distinct=True),
    "duration_s": POSITIVE, "imu_rate_hz": RATE_HZ, "aiding_rate_hz": RATE_HZ,   # on the microsecond clock
    # the trajectory is sampled whole before the run (generate): bound its IMU samples
    ("duration_s", "imu_rate_hz"): ("at most %d IMU samples (duration_s x imu_rate_hz; e.g. 10000 s at 100 Hz)"
                                    % MAX_IMU_SAMPLES, lambda d, hz: d * hz <= MAX_IMU_SAMPLES),
    "record_hz": RATE_HZ, "profile": one_of(*PROFILES),
    "legs": ("[] (the dozer legs) or a list of [north_m, east_m, down_m, roll_deg, pitch_deg, yaw_deg, duration_s] "
             "rows, the first the start pose",
             lambda v: v == [] or (non_empty_list(vector(7, ANY_NUMBER))[1](v) and len(v) != 1)),
    "gyro_increments": one_of("euler", "rotvec"),
    "ic_mode": one_of("random", "fixed"), "impl": one_of("", *IMPLEMENTATIONS),
}


def check_settings(config):
    """Own ``legs`` (``duration_s`` is then unused) make a trajectory at ``imu_rate_hz``: every leg after the
    start pose a positive whole number of IMU periods long, MAX_IMU_SAMPLES samples at most in all."""
    if not config["legs"]:
        return
    try:
        samples = sum(leg_samples(config["legs"], config["imu_rate_hz"])[2])     # checked, not sampled
        if samples > MAX_IMU_SAMPLES:
            raise TrajectoryError("the legs last %d IMU samples at %d Hz, more than %d"
                                  % (samples, config["imu_rate_hz"], MAX_IMU_SAMPLES))
    except TrajectoryError as exc:
        raise ConfigError("setting config.legs: %s" % exc)


def _case_log(ctx, name):
    """The log callback of one setting's run_case (None without a report folder): its samples under
    ``/ins_eskf/<name>/``, the estimate and the truth also as Foxglove poses under ``/viz/<name>/``."""
    mcap = ctx.mcap
    if mcap is None:
        return None
    prefix = "/ins_eskf/%s/" % name

    def log(topic, time_us, message):
        mcap.log(prefix + topic, time_us, message)
        if topic == "estimate":
            mcap.log_pose("/viz/%s/estimate/pose" % name, time_us, message.pos_ned_m,
                          quat_from_euler(*message.euler_rad))
        elif topic == "truth":
            mcap.log_pose("/viz/%s/truth/pose" % name, time_us, message["pos_ned_m"],
                          quat_from_euler(*message["euler_rad"]))
    return log


def run(config, ctx):
    traj = make_trajectory(config)
    results = {}
    recs = {}
    if ctx.mcap is not None:
        ctx.mcap.log_frames("/viz/tf_static", int(traj.t_us[0]))
    progress = ctx.progress(traj.duration_s * len(config["settings"]), "ins-eskf")
    for i, name in enumerate(config["settings"]):
        setting = noise_setting(name)
        done_s = i * traj.duration_s
        rec = run_case(traj, setting, ctx.random, impl=config["impl"] or None,
                       aiding_rate_hz=config["aiding_rate_hz"], record_hz=config["record_hz"],
                       ic_mode=config["ic_mode"], gyro_increments=config["gyro_increments"],
                       log=_case_log(ctx, name), on_progress=lambda s: progress.update_to(done_s + s))
        recs[name] = rec
        results[name] = case_metrics(rec)
    progress.close()
    metrics = {"settings": results, "duration_s": traj.duration_s, "imu_rate_hz": config["imu_rate_hz"],
               "aiding_rate_hz": config["aiding_rate_hz"]}
    finite = all(math.isfinite(r["position_error_final_m"]) for r in results.values())
    if "noise_less" in results:
        nl = results["noise_less"]
        metrics["noise_less_reconstructed"] = (nl["position_error_final_m"] < 1e-3
                                               and nl["attitude_error_final_deg"] < 0.01)
        metrics["success"] = metrics["noise_less_reconstructed"] and finite
    else:
        metrics["success"] = finite
    if ctx.report is not None:
        _plots(ctx.report, traj, recs)
    return metrics


def record_indices(rec, traj):
    """The trajectory sample of each record of ``rec`` (run_case: its times ``t_s``, s): the index ``record``
    scored the estimate against, ``(t_us - t0_us) // dt_us``, with ``t_us`` rounded back to whole microseconds
    (``t_s * 1e6`` of e.g. 4.1 s is 4099999.9999999995)."""
    t_us = np.rint(rec["t_s"] * US_PER_S).astype(np.int64)
    return (t_us - int(traj.t_us[0])) // traj.dt_us


def _plots(report, traj, recs):
    fig, ax = figure(size_in=(6.5, 6))
    ax.plot(traj.pos_ned_m[:, 1], traj.pos_ned_m[:, 0], "k", lw=2, label="truth")
    for i, (name, rec) in enumerate(recs.items()):
        est = traj.pos_ned_m[record_indices(rec, traj)] - rec["err"][:, 0:3]
        ax.plot(est[:, 1], est[:, 0], color="C%d" % i, lw=1, ls=("-", "--", ":")[i % 3],
                label="ESKF estimate, %s" % name)
    ax.set_aspect("equal")
    label(ax, "ins-eskf: dozer trajectory, truth and ESKF estimates", "east (m)", "north (m)")
    report.save_figure(fig, "trajectory")

    rows = (("position error (m)", (0, 3), 1.0), ("attitude error (deg)", (3, 6), 180.0 / math.pi),
            ("velocity error (m/s)", (6, 9), 1.0), ("accel bias error (m/s^2)", (9, 12), 1.0),
            ("gyro bias error (deg/s)", (12, 15), 180.0 / math.pi))
    for name, rec in recs.items():
        fig, axes = figure(len(rows), 1, title="ins-eskf, %s: truth - estimate (solid) within the filter's "
                                               "+-3 sigma (dashed)" % name, size_in=(9, 12), sharex=True)
        t = rec["t_s"]
        for ax, (ylabel, (lo, hi), scale) in zip(axes, rows):
            for j, axis in enumerate("NED" if lo < 9 else "xyz"):
                ax.plot(t, rec["err"][:, lo + j] * scale, color="C%d" % j, lw=1, label=axis)
                # the axes' bounds often coincide (N and E): dashes offset per axis keep each visible
                dashes = (0, (3, 6)) if j == 0 else (3 * j, (3, 6))
                ax.plot(t, 3.0 * rec["sigma"][:, lo + j] * scale, color="C%d" % j, lw=0.8, ls=dashes,
                        label="+-3 sigma, %s" % axis)
                ax.plot(t, -3.0 * rec["sigma"][:, lo + j] * scale, color="C%d" % j, lw=0.8, ls=dashes)
            for n, gt in enumerate(rec["gated_t_s"]):
                ax.axvline(gt, color="red", lw=0.5, alpha=0.5, label="gated aiding pose" if n == 0 else None)
            label(ax, ylabel.split(" (")[0], "time (s)" if ax is axes[-1] else "", ylabel, legend=False)
            ax.legend(fontsize=6, loc="upper right", ncol=4)
        report.save_figure(fig, "errors_%s" % name)

    # settings with IMU biases (the noise-less one has none: its panels would be flat at zero)
    biased = [(name, rec) for name, rec in recs.items()
              if any(rec["accel_bias_true_mps2"]) or any(rec["gyro_bias_true_radps"])]
    if not biased:
        return
    fig, axes = figure(2, len(biased), title="ins-eskf: bias estimates (solid) and the true biases (dotted)",
                       size_in=(4.4 * len(biased), 6.5), squeeze=False)
    for c, (name, rec) in enumerate(biased):
        t = rec["t_s"]
        for r, (key, lo, scale, unit) in enumerate((("accel_bias_true_mps2", 9, 1.0, "m/s^2"),
                                                    ("gyro_bias_true_radps", 12, 180 / math.pi, "deg/s"))):
            ax = axes[r][c]
            true = np.asarray(rec[key])
            for j in range(3):
                est = true[j] - rec["err"][:, lo + j]
                ax.plot(t, est * scale, color="C%d" % j, lw=1, label="estimate %s" % "xyz"[j])
                ax.axhline(true[j] * scale, color="C%d" % j, lw=0.8, ls=":", label="true %s" % "xyz"[j])
            label(ax, "%s: %s bias" % (name, "accel" if r == 0 else "gyro"), "time (s)",
                  "%s bias (%s)" % ("accel" if r == 0 else "gyro", unit), legend=False)
            ax.legend(fontsize=6, ncol=2)
    report.save_figure(fig, "biases")
