"""Vessel model (robotx eqs. 1-6), thrust map and boat EKF: run under CPython (pytest) and inside
MicroPython; the golden_* numbers must agree between the two interpreters."""
import math

from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import BoatEkf
from onboard.vessel import model as vm
from onboard.vessel.samples import HeadingSample, PositionSample, ThrustSample, YawRateSample
from onboard.vessel.thrust_map import ThrustMap

X0 = [0.4, 0.1, 5.0, -2.0, 1.3, -0.2]


def _params():
    return vm.params_from({"c3": 0.3, "c8": 0.4, "c9": -0.02})


def test_ned_step_equals_the_papers_form():
    c = _params()
    x = list(X0)
    p = vm.to_paper_state(x)
    for k in range(200):
        thrust = (180.0 + 60.0 * math.sin(0.05 * k), 120.0)
        x = vm.step(x, thrust, c, 0.01)
        p = vm.paper_step(p, thrust, c, 0.01)
    back = vm.from_paper_state(p)
    for i in range(vm.N_STATE):
        d = back[i] - x[i]
        if i == vm.YAW:
            d = math.fmod(d + 3 * math.pi, 2 * math.pi) - math.pi
        assert abs(d) < 1e-9, (i, d)


def test_jacobian_state_matches_finite_differences():
    c = _params()
    thrust = (150.0, 40.0)
    F = vm.jacobian_state(X0, thrust, c, 0.05)
    h = 1e-6
    for j in range(vm.N_STATE):
        xp = list(X0)
        xm = list(X0)
        xp[j] += h
        xm[j] -= h
        fp = vm.step(xp, thrust, c, 0.05)
        fm = vm.step(xm, thrust, c, 0.05)
        for i in range(vm.N_STATE):
            assert abs((fp[i] - fm[i]) / (2 * h) - F[i * vm.N_STATE + j]) < 1e-6


def test_thrust_map_inverse_round_trips():
    m = ThrustMap()
    for k in range(-10, 11):
        c = k / 10.0
        assert abs(m.inverse(m.static(c)) - c) < 1e-12


def test_ekf_refuses_nan_and_old_samples_with_the_state_intact():
    f = BoatEkf()
    f.initialize(0, X0)
    f.predict(ThrustSample(10000, 100.0, 90.0))
    x = list(f.x)
    P = list(f.P)
    for call in (lambda: f.predict(ThrustSample(20000, float("nan"), 0.0)),
                 lambda: f.update_position(PositionSample(5000, (1.0, 2.0))),
                 lambda: f.update_heading(HeadingSample(20000, float("inf")))):
        try:
            call()
        except EstimatorInputError:
            pass
        else:
            raise AssertionError("bad sample accepted")
    assert f.x == x and f.P == P and f.rejected == 3


def golden_model_rollout():
    c = _params()
    x = list(X0)
    m = ThrustMap()
    out = []
    for k in range(100):
        thrust = m.step(0.8 + 0.2 * math.sin(0.1 * k), 0.5, 0.01)
        x = vm.step(x, thrust, c, 0.01)
    out.append(x)
    out.append(vm.jacobian_state(x, thrust, c, 0.01))
    out.append(vm.jacobian_params(x, thrust, c, 0.01))
    return out


def golden_ekf_predict_update():
    f = BoatEkf()
    f.initialize(0, X0)
    out = []
    for k in range(1, 51):
        t = k * 10000
        f.predict(ThrustSample(t, 150.0 + k, 120.0))
        f.update_yaw_rate(YawRateSample(t, 0.1 + 0.001 * k, 1e-4))
        if k % 25 == 0:
            f.update_position(PositionSample(t, (5.5 + 0.01 * k, -1.9), 0.25))
            f.update_heading(HeadingSample(t, 0.45, 4e-4))
            out.append(f.last_nis)
    out.append(f.x)
    out.append(f.P)
    return out
