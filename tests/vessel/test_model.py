"""The vessel model (robotx eqs. 1-6) and the thrust map: frames, typos resolved, Jacobians, settings.

- the NED/FRD step and the paper's own form (printed atan2 c9 term) agree to 1e-12 over random states,
  thrusts and constants, one step and 500-step rollouts;
- analytic Jacobians w.r.t. state, thrusts and constants match central finite differences (worst
  absolute errors ~3e-9, ~1e-13 and ~2e-10 at dt = 0.05 s: the finite differences' own error);
- physics: a larger left thrust turns right, the hull slips out of a turn, the VRX priors' top speed
  2.26 m/s and full-differential yaw rate 0.88 rad/s (reading aid 2.1);
- the thrust map's table, inverse, lag and settings checks.
"""
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from onboard.core.settings import ConfigError
from onboard.vessel import model as vm
from onboard.vessel.thrust_map import DEFAULTS as TM_DEFAULTS
from onboard.vessel.thrust_map import ThrustMap

PARAMS = vm.params_from({"c3": 0.3, "c8": 0.5, "c9": -0.02})


def _random_case(rng):
    x = [rng.uniform(-3.1, 3.1), rng.uniform(-1.0, 1.0), rng.uniform(-50, 50), rng.uniform(-50, 50),
         rng.uniform(-1.0, 3.0), rng.uniform(-1.0, 1.0)]
    thrust = [rng.uniform(-100, 250), rng.uniform(-100, 250)]
    params = [c * rng.uniform(0.5, 2.0) for c in PARAMS]
    params[vm.C9] = rng.uniform(-0.05, 0.05)
    return x, thrust, params


def _diff(a, b):
    d = [abs(a[i] - b[i]) for i in range(vm.N_STATE)]
    d[vm.YAW] = abs(math.remainder(a[vm.YAW] - b[vm.YAW], 2 * math.pi))
    return max(d)


def test_ned_step_equals_the_papers_form_over_random_cases():
    rng = random.Random(7)
    worst = 0.0
    for _ in range(300):
        x, thrust, params = _random_case(rng)
        ned = vm.step(x, thrust, params, 0.05)
        paper = vm.from_paper_state(vm.paper_step(vm.to_paper_state(x), thrust, params, 0.05))
        worst = max(worst, _diff(ned, paper))
    assert worst < 1e-12


def test_rollouts_in_both_frames_stay_together():
    rng = random.Random(3)
    x, _, params = _random_case(rng)
    p = vm.to_paper_state(x)
    for k in range(500):
        thrust = (200.0 * math.sin(0.01 * k), 150.0 * math.cos(0.013 * k))
        x = vm.step(x, thrust, params, 0.01)
        p = vm.paper_step(p, thrust, params, 0.01)
    assert _diff(x, vm.from_paper_state(p)) < 1e-9


@given(st.floats(-5, 5), st.floats(-3, 3))
def test_c9_printed_form_is_2uv(u, v):
    printed = (u * u + v * v) * math.sin(2.0 * math.atan2(v, u))
    assert printed == pytest.approx(2.0 * u * v, abs=1e-12)


def test_state_conversion_round_trips():
    x = [0.3, -0.2, 10.0, -4.0, 1.5, 0.2]
    p = vm.to_paper_state(x)
    assert p[vm.P_X] == -4.0 and p[vm.P_Y] == 10.0 and p[vm.P_OMEGA] == 0.2
    assert p[vm.P_THETA] == pytest.approx(math.pi / 2 - 0.3)
    assert vm.from_paper_state(p) == pytest.approx(x)


def _fd_state(x, thrust, params, dt, h=1e-6):
    n = vm.N_STATE
    out = [0.0] * (n * n)
    for j in range(n):
        xp, xm = list(x), list(x)
        xp[j] += h
        xm[j] -= h
        fp, fm = vm.step(xp, thrust, params, dt), vm.step(xm, thrust, params, dt)
        for i in range(n):
            d = fp[i] - fm[i]
            if i == vm.YAW:
                d = math.remainder(d, 2 * math.pi)
            out[i * n + j] = d / (2 * h)
    return out


def test_jacobians_match_central_finite_differences():
    rng = random.Random(11)
    worst_x = worst_t = worst_c = 0.0
    for _ in range(100):
        x, thrust, params = _random_case(rng)
        dt = 0.05
        F = vm.jacobian_state(x, thrust, params, dt)
        worst_x = max(worst_x, max(abs(a - b) for a, b in zip(F, _fd_state(x, thrust, params, dt))))
        G = vm.jacobian_thrust(x, thrust, params, dt)
        J = vm.jacobian_params(x, thrust, params, dt)
        for j in range(vm.N_INPUT):
            tp, tm_ = list(thrust), list(thrust)
            tp[j] += 1e-3
            tm_[j] -= 1e-3
            fp, fm = vm.step(x, tp, params, dt), vm.step(x, tm_, params, dt)
            for i in range(vm.N_STATE):
                worst_t = max(worst_t, abs((fp[i] - fm[i]) / 2e-3 - G[i * vm.N_INPUT + j]))
        for j in range(vm.N_PARAM):
            h = 1e-6 * max(1.0, abs(params[j]))
            cp, cm = list(params), list(params)
            cp[j] += h
            cm[j] -= h
            fp, fm = vm.step(x, thrust, cp, dt), vm.step(x, thrust, cm, dt)
            for i in range(vm.N_STATE):
                worst_c = max(worst_c, abs((fp[i] - fm[i]) / (2 * h) - J[i * vm.N_PARAM + j]))
    print("\nJacobian worst abs error vs finite differences: state %.1e, thrust %.1e, params %.1e"
          % (worst_x, worst_t, worst_c))
    assert worst_x < 1e-7 and worst_t < 1e-10 and worst_c < 1e-8


