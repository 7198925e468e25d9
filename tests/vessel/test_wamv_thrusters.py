"""The WAM-V's outboards as simulated VESCs on ptys (harness.sim.wamv_thrusters) commanded by the boat's
driver (onboard.vessel.outboards) over the real serial path, in lockstep with simulated time: a command
reaches the thrust after the injected latency, and the command-to-telemetry cross-correlation recovers
the lag within one control period (measured: within half a period, 0-500 ms; a 3 Hz interface adds its
hold, ~0.2 s, on top)."""
import math

import numpy as np
import pytest

from harness.sim.wamv_thrusters import SimOutboards, estimate_lag_s, lag_experiment
from onboard.vessel import thrust_map as tm

pytestmark = pytest.mark.fil

DT_US = 10000                 # physics 100 Hz
CONTROL_US = 100000           # control 10 Hz


def _run_step(latency_s, update_hz=100.0, step_at_us=1000000, end_us=2500000, throttle=0.8):
    """Command (0, 0) until ``step_at_us``, then (throttle, throttle/2); return the SimOutboards record of
    (step start us, thrusts) and the first telemetry samples."""
    sim = SimOutboards({"latency_s": latency_s, "update_hz": update_hz, "lag_tau_s": 0.3})
    try:
        drv = sim.driver()
        drv.start(0)
        rec, tel = [], []
        for now in range(0, end_us, DT_US):
            if now % CONTROL_US == 0:
                tel += drv.poll(now)
                on = now >= step_at_us
                drv.command(throttle if on else 0.0, 0.5 * throttle if on else 0.0, now)
            sim.service(now)
            rec.append((now, sim.step(DT_US * 1e-6, now)))
        applied = {side: list(s.applied) for side, s in sim.sims.items()}
        report = drv.report()
        drv.close()
        return rec, tel, applied, report
    finally:
        sim.close()


@pytest.mark.parametrize("latency_s", [0.0, 0.13, 0.25, 0.5])
def test_a_command_reaches_the_thrust_after_the_injected_latency(latency_s):
    rec, tel, applied, report = _run_step(latency_s)
    first = next(now for now, (t_l, t_r) in rec if t_l != 0.0)
    assert first == 1000000 + int(round(latency_s * 1e6))          # simulated time, exact to the physics step
    assert next(now for now, (t_l, t_r) in rec if t_r != 0.0) == first
    # the motor command itself arrived over the pty at the step and was handed on after the latency
    t_on = [t for t, _cmd, value in applied["left"] if value > 0]
    assert t_on[0] == first
    # first-order shaft: 1 - exp(-t / tau) of the set-point, through the static curve
    curve = tm.ThrustMap()
    t_end, (t_l, t_r) = rec[-1]
    n = 0.8 * (1.0 - math.exp(-((t_end - first) * 1e-6 + 0.01) / 0.3))
    assert t_l == pytest.approx(curve.static(n), rel=1e-6)
    assert report["bad_replies"] == 0 and report["links"]["left"]["up"]
    assert [s.time_us for s in tel if s.side == "left"][:3] == [0, 100000, 200000]


def test_update_rate_holds_commands_until_the_interface_tick():
    """A 3 Hz interface: a command arriving at 1.1 s waits for the tick at 4 x 333333 us, taken by the first
    physics step at or after it."""
    rec, _tel, applied, _ = _run_step(0.0, update_hz=3.0, step_at_us=1100000)
    first = next(now for now, (t_l, _t_r) in rec if t_l != 0.0)
    tick = -(-1100000 // 333333) * 333333
    assert first == -(-tick // DT_US) * DT_US == 1340000
    assert [t for t, _cmd, value in applied["left"] if value > 0][0] == first


def test_the_thrust_uses_the_truth_vessels_curve_dead_band_and_efficiency():
    sim = SimOutboards({"lag_tau_s": 0.0}, {"dead_band": 0.05, "efficiency_left": 0.9, "efficiency_right": 1.1})
    try:
        sim.sims["left"].erpm, sim.sims["right"].erpm = 0.04 * 10000, 0.5 * 10000
        sim.sims["left"].mode = sim.sims["right"].mode = "rpm"      # driven (a released motor gives no thrust)
        assert sim._thrust("left") == 0.0
        assert sim._thrust("right") == pytest.approx(1.1 * 80.6)
    finally:
        sim.close()


@pytest.mark.parametrize("latency_s", [0.0, 0.05, 0.1, 0.2, 0.3, 0.35, 0.45, 0.5])
def test_lag_from_command_to_telemetry_within_one_control_period(latency_s):
    out = lag_experiment(latency_s, seed=3, duration_s=30.0, control_hz=10.0)
    assert not np.isnan(out["telemetry"]).any()
    assert abs(out["lag_s"] - latency_s) <= 0.1 + 1e-9
    assert abs(out["lag_s"] - latency_s) <= 0.05 + 1e-9                # measured: within half a period


def test_a_slow_interface_adds_its_hold_to_the_lag():
    fast = lag_experiment(0.2, seed=4, duration_s=30.0)["lag_s"]
    slow = lag_experiment(0.2, seed=4, duration_s=30.0, interface={"update_hz": 3.0})["lag_s"]
    assert slow > fast + 0.1


def test_estimate_on_synthetic_delays():
    rng = np.random.default_rng(1)
    cmd = np.repeat(rng.uniform(-1, 1, 60), 5)                     # steps every 5 ticks
    for delay in range(0, 6):
        tel = np.concatenate([np.zeros(delay + 1), cmd[:len(cmd) - delay - 1]])   # pure delay, seen a tick later
        assert estimate_lag_s(cmd, tel, 0.1) == pytest.approx(max(0.0, (delay - 0.5) * 0.1))


def test_driver_refuses_nan_and_releases_the_motors():
    sim = SimOutboards()
    try:
        drv = sim.driver()
        drv.start(0)
        drv.command(0.5, 0.5, 0)
        sim.service(0)
        sim.step(0.01, 0)
        assert sim.sims["left"].mode == "rpm"
        assert not drv.command(float("nan"), 0.2, 10000)
        sim.service(10000)
        sim.step(0.01, 10000)
        assert sim.sims["left"].mode == "released" and sim.sims["right"].mode == "released"
        assert drv.report()["refused_commands"] == 1 and drv.report()["stops"] == 1
        drv.close()
    finally:
        sim.close()
