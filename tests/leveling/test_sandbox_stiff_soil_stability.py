"""Soil and vehicle values the Sandbox INI accepts keep the simulation finite and sane: a stiff soil's Bekker
compaction resistance b (k_c/b + k_phi) z^(n+1)/(n+1) reaches 1e5 N at a millimetre of sinkage, and as an
explicit force (rc tanh(v / 0.01 m/s)) it used to reverse the track's motion each substep, growing without bound
(k_c = 1e9 at 20 ms substeps: the 2 kg robot commanded 0.25 m/s reached 1.5 km/s in 30 frames). The resistance
now at most reverses a track's motion within a substep, never makes it grow (tracked_robot.resistance_limit_n), a
limit that does not bind at the example INI's soil and substeps (its data sets are unchanged)."""
import math

import numpy as np
import pytest

from harness.sim.sandbox import terramechanics as tm
from harness.sim.sandbox import tracked_robot as tr
from harness.sim.sandbox.config import load_experiment
from harness.sim.sandbox.terrain import TileTerrain, tileable_heights
from harness.sim.sandbox.world import SandboxWorld

from tests.leveling.test_sandbox_config import _copy_example

HEIGHTS = tileable_heights(40, 40, 0.02, 0.06, 0.3, np.random.default_rng(1))


def _drive(soil, frames, frame_dt_us, substeps, vehicle=None):
    """Largest |u| (m/s) and |r| (rad/s) over ``frames`` frames of forward-then-reverse arcs at 0.25 m/s."""
    world = SandboxWorld(TileTerrain(HEIGHTS, 0.02, contact_test="patch"), 0.4, 0.4, 0.3, vehicle, soil,
                         frame_dt_us, substeps)
    r = world.robot
    top_u = top_r = 0.0
    for i in range(frames):
        world.frame(0.25 if i < frames // 2 else -0.25, 0.5)
        state = (r.u_mps, r.v_mps, r.r_radps, r.base_m, r.north_m, r.east_m, r.tan_pitch, r.tan_roll)
        assert all(math.isfinite(v) for v in state) and np.all(np.isfinite(world.terrain.height_m))
        top_u, top_r = max(top_u, abs(r.u_mps)), max(top_r, abs(r.r_radps))
    return top_u, top_r


@pytest.mark.parametrize("soil", [{"k_c": 1e9}, {"k_phi": 1e10}, {"k_c": 1e12, "k_phi": 1e12}])
def test_a_stiff_soil_at_20_ms_substeps_stays_at_the_commanded_speed(soil):
    top_u, top_r = _drive(dict(tm.SANDY_SOIL, **soil), 30, 20000, 1)
    assert top_u < 0.5 and top_r < 5.0, (top_u, top_r)


def test_a_stiff_soil_at_the_default_substeps_stays_at_the_commanded_speed():
    top_u, top_r = _drive(dict(tm.SANDY_SOIL, k_c=1e10), 12, 10000, 10)
    assert top_u < 0.5 and top_r < 5.0, (top_u, top_r)


def test_a_stiff_soil_the_ini_accepts_runs(tmp_path):
    exp = load_experiment(_copy_example(tmp_path, {
        "k_c = 990.0": "k_c = 1e12", "k_phi = 1528430.0": "k_phi = 1e12",
        "frame_dt = 0.01": "frame_dt = 0.02", "substeps = 10": "substeps = 1"}))
    north, east, yaw = exp.start
    world = SandboxWorld(exp.terrain(contact_test="patch"), north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us,
                         exp.substeps, exp.erosion_iterations)
    volume0 = world.terrain.volume_m3()
    for _ in range(20):
        rec = world.frame(0.25, 0.0)
        assert all(math.isfinite(v) for v in rec.values())
    assert abs(world.robot.u_mps) < 0.5
    assert abs(world.terrain.volume_m3() - volume0) <= 1e-9 * volume0


def test_the_resistance_limit_at_most_reverses_a_tracks_motion():
    for ground in (0.3, -0.02, 1e-4):
        for response in (0.5, 1.3, 40.0):
            cap = tr.resistance_limit_n(ground, response, 0.001)
            # both tracks' caps together change this track's ground speed by at most 2 |ground|: to -ground
            assert 2.0 * cap * 0.001 * response == pytest.approx(2.0 * abs(ground))
    assert tr.resistance_limit_n(0.0, 1.3, 0.001) == 0.0


def test_a_stiff_soils_resistance_is_held_to_the_limit():
    world = SandboxWorld(TileTerrain(HEIGHTS, 0.02, contact_test="patch"), 0.4, 0.4, 0.3, None,
                         dict(tm.SANDY_SOIL, k_c=1e10), 10000, 10)
    r = world.robot
    world.frame(0.25, 0.0)
    _, D = r._traction()
    for lat, ground in ((-0.5 * r.gauge_m, 0.2), (0.5 * r.gauge_m, -0.05)):
        limited = r._limited(-1e5 * math.copysign(1.0, ground), ground, lat, D, 0.001)
        e = np.array([1.0, 0.0, -lat])
        response = float(e @ np.linalg.solve(np.diag([r.mass_kg, r.mass_kg, r.inertia_kgm2]) - 0.001 * D, e))
        assert limited == pytest.approx(-math.copysign(tr.resistance_limit_n(ground, response, 0.001), ground))


def test_the_limit_does_not_bind_on_the_example_soil(tmp_path):
    """On the example INI's sand at 1 ms substeps the traction of each substep is the same with the limit and
    without it (the data sets made with it stay bit for bit as they were)."""
    exp = load_experiment(_copy_example(tmp_path))
    north, east, yaw = exp.start
    world = SandboxWorld(exp.terrain(contact_test="patch"), north, east, yaw, exp.vehicle, exp.soil, exp.frame_dt_us,
                         exp.substeps, exp.erosion_iterations)
    r = world.robot
    dt_s = exp.frame_dt_us * 1e-6 / exp.substeps
    for k in range(12):
        world.frame(0.25 if k < 6 else -0.25, 1.0 if k % 4 < 2 else -1.0)
        (q_free, d_free), (q_lim, d_lim) = r._traction(), r._traction(dt_s)
        assert np.array_equal(q_free, q_lim) and np.array_equal(d_free, d_lim)
