"""harness.sim.blade_force: the sliced truth force equals the onboard FEE where the two must agree (flat,
level, uniform soil, no inertia), and is richer where they differ (per-strip depth and slope, properties
under each strip's own failure wedge, McKyes' inertial term)."""
import math

import numpy as np
import pytest

from harness.sim import soil_world as sw
from harness.sim.blade_force import TruthBladeForce, inertial_factor
from harness.sim.soil_terrain import SoilTerrain
from onboard.soil.blind_map import BladePose
from onboard.soil.fee import Fee

R = math.radians


def _terrain(field=None, **cfg):
    fields = sw.build_fields(field or {"size_m": [8.0, 4.0], "cell_m": 0.1, "soil": "loam",
                                       "relative_density_pct": 50.0})
    cfg.setdefault("loose_layer_m", 0.0)
    return SoilTerrain(fields, cfg)


def test_level_blade_in_uniform_flat_soil_is_the_onboard_fee():
    t = _terrain()
    theta = t.fields.theta_u(30, 20)
    pose = BladePose(0, 3.0, 2.0, 0.15, 0.0, R(10.0), 0.0)        # edge 0.15 m deep, rake 80 deg
    out = TruthBladeForce({"inertial": False}).force(t, pose, 1.85, 1.0)
    f, fx, fz, _beta = Fee().force(theta, [0.0, R(80.0), 0.15, 1.85, 0.0])
    assert out.fx_n == pytest.approx(fx, rel=1e-9)
    assert out.fz_n == pytest.approx(fz, rel=1e-9)
    assert np.allclose(out.depth_m, 0.15) and np.allclose(out.alpha_rad, 0.0, atol=1e-12)
    assert out.roll_moment_nm == pytest.approx(0.0, abs=1e-6)
    # the carried pile adds Q N_Q along the same direction
    t.pile_m3 = 0.3
    q = 0.3 * t.loose_unit_weight_npm3
    with_pile = TruthBladeForce({"inertial": False}).force(t, pose, 1.85, 1.0)
    f_q = Fee().force(theta, [0.0, R(80.0), 0.15, 1.85, q])
    assert with_pile.fx_n == pytest.approx(f_q[1], rel=1e-9)
    assert with_pile.surcharge_n == pytest.approx(q)


def test_inertial_term_grows_with_the_square_of_speed():
    t = _terrain()
    pose = BladePose(0, 3.0, 2.0, 0.12, 0.0, R(10.0), 0.0)
    tbf = TruthBladeForce()
    base = tbf.force(t, pose, 1.85, 0.0)
    one = tbf.force(t, pose, 1.85, 1.0)
    two = tbf.force(t, pose, 1.85, 2.0)
    assert base.inertial_n == 0.0
    assert one.inertial_n > 0.0
    assert two.inertial_n == pytest.approx(4.0 * one.inertial_n, rel=1e-9)
    assert two.fx_n > one.fx_n > base.fx_n
    assert inertial_factor(R(80.0), R(22.0), R(30.0), R(20.0)) > 0.0


def test_rolled_blade_cuts_deeper_on_one_side_and_twists_the_machine():
    """Roll right side down: the right strips cut deeper (per-strip depth), the draught exceeds the FEE at
    the mean depth (the d^2 term is convex), the yaw moment turns right and the roll moment is negative
    (the soil lifts the right side harder)."""
    t = _terrain()
    pose = BladePose(0, 3.0, 2.0, 0.12, R(3.0), R(10.0), 0.0)
    out = TruthBladeForce({"inertial": False}).force(t, pose, 1.85, 1.0)
    assert np.all(np.diff(out.depth_m) > 0.0)
    assert out.depth_m_mean == pytest.approx(0.12, abs=1e-3)
    theta = t.fields.theta_u(30, 20)
    level = Fee().force(theta, [0.0, R(80.0), out.depth_m_mean, 1.85 * math.cos(R(3.0)), 0.0])
    assert out.fx_n > level[1]
    assert out.yaw_moment_nm > 0.0
    assert out.roll_moment_nm < 0.0


def test_each_strip_sees_the_surface_slope_ahead():
    t = _terrain()
    slope = math.tan(R(10.0))
    n = (np.arange(t.n_north) + 0.5) * 0.1
    t.height_m[:, :] = (slope * (n - 3.0))[:, None]
    pose = BladePose(0, 3.0, 2.0, 0.1, 0.0, R(10.0), 0.0)
    out = TruthBladeForce().force(t, pose, 1.85, 1.0)
    assert np.allclose(out.alpha_rad, R(10.0), atol=R(0.5))
    assert np.allclose(out.depth_m, 0.1 * math.cos(R(10.0)), atol=0.01)
    assert np.allclose(out.rho_rad, R(90.0), atol=R(0.5))


def test_properties_come_from_under_each_strips_failure_wedge():
    """Dense soil from 0.2 m ahead (inside the wedge, x_max about 0.3 m at 0.15 m depth) raises the force
    of the strips over it; from 2 m ahead (beyond the wedge) it changes nothing."""
    field = {"size_m": [8.0, 4.0], "cell_m": 0.1, "soil": "clay", "relative_density_pct": 10.0,
             "field": "strip", "strip": {"axis": "north", "from_m": 3.2, "to_m": 8.0, "relative_density_pct": 90.0}}
    near = _terrain(field)
    far_field = dict(field, strip=dict(field["strip"], from_m=5.0))
    far = _terrain(far_field)
    uniform = _terrain(dict(field, field="uniform"))
    pose = BladePose(0, 3.0, 2.0, 0.15, 0.0, R(10.0), 0.0)
    tbf = TruthBladeForce()
    f_near, f_far, f_uni = (tbf.force(t, pose, 1.85, 1.0) for t in (near, far, uniform))
    assert f_far.fx_n == pytest.approx(f_uni.fx_n, rel=1e-12)
    assert f_near.fx_n > 1.2 * f_uni.fx_n
