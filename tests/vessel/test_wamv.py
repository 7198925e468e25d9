"""The simulated WAM-V (harness.sim.wamv) and its sensors (harness.sim.sensors.wamv_sensors)."""
import math

import numpy as np
import pytest

from harness.sim.rng import RunRandom
from harness.sim.sensors.wamv_sensors import BoatImu, Gnss, Heading, YawGyro
from harness.sim.wamv import DEFAULTS, Wamv, drive_pattern
from onboard.core.settings import ConfigError
from onboard.vessel import model as vm
from onboard.vessel.thrust_map import ThrustMap

CALM = {"wind": {"speed_mps": 0.0, "gust_sigma_mps": 0.0}, "current": {"speed_mps": 0.0},
        "waves": {"force_n": 0.0, "moment_nm": 0.0}}
IDEAL_THRUSTERS = {"dead_band": 0.0, "efficiency_left": 1.0, "efficiency_right": 1.0}


def _run(boat, commands):
    for cmd in commands:
        boat.command(*cmd)
        boat.step()
    return boat.state()


def test_paper_mode_is_the_onboard_model_with_the_onboard_thrust_map():
    boat = Wamv({"mode": "paper", "paper": {"c9": -0.01}, "start": {"surge_mps": 1.0, "yaw_deg": 30.0}})
    tmap = ThrustMap({k: DEFAULTS["thrusters"][k] for k in ("lag_tau_s", "command_points", "forward_n",
                                                             "reverse_n")})
    params = vm.params_from({"c9": -0.01})
    x = boat.state()
    for cmd in drive_pattern(30.0, 0.01, np.random.default_rng(4)):
        boat.command(*cmd)
        boat.step()
        thrust = tmap.step(cmd[0], cmd[1], 0.01)
        x = vm.step(x, thrust, params, 0.01)
        assert boat.applied_thrust_n == thrust
    assert boat.state() == x and boat.time_us == 30000000


def test_paper_mode_process_noise_has_the_configured_density():
    noise = {"yaw_rad_per_sqrt_s": 0.0, "yaw_rate_radps_per_sqrt_s": 0.1, "pos_m_per_sqrt_s": 0.0,
             "surge_mps_per_sqrt_s": 0.2, "sway_mps_per_sqrt_s": 0.0}
    boat = Wamv({"mode": "paper", "paper": {"noise": noise}}, np.random.default_rng(0))
    jumps = []
    for _ in range(4000):
        x = boat.state()
        boat.step_thrust(0.0, 0.0)
        jumps.append(np.subtract(boat.state(), vm.step(x, (0.0, 0.0), boat.params, 0.01)))
    std = np.std(jumps, axis=0) / math.sqrt(0.01)
    assert std[vm.YAW_RATE] == pytest.approx(0.1, rel=0.05) and std[vm.SURGE] == pytest.approx(0.2, rel=0.05)
    assert std[vm.NORTH] == 0.0 and std[vm.SWAY] == 0.0


def test_rich_calm_top_speed_is_the_damping_balance():
    boat = Wamv({"mode": "rich", "thrusters": IDEAL_THRUSTERS, **CALM})
    x = _run(boat, [(1.0, 1.0)] * 6000)
    h = DEFAULTS["hull"]
    a, b, c = h["surge_drag_quad_n_per_mps2"], h["surge_drag_lin_n_per_mps"], -2 * 242.7
    u_top = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    assert x[vm.SURGE] == pytest.approx(u_top, rel=1e-4)
    assert x[vm.YAW_RATE] == 0.0 and x[vm.SWAY] == 0.0 and x[vm.EAST] == 0.0


def test_rich_turn_right_slips_out_and_holds_a_straight_course():
    boat = Wamv({"mode": "rich", "thrusters": IDEAL_THRUSTERS, **CALM})
    x = _run(boat, [(0.8, 0.4)] * 2000)
    assert x[vm.YAW_RATE] > 0.1 and x[vm.SWAY] < 0.0
    x = _run(boat, [(0.8, 0.8)] * 3000)                      # straight again: the turn dies out
    assert abs(x[vm.YAW_RATE]) < 1e-3 and abs(x[vm.SWAY]) < 1e-2
    y = _run(boat, [(0.8, 0.8)] * 3000)
    assert abs(y[vm.YAW_RATE]) < 0.1 * abs(x[vm.YAW_RATE]) and abs(y[vm.SWAY]) < 0.1 * abs(x[vm.SWAY])


def test_current_carries_a_drifting_boat():
    boat = Wamv({"mode": "rich", "wind": {"speed_mps": 0.0, "gust_sigma_mps": 0.0},
                 "waves": {"force_n": 0.0, "moment_nm": 0.0}, "current": {"speed_mps": 0.3, "to_deg": 90.0}})
    _run(boat, [(0.0, 0.0)] * 6000)
    v_n, v_e = boat.vel_ned_mps()
    assert v_n == pytest.approx(0.0, abs=1e-6) and v_e == pytest.approx(0.3, abs=1e-6)


def test_wind_pushes_downwind_and_waves_rock_the_boat():
    boat = Wamv({"mode": "rich", "current": {"speed_mps": 0.0}, "waves": {"force_n": 0.0, "moment_nm": 0.0},
                 "wind": {"speed_mps": 8.0, "from_deg": 0.0, "gust_sigma_mps": 0.0}})
    _run(boat, [(0.0, 0.0)] * 3000)
    assert boat.vel_ned_mps()[0] < -0.1                      # wind from the north: drifts south
    boat = Wamv({"mode": "rich", "current": {"speed_mps": 0.0}, "wind": {"speed_mps": 0.0, "gust_sigma_mps": 0.0},
                 "waves": {"force_n": 50.0, "moment_nm": 30.0, "from_deg": 60.0}}, np.random.default_rng(1))
    rates = []
    for _ in range(3000):
        boat.step()
        rates.append(boat.yaw_rate_radps)
    assert np.std(rates) > 1e-3 and abs(boat.north_m) < 2.0


