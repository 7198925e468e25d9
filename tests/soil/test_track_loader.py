"""harness.sim.track_loader: the machine cuts a lane at the operator's depth with 60 Hz sensors; the traction
limit stalls it in dense soil and the anti-stall raise frees it; the drive-torque path recovers the
horizontal force and the lift-pressure path the vertical one; runs are deterministic per seed."""
import math

import numpy as np
import pytest

from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain
from harness.sim.track_loader import TrackLoader, _lag, time_of_step_us
from onboard.soil.machine_forces import fx_from_drive, fz_from_pressure


def _run(soil="loam", relative_density_pct=50.0, depth_m=0.1, length_m=2.5, seed=1, **operator):
    fields = sw.build_fields({"size_m": [8.0, 4.0], "cell_m": 0.1, "soil": soil,
                              "relative_density_pct": relative_density_pct})
    terrain = SoilTerrain(fields)
    op = {"depth_m": depth_m, "lanes": {"length_m": length_m, "start_ne_m": [1.0, 2.0]}}
    op.update(operator)
    loader = TrackLoader(terrain, {"operator": op}, RunRandom(seed))
    v0 = terrain.volumes()["bank_equivalent_m3"]
    samples = []
    loader.run(samples.append)
    return loader, terrain, samples, v0


@pytest.fixture(scope="module")
def loam_lane():
    return _run()


def test_a_lane_is_cut_at_the_operators_depth_with_60_hz_samples(loam_lane):
    loader, terrain, samples, v0 = loam_lane
    times = np.array([s.time_us for s in samples])
    assert set(np.diff(times).tolist()) <= {16666, 16667}
    assert times[0] == 0 and time_of_step_us(60) == 1000000
    cut = [s for s in samples if s.phase == "cut"]
    assert samples[-1].phase == "lift"
    depth = np.array([s.truth["depth_m"] for s in cut[60:]])       # after the entry ramp
    assert abs(float(depth.mean()) - 0.1) < 0.02
    assert terrain.totals.bank_cut_m3 > 0.3
    assert terrain.volumes()["bank_equivalent_m3"] == pytest.approx(v0, abs=1e-9)
    assert loader.stalls == 0
    # the lane's end leaves the pile on the ground when the machine is placed elsewhere
    loader.place(1.0, 3.0, 0.0)
    assert terrain.pile_m3 == 0.0
    assert terrain.volumes()["bank_equivalent_m3"] == pytest.approx(v0, abs=1e-9)


def test_blade_force_sensor_is_the_truth_with_noise_and_a_constant_bias(loam_lane):
    loader, _terrain, samples, _v0 = loam_lane
    meas = np.array([s.blade_force_n for s in samples])
    truth = np.array([(s.truth["fx_n"], s.truth["fz_n"]) for s in samples])
    err = meas - truth
    assert np.allclose(err.mean(axis=0), loader.force_bias_n, atol=60.0)
    assert 150.0 < float(err[:, 0].std()) < 600.0


def test_drive_torque_path_gives_the_horizontal_and_pressure_path_the_vertical_force(loam_lane):
    loader, _terrain, samples, _v0 = loam_lane
    cut = [s for s in samples if s.phase == "cut"]
    moving = np.array([s.truth["speed_mps"] > 0.2 for s in cut])
    fx_true = np.array([s.truth["fx_n"] for s in cut])
    fz_true = np.array([s.truth["fz_n"] for s in cut])
    fx = fx_from_drive(loader.config, [s.drive_torque_nm for s in cut], [s.speed_mps for s in cut],
                       [s.chassis_euler_rad[1] for s in cut], 1.0 / 60.0)
    assert np.mean(np.abs(fx - fx_true)[moving]) < 0.06 * np.mean(np.abs(fx_true[moving]))
    fz = fz_from_pressure(loader.config, [s.lift_pressure_pa for s in cut], [s.lift_m for s in cut], fx_true)
    assert np.mean(np.abs(fz - fz_true)[moving]) < 500.0
    # without F_x the pressure alone cannot give F_z (the arm's moment mixes both)
    fz_blind = fz_from_pressure(loader.config, [s.lift_pressure_pa for s in cut], [s.lift_m for s in cut], 0.0)
    assert np.mean(np.abs(fz_blind - fz_true)[moving]) > 5000.0


def test_traction_limit_stalls_in_dense_clay_and_the_anti_stall_raise_frees_the_machine():
    loader, _terrain, samples, _v0 = _run("clay", 100.0, depth_m=0.25, length_m=2.0)
    assert loader.stalls > 0 and loader.slip_steps > 0
    mu = loader.config["traction_coefficient"]
    for s in samples:
        assert abs(s.truth["drive_force_n"]) <= mu * s.truth["normal_n"] + 1e-6
        if not s.truth["failing"]:
            assert s.truth["speed_mps"] == 0.0
    depth = max(s.truth["depth_m"] for s in samples)
    assert depth < 0.2                                   # never reaches the 0.25 m setpoint
    assert samples[-1].phase == "lift"                   # and finishes the lane


def test_same_seed_same_run_and_random_setpoints_vary():
    a = _run(length_m=1.0, seed=4, random={"enabled": True, "change_s": 0.5})[2]
    b = _run(length_m=1.0, seed=4, random={"enabled": True, "change_s": 0.5})[2]
    assert [s.blade_force_n for s in a] == [s.blade_force_n for s in b]
    tilts = {round(s.commands["tilt_rad"], 6) for s in a if s.phase == "cut"}
    assert len(tilts) > 10


def test_actuator_lag_and_rate_limit():
    x, dt = 0.0, 1.0 / 600.0
    for _ in range(60):                                   # 0.1 s, tau 0.1 s, no rate limit
        x = _lag(x, 1.0, 0.1, 100.0, -5.0, 5.0, dt)
    assert x == pytest.approx(1.0 - math.exp(-1.0), abs=0.01)
    assert _lag(0.0, 1.0, 0.01, 0.4, -5.0, 5.0, 0.1) == pytest.approx(0.04)
    assert _lag(0.0, 9.0, 0.01, 100.0, -5.0, 5.0, 1.0) == 5.0
