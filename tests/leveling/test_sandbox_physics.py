"""The Sandbox reference simulator's physics: Bekker sinkage, Janosi-Hanamoto traction, straight driving,
spinning in place, pitch and roll on slopes, soil volume conservation and the wrap-around."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.sim.sandbox import terramechanics as tm
from harness.sim.sandbox.terrain import TileTerrain, tileable_heights
from harness.sim.sandbox.world import SandboxWorld

SAND = tm.SANDY_SOIL
CELL = 0.02


def _flat(side=64, level=0.05):
    return TileTerrain(np.full((side, side), level), CELL)


def _slope(deg, side=64):
    """A plane rising northward at ``deg`` (not tileable: erosion off, the robot stays inside)."""
    north = (np.arange(side) + 0.5) * CELL
    return TileTerrain(0.3 + math.tan(math.radians(deg)) * north[:, None] * np.ones((1, side)), CELL,
                       erosion_iterations=0)


def test_bekker_sinkage_is_the_formula_and_its_inverse():
    for b, p in ((0.045, 1200.0), (0.1, 5e4), (0.3, 2e5)):
        z = tm.bekker_sinkage_m(p, SAND["k_c"], SAND["k_phi"], SAND["n"], b)
        assert math.isclose(z, (p / (SAND["k_c"] / b + SAND["k_phi"])) ** (1.0 / SAND["n"]), rel_tol=1e-12)
        assert math.isclose(tm.bekker_pressure_pa(z, SAND["k_c"], SAND["k_phi"], SAND["n"], b), p, rel_tol=1e-12)
    assert tm.bekker_pressure_pa(-0.01, SAND["k_c"], SAND["k_phi"], SAND["n"], 0.05) == 0.0


def test_the_robot_at_rest_on_flat_sand_sinks_bekkers_depth():
    """W spread over both tracks (2 L b) sinks z0 = (p / (k_c/b + k_phi))^(1/n); resting, it stays there."""
    world = SandboxWorld(_flat(), 0.64, 0.64, 0.3)
    r = world.robot
    p = r.weight_n / (2.0 * r.length_m * r.width_m)
    z0 = tm.bekker_sinkage_m(p, SAND["k_c"], SAND["k_phi"], SAND["n"], r.width_m)
    assert math.isclose(r.sinkage_m, z0, rel_tol=1e-3)
    for _ in range(20):
        world.frame(0.0, 0.0)
    assert math.isclose(r.sinkage_m, z0, rel_tol=1e-2)
    assert math.isclose(0.05 - r.base_m, z0, rel_tol=1e-2)


def test_janosi_traction_rises_with_shear_displacement_and_saturates():
    p = 1500.0
    tau_max = SAND["c_pa"] + p * math.tan(math.radians(SAND["phi_deg"]))
    j = np.array([0.0, 0.005, 0.025, 0.1, 0.5])
    tau = tm.janosi_shear_pa(p, j, SAND["c_pa"], SAND["phi_deg"], SAND["K_m"])
    assert tau[0] == 0.0 and np.all(np.diff(tau) > 0)
    assert math.isclose(tau[2], tau_max * (1 - math.exp(-1.0)), rel_tol=1e-12)     # j = K: 63 %
    assert tau[-1] > 0.9999 * tau_max and tau[-1] <= tau_max
    thrust = [tm.track_thrust_n(i, 10.0, 0.18, 0.045, SAND["c_pa"], SAND["phi_deg"], SAND["K_m"]) for i in
              (0.01, 0.1, 0.5, 1.0)]
    assert all(a < b for a, b in zip(thrust, thrust[1:]))
    assert thrust[-1] < 0.18 * 0.045 * SAND["c_pa"] + 10.0 * math.tan(math.radians(SAND["phi_deg"]))


def test_a_straight_command_on_flat_sand_drives_straight_with_a_little_slip():
    world = SandboxWorld(_flat(), 0.64, 0.64, 0.0)
    r = world.robot
    dy = 0.0
    for _ in range(150):
        rec = world.frame(0.2, 0.0)
        dy += rec["dy_body_m"]
    assert abs(r.yaw_rad) < 1e-6 and abs(dy) < 1e-5
    assert 0.001 < rec["slip_left"] < 0.1 and math.isclose(rec["slip_left"], rec["slip_right"], rel_tol=0.05)
    speed = rec["dx_body_m"] / 0.01
    assert 0.9 * 0.2 < speed < 0.2 and math.isclose(speed, 0.2 * (1 - rec["slip_left"]), rel_tol=0.02)
    assert abs(r.pitch_rad) < math.radians(1.0) and abs(r.roll_rad) < 1e-6


def test_a_spin_turns_in_place_with_skid_losses():
    world = SandboxWorld(_flat(), 0.64, 0.64, 0.0)
    r = world.robot
    turned = 0.0
    for _ in range(300):
        turned += world.frame(0.0, 1.0)["dyaw_rad"]
    assert turned > math.radians(90.0)                    # turned right (NED)
    assert turned < 3.0                                   # less than the commanded 3 rad: slip and lag
    assert math.hypot(r.north_m - 0.64, r.east_m - 0.64) < 0.01
    assert r.slip[0] > 0.02 and r.slip[1] > 0.02          # both tracks slip sideways and along


@pytest.mark.parametrize("deg", [5.0, 10.0])
def test_pitch_and_roll_follow_a_planar_slope(deg):
    up = SandboxWorld(_slope(deg), 0.64, 0.64, 0.0, erosion_iterations=0)
    assert math.isclose(math.degrees(up.robot.pitch_rad), deg, abs_tol=0.05)
    assert abs(up.robot.roll_rad) < 1e-6
    across = SandboxWorld(_slope(deg), 0.64, 0.64, math.pi / 2, erosion_iterations=0)
    assert math.isclose(math.degrees(across.robot.roll_rad), deg, abs_tol=0.1)       # left side up: right down
    assert abs(across.robot.pitch_rad) < 1e-6
    for _ in range(60):
        rec = up.frame(0.2, 0.0)
    assert math.isclose(math.degrees(up.robot.pitch_rad), deg, abs_tol=0.2)
    flat = SandboxWorld(_flat(), 0.64, 0.64, 0.0)
    for _ in range(60):
        rec_flat = flat.frame(0.2, 0.0)
    assert rec["slip_left"] > rec_flat["slip_left"]       # the grade needs thrust: more slip


@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.integers(0, 2 ** 31 - 1), st.lists(st.tuples(st.floats(-0.25, 0.25), st.floats(-1.5, 1.5)),
                                                 min_size=3, max_size=6))
def test_tracks_and_erosion_conserve_the_soil_volume(seed, commands):
    rng = np.random.default_rng(seed)
    terrain = TileTerrain(tileable_heights(48, 48, CELL, 0.05, 0.25, rng), CELL, erosion_iterations=3)
    v0 = terrain.volume_m3()
    world = SandboxWorld(terrain, *rng.uniform(0.0, 0.96, 2), rng.uniform(-math.pi, math.pi), substeps=4)
    for speed, yaw_rate in commands:
        for _ in range(10):
            world.frame(speed, yaw_rate)
    assert terrain.displaced_m3 > 0.0
    assert abs(terrain.volume_m3() - v0) <= 1e-12 * v0


def test_erosion_relaxes_to_the_angle_of_repose_across_the_borders():
    h = np.zeros((32, 32))
    h[0, 0] = 0.2                                           # a spike in a corner: spreads to all four sides
    t = TileTerrain(h, CELL)
    v0 = t.volume_m3()
    t.erode(400)
    assert abs(t.volume_m3() - v0) <= 1e-15
    steps = [np.abs(np.roll(t.height_m, -1, axis=a) - t.height_m).max() for a in (0, 1)]
    assert max(steps) <= math.tan(math.radians(34.0)) * CELL * 1.05
    assert t.height_m[-1, 0] > 0 and t.height_m[0, -1] > 0 and t.height_m[-1, -1] > 0


def test_leaving_the_tile_teleports_to_the_opposite_side_and_flags_the_frame():
    world = SandboxWorld(_flat(32), 0.56, 0.32, 0.0, substeps=2)      # 0.64 m tile, heading north
    flags, north = [], []
    for _ in range(250):
        rec = world.frame(0.25, 0.0)
        flags.append(rec["teleport"])
        north.append(world.robot.north_m)
    assert sum(flags) >= 1 and world.teleports == sum(flags)
    k = flags.index(True)
    assert north[k] < north[k - 1] - 0.5                    # jumped back across the tile
    assert 0.0 <= min(north) and max(north) < 0.64
    assert all(0.0 < d < 0.01 for d in np.diff(north)[~np.array(flags[1:])])     # other frames move on