def test_dead_band_and_efficiency():
    boat = Wamv({"mode": "rich", **CALM})
    _run(boat, [(0.02, -0.02)] * 100)
    assert boat.applied_thrust_n == (0.0, 0.0)
    _run(boat, [(1.0, 1.0)] * 2000)
    t_l, t_r = boat.applied_thrust_n
    assert t_l == pytest.approx(0.97 * 242.7, rel=1e-3) and t_r == pytest.approx(1.03 * 242.7, rel=1e-3)


def test_same_seed_same_run_other_seed_other_run():
    def run(seed):
        rr = RunRandom(seed)
        boat = Wamv(None, rr.stream("wamv"))
        return _run(boat, drive_pattern(20.0, 0.01, rr.stream("pattern")))
    assert run(3) == run(3)
    assert run(3) != run(4)


def test_drive_pattern_covers_all_segments_in_range():
    cmds = drive_pattern(200.0, 0.01, np.random.default_rng(0))
    a = np.array(cmds)
    assert a.shape == (20000, 2) and a.min() >= -1.0 and a.max() <= 1.0
    assert np.any(a[:, 0] == a[:, 1]) and np.any(a[:, 0] != a[:, 1]) and np.any(a < 0.0)


@pytest.mark.parametrize("settings,needle", [
    ({"mode": "fossen"}, "mode must be one of 'rich', 'paper'"),
    ({"hull": {"mass_kg": 0.0}}, "hull.mass_kg must be a number > 0"),
    ({"paper": {"c4": -3.0}}, "paper.c4 must be a number > 0"),
    ({"thrusters": {"dead_band": 0.7}}, "thrusters.dead_band must be a number in"),
    ({"waves": {"components": 0}}, "waves.components must be an integer >= 1"),
    ({"wind": {"speed": 3.0}}, "unknown wamv setting 'wind.speed'"),
])
def test_settings_are_checked(settings, needle):
    with pytest.raises(ConfigError, match=needle):
        Wamv(settings)


# ---------------------------------------------------------------- sensors
def _moving_boat():
    boat = Wamv({"mode": "paper", "start": {"surge_mps": 1.5}})
    boat.command(0.8, 0.6)
    return boat


def test_gnss_rate_noise_outliers_and_dropouts():
    boat = _moving_boat()
    gnss = Gnss(boat, np.random.default_rng(0), {"sigma_m": 0.5, "outlier_prob": 0.05, "dropout_prob": 0.01,
                                                 "dropout_s": 1.0})
    errs, times = [], []
    for _ in range(60000):
        boat.step()
        fix = gnss.poll(boat.time_us)
        if fix is not None:
            times.append(fix.time_us)
            assert fix.var_m2 == 0.25
            if not gnss.last_outlier:
                errs.append((fix.pos_ne_m[0] - boat.north_m, fix.pos_ne_m[1] - boat.east_m))
    assert gnss.fixes + gnss.dropped == 2401                  # 4 Hz over 600 s, from t = 0
    assert 0.03 < gnss.outliers / gnss.fixes < 0.07 and gnss.dropped > 50
    assert np.std(errs, axis=0) == pytest.approx([0.5, 0.5], rel=0.06)
    assert min(np.diff(times[1:])) == 250000


def test_imu_increments_integrate_to_the_truth_with_bias():
    boat = _moving_boat()
    imu = BoatImu(boat, np.random.default_rng(2), {"gyro_noise_dps_per_sqrt_s": 0.0,
                                                   "accel_noise_mps_per_sqrt_s": 0.0})
    yaw0 = boat.yaw_rad
    total = 0.0
    n = 0
    imu.poll(boat.time_us)
    for _ in range(500):
        boat.step()
        s = imu.poll(boat.time_us)
        total += s.dang_body_rad[2]
        n += 1
        assert s.dt_us == 10000 and s.dvel_body_mps[2] == pytest.approx(-9.80665 * 0.01)
    expected = math.remainder(boat.yaw_rad - yaw0, 2 * math.pi) + imu.gyro_bias_radps * 0.01 * n
    assert total == pytest.approx(expected, abs=1e-9)


def test_heading_and_gyro_noise_and_offset():
    boat = _moving_boat()
    head = Heading(boat, np.random.default_rng(3), {"sigma_deg": 2.0, "offset_deg": 1.0})
    gyro = YawGyro(boat, np.random.default_rng(4), {"sigma_dps": 0.5, "bias_dps": 0.2})
    dh, dg = [], []
    for _ in range(20000):
        boat.step()
        h = head.poll(boat.time_us)
        if h is not None:
            dh.append(math.remainder(h.yaw_rad - boat.yaw_rad, 2 * math.pi))
        g = gyro.poll(boat.time_us)
        dg.append(g.yaw_rate_radps - boat.yaw_rate_radps)
    assert len(dh) == 2001 and len(dg) == 20000
    assert np.degrees(np.mean(dh)) == pytest.approx(1.0, abs=0.15)
    assert np.degrees(np.std(dh)) == pytest.approx(2.0, rel=0.05)
    assert np.degrees(np.mean(dg)) == pytest.approx(0.2, abs=0.02)
    assert np.degrees(np.std(dg)) == pytest.approx(0.5, rel=0.05)