def test_left_thrust_turns_right_and_the_hull_slips_out_of_the_turn():
    x = [0.0, 0.0, 0.0, 0.0, 1.5, 0.0]
    for _ in range(300):
        x = vm.step(x, (200.0, 50.0), PARAMS, 0.01)
    assert x[vm.YAW_RATE] > 0.0 and x[vm.YAW] > 0.0 and x[vm.EAST] > 0.0
    assert x[vm.SWAY] < 0.0                     # slips to port, out of a right turn


def test_vrx_priors_top_speed_and_differential_yaw_rate():
    c = vm.params_from()
    x = [0.0] * vm.N_STATE
    for _ in range(6000):
        x = vm.step(x, (242.7, 242.7), c, 0.01)
    assert x[vm.SURGE] == pytest.approx(2.26, abs=0.01) and x[vm.YAW_RATE] == 0.0
    x = [0.0] * vm.N_STATE
    for _ in range(3000):
        x = vm.step(x, (242.7, -101.9), c, 0.01)
    assert x[vm.YAW_RATE] == pytest.approx(0.88, abs=0.01)


def test_yaw_is_wrapped_and_ned_velocity_rotates_body_velocity():
    x = vm.step([math.pi - 0.001, 1.0, 0.0, 0.0, 0.0, 0.0], (0.0, 0.0), PARAMS, 0.01)
    assert -math.pi <= x[vm.YAW] < -math.pi + 0.01
    vn, ve = vm.body_to_ned_velocity([math.pi / 2, 0.0, 0.0, 0.0, 2.0, 0.5])
    assert vn == pytest.approx(-0.5) and ve == pytest.approx(2.0)


def test_params_settings_are_checked():
    assert vm.params_from() == [vm.DEFAULTS[k] for k in vm.PARAM_NAMES]
    assert vm.params_dict(vm.params_from({"c9": -0.1}))["c9"] == -0.1
    with pytest.raises(ConfigError, match="c1 must be a number > 0"):
        vm.params_from({"c1": 0.0})
    with pytest.raises(ConfigError, match="unknown vessel model setting 'c10'"):
        vm.params_from({"c10": 1.0})
    with pytest.raises(ConfigError, match="finite"):
        vm.params_from({"c5": float("nan")})


# ---------------------------------------------------------------- thrust map
def test_static_curve_hits_the_table_and_its_inverse_round_trips():
    m = ThrustMap()
    for c, f in zip(TM_DEFAULTS["command_points"], TM_DEFAULTS["forward_n"]):
        assert m.static(c) == pytest.approx(f)
    for c, f in zip(TM_DEFAULTS["command_points"], TM_DEFAULTS["reverse_n"]):
        assert m.static(-c) == pytest.approx(-f)
    for k in range(-100, 101):
        c = k / 100.0
        assert m.inverse(m.static(c)) == pytest.approx(c, abs=1e-12)
    assert m.static(2.0) == 242.7 and m.static(-2.0) == -101.9
    assert m.inverse(400.0) == 1.0 and m.inverse(-400.0) == -1.0 and m.inverse(0.0) == 0.0


def test_first_order_lag_reaches_63_percent_after_tau():
    m = ThrustMap({"lag_tau_s": 0.5})
    for _ in range(50):
        t_l, t_r = m.step(1.0, -0.5, 0.01)
    assert m.shaft[0] == pytest.approx(1.0 - math.exp(-1.0), rel=1e-9)
    assert m.shaft[1] == pytest.approx(-0.5 * (1.0 - math.exp(-1.0)), rel=1e-9)
    assert t_l == pytest.approx(m.static(m.shaft[0])) and t_r < 0.0
    no_lag = ThrustMap({"lag_tau_s": 0.0})
    assert no_lag.step(0.5, 0.5, 0.01) == (pytest.approx(80.6), pytest.approx(80.6))


@pytest.mark.parametrize("settings,needle", [
    ({"lag_tau_s": -1.0}, "lag_tau_s must be a number >= 0"),
    ({"forward_n": [0.0, 5.0, 3.0, 80.0, 100.0, 200.0]}, "forward_n must be a list of at least 2 strictly"),
    ({"forward_n": [0.0, 100.0]}, "as many entries as command_points"),
    ({"command_points": [0.0, 0.5], "forward_n": [0.0, 1.0], "reverse_n": [0.0, 1.0]}, "must end at 1"),
    ({"gain": 1.0}, "unknown thrust map setting 'gain'"),
])
def test_thrust_map_settings_are_checked(settings, needle):
    with pytest.raises(ConfigError, match=needle):
        ThrustMap(settings)


def test_step_with_jacobian_is_step_and_jacobian_state_exactly():
    rng = random.Random(5)
    c = vm.params_from()
    for _ in range(200):
        x = [rng.gauss(0.0, s) for s in (2.0, 0.5, 50.0, 50.0, 2.0, 0.5)]
        thrust = [rng.uniform(-100.0, 250.0), rng.uniform(-100.0, 250.0)]
        dt = rng.uniform(0.001, 0.05)
        assert vm.step_with_jacobian(x, thrust, c, dt) == (vm.step(x, thrust, c, dt),
                                                           vm.jacobian_state(x, thrust, c, dt))
