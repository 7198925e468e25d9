"""Scenario `boat-hil-lag`: the RobotX AAVS paper's hardware-in-the-loop finding (IV: the first motor
interface lagged) reproduced and measured on the boat app (``boards.wamv.app``) against the simulated
WAM-V (``harness.sim.boat_world``), its two outboards simulated motor controllers on ptys.

For each injected interface latency (0-500 ms):

1. the lag is estimated from command-to-telemetry cross-correlation
   (``harness.sim.wamv_thrusters.lag_experiment`` / ``estimate_lag_s``: the boat's VESC driver at the
   control rate over the ptys, seeded throttle excitation) and compared with the injected latency:
   within one control period is the acceptance;
2. the closed loop runs: the app follows a heading plan (steps between legs) at a set speed with the
   commands delayed by the latency; the heading-tracking error is the RMS of wrap(psi_ref - psi_true)
   after ``settle_s`` (deg), which should grow monotonically with the latency.

Then, at zero latency, one outboard's pty is unplugged at ``cut_at_s`` (the link cut): the app's
watchdog sees that outboard's telemetry stop and stops both outboards; the unplugged controller
releases its motor on its own command timeout. The time from the cut until both thrusters give zero
thrust (simulated s, 10 ms resolution) must be within 250 ms.

``success``: every lag estimate within one control period, the error monotonic, the cut within 250 ms.
Log: the first case's app recording at its boundary (``/app/in/*``, ``/app/out/*``), ``/boat/truth`` at
10 Hz for every case, ``/boat/hil_lag/case`` where each case starts (cases run one after another on
their own clocks; the log time is each case's own simulated time plus its offset).
"""
import math
import time

import numpy as np

from boards.wamv.app import WamvApp
from harness.config import ANY_NUMBER, POSITIVE, ConfigError, int_at_least, non_empty_list, within
from harness.report.plots import figure, label
from harness.sim.boat_world import BoatWorld
from harness.sim.rng import RunRandom
from harness.sim.wamv_thrusters import LAG_PHYSICS_HZ, lag_experiment, lag_periods_us
from onboard.core.angles import wrap_pi
from onboard.core.units import s_to_us

DESCRIPTION = "Boat HIL lag: outboards on ptys with injected latency; lag estimate, heading error vs lag, link cut"

DEFAULTS = {
    "latencies_s": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
    "duration_s": 60.0,              # closed-loop run per latency
    "settle_s": 5.0,                 # heading error counted after this
    "lag_duration_s": 30.0,          # the lag experiment per latency
    "cut_at_s": 8.0,
    "cut_window_s": 1.0,
    "plan": [[10.0, 0.0, 1.5], [10.0, 60.0, 1.5], [10.0, -30.0, 1.5]],
    "control_rate_hz": 10,
    "controller_timeout_ms": 200,
}
SETTING_RANGES = {
    "latencies_s": non_empty_list(within(0.0, 0.5)),
    "duration_s": POSITIVE, "settle_s": within(0.0, 1e6), "lag_duration_s": POSITIVE, "cut_at_s": POSITIVE,
    "cut_window_s": POSITIVE,
    # as the boat app takes it (boards.wamv.app): three numbers per leg, each leg at least 1 us once rounded
    "plan": ("a non-empty list of [duration_s >= 1e-06, heading_deg, speed_mps] numbers", lambda v: isinstance(
        v, list) and len(v) > 0 and all(isinstance(l, list) and len(l) == 3 and all(ANY_NUMBER[1](x) for x in l)
                                        and round(l[0] * 1e6) >= 1 for l in v)),
    "control_rate_hz": int_at_least(1), "controller_timeout_ms": int_at_least(1),
    # the heading error is counted from settle_s on, one sample per control period: none left would be an rms
    # of 0.0 over no sample (a perfect track)
    ("settle_s", "duration_s", "control_rate_hz"): (
        "at least one control period apart (duration_s - settle_s >= 1 / control_rate_hz: the heading error is "
        "counted from settle_s on, once per control period)",
        lambda settle, duration, rate_hz: duration - settle >= 1.0 / rate_hz - 1e-9),
}
REDUCED = {"latencies_s": [0.0, 0.3], "duration_s": 12.0, "lag_duration_s": 8.0, "cut_at_s": 3.0,
           "plan": [[6.0, 0.0, 1.5], [6.0, 60.0, 1.5]]}
CUT_LIMIT_S = 0.25


def check_settings(config):
    """The lag experiment's control period (1 / control_rate_hz) is a whole multiple of its physics step, both
    whole microseconds (wamv_thrusters.lag_periods_us): lag_experiment refuses it otherwise, in the middle of
    the run after the cases before it."""
    try:
        lag_periods_us(config["control_rate_hz"])
    except ValueError:
        raise ConfigError("setting config.control_rate_hz must give a control period that is a whole number of "
                          "microseconds and a whole multiple of the lag experiment's physics step (1 / %g Hz), "
                          "got %r" % (LAG_PHYSICS_HZ, config["control_rate_hz"]))


CASE_TOPIC = "/boat/hil_lag/case"


def _world(ctx, seed_name, latency_s, config, log):
    world = BoatWorld(RunRandom(ctx.seed * 1009 + seed_name),
                      gnss={"dropout_prob": 0.0, "outlier_prob": 0.0},
                      interface={"latency_s": latency_s, "timeout_ms": config["controller_timeout_ms"]}, log=log)
    app = WamvApp(world.driver(), world.gnss_app_end, {"plan": config["plan"],
                                                        "control_rate_hz": config["control_rate_hz"]})
    world.attach_app(app, app.frame)
    return world, app


def closed_loop(ctx, latency_s, config, log, record, offset_us):
    """One closed-loop run; (heading RMS error deg, per-record columns)."""
    def shifted(topic, t_us, msg):
        log(topic, t_us + offset_us, msg)
    world, app = _world(ctx, int(round(latency_s * 1000)), latency_s, config, shifted)
    try:
        world.start(app, record=shifted if record else None)
        rec = {"t_s": [], "ref": [], "yaw": []}
        v = world.vessel

        def tick(t):
            rec["t_s"].append(t * 1e-6)
            rec["ref"].append(app.helm.reference[0])
            rec["yaw"].append(v.yaw_rad)
            if t % 100000 == 0:
                world.log_truth(t, heading_ref_rad=app.helm.reference[0])
        world.recorder(config["control_rate_hz"], tick)
        world.run(s_to_us(config["duration_s"]), 1000000)
        err = [math.degrees(wrap_pi(r - y)) for t, r, y in zip(rec["t_s"], rec["ref"], rec["yaw"])
               if t >= config["settle_s"]]
        return float(np.sqrt(np.mean(np.square(err)))) if err else 0.0, rec
    finally:
        world.close()


def link_cut(ctx, config):
    """Time (s) from unplugging the left outboard's pty to both thrusters at zero thrust, or None."""
    world, app = _world(ctx, 999, 0.0, config, None)
    try:
        world.start(app)
        cut_us = s_to_us(config["cut_at_s"])          # where world.at_s puts the cut
        seen = {}

        def watch(t):
            if t >= cut_us and "zero" not in seen and world.outboards.thrust_n == (0.0, 0.0):
                seen["zero"] = t
        world.at_s(config["cut_at_s"], lambda t: world.cut_outboard("left", t))
        world.recorder(100, watch)
        world.run(cut_us + s_to_us(config["cut_window_s"]), 100000)
        zero = seen.get("zero")
        return (None if zero is None else (zero - cut_us) * 1e-6), sorted(app.failsafe.reasons)
    finally:
        world.close()


def run(config, ctx):
    period_s = 1.0 / config["control_rate_hz"]
    cases = []
    offset_us = 0
    wall0 = time.perf_counter()
    progress = ctx.progress(len(config["latencies_s"]), "boat-hil-lag", unit="cases")
    for k, lat in enumerate(config["latencies_s"]):
        ctx.log(CASE_TOPIC, offset_us, {"latency_s": lat, "offset_us": offset_us})
        exp = lag_experiment(lat, seed=ctx.seed * 1000 + k, duration_s=config["lag_duration_s"],
                             control_hz=config["control_rate_hz"],
                             interface={"timeout_ms": config["controller_timeout_ms"]})
        rms_deg, _rec = closed_loop(ctx, lat, config, ctx.log, k == 0, offset_us)
        est = exp["lag_s"]
        cases.append({"latency_s": lat, "estimated_lag_s": est,
                      "lag_error_s": None if est is None else abs(est - lat),
                      "within_period": est is not None and abs(est - lat) <= period_s + 1e-9,
                      "heading_error_rms_deg": rms_deg})
        offset_us += s_to_us(config["duration_s"]) + 1000000
        progress.update_to(k + 1)
    progress.close()
    cut_s, reasons = link_cut(ctx, config)
    errs = [c["heading_error_rms_deg"] for c in cases]
    monotonic = all(b >= a for a, b in zip(errs, errs[1:]))
    ctx.timing(wall_s=time.perf_counter() - wall0)
    _plot(ctx, cases, period_s)
    all_within = all(c["within_period"] for c in cases)
    cut_ok = cut_s is not None and cut_s <= CUT_LIMIT_S + 1e-9
    return {
        "success": bool(all_within and monotonic and cut_ok),
        "cases": cases,
        "control_period_s": period_s,
        "lag_within_one_period": all_within,
        "heading_error_monotonic": monotonic,
        "cut_to_zero_thrust_s": cut_s,
        "cut_failsafe_reasons": reasons,
        "cut_limit_s": CUT_LIMIT_S,
    }


def _plot(ctx, cases, period_s):
    if ctx.report is None:
        return
    lat = [c["latency_s"] for c in cases]
    fig, (a, b) = figure(1, 2, title="boat-hil-lag: injected interface latency")
    a.plot(lat, [c["estimated_lag_s"] if c["estimated_lag_s"] is not None else np.nan for c in cases], "o-",
           label="estimated lag")
    a.plot(lat, lat, "k--", label="injected")
    a.fill_between(lat, [x - period_s for x in lat], [x + period_s for x in lat], alpha=0.2, label="+- one control period")
    label(a, "lag from command-to-telemetry cross-correlation", "injected latency (s)", "lag (s)")
    b.plot(lat, [c["heading_error_rms_deg"] for c in cases], "o-", label="heading RMS error")
    label(b, "closed-loop heading tracking", "injected latency (s)", "heading error RMS (deg)")
    ctx.report.save_figure(fig, "hil_lag")
