"""A simulated Crazyflie's logged estimates carry seeded sensor noise and biases, also on the ground.

A real grounded Crazyflie logs ``stabilizer.roll`` jittering by hundredths of a degree around its IMU's
mounting tilt, ``acc.z`` near 1 g and a gyro with noise and a small bias. Bitcraze's swarm-rig logging test
(crazyflie-lib-python ``sys_test/swarm_test_rig/test_logging.py``) asserts the first logged
``stabilizer.roll`` is not 0.0 to 4 places; an exact simulator fails it.
"""
import statistics

import pytest

from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.sim_drone import SimCrazyflie
from harness.sim.rng import RunRandom
from onboard.core.settings import ConfigError

LOGGED = ["stabilizer.roll", "stabilizer.pitch", "acc.z", "gyro.x", "gyro.z", "stateEstimate.yaw"]


@pytest.mark.fil
@pytest.mark.timeout(60)
def test_grounded_drone_logs_a_noisy_roll_acc_and_gyro_over_cflib(open_sync):
    from cflib.crazyflie.log import LogConfig
    from cflib.crazyflie.syncLogger import SyncLogger

    with SimCrazyflieFleet(2, seed=11) as fleet:
        rows = {}
        for uri in fleet.uris:
            scf = open_sync(uri)
            lg = LogConfig(name="SysTest", period_in_ms=10)
            for var in LOGGED:
                lg.add_variable(var, "float")
            got = []
            with SyncLogger(scf, lg) as logger:
                for _ts, data, _block in logger:
                    got.append(data)
                    if len(got) == 60:
                        break
            rows[uri] = got
        open_sync.close_all()
        assert all(not v.airborne for v in fleet.vehicles), "grounded all along"
    firsts = []
    for uri, got in rows.items():
        roll = [d["stabilizer.roll"] for d in got]
        firsts.append(roll[0])
        assert round(roll[0] - 0.0, 4) != 0, "the swarm rig's assertNotAlmostEqual(0.0, roll, places=4)"
        assert len(set(roll)) == len(roll), "a new value every sample"
        assert 0.005 < statistics.stdev(roll) < 0.1                 # deg: a grounded Crazyflie's jitter
        assert abs(statistics.mean(roll)) < 1.5                     # deg: level within the mounting tilt
        acc_z = [d["acc.z"] for d in got]
        assert abs(statistics.mean(acc_z) - 1.0) < 0.03 and 0.0005 < statistics.stdev(acc_z) < 0.01
        for axis in ("gyro.x", "gyro.z"):
            gyro = [d[axis] for d in got]
            assert 0.05 < statistics.stdev(gyro) < 0.5 and abs(statistics.mean(gyro)) < 0.2
        yaw = [d["stateEstimate.yaw"] for d in got]
        assert 0.0 < statistics.stdev(yaw) < 0.05 and abs(statistics.mean(yaw)) < 0.5
    assert firsts[0] != firsts[1], "each drone its own draw"


def _grounded_rolls(drone, n=50, period_us=10000):
    out = []
    for k in range(1, n + 1):
        drone.advance(k * period_us)
        drone.sim_vehicle.new_log_instant()
        out.append(drone.sim_vehicle.logged_attitude_deg()[0])
    return out


def _drone(seed, noise=None, name="cf0"):
    return SimCrazyflie(name, config={"sensor_noise": noise or {}},
                        random=RunRandom(seed).stream("crazyflie.sensors.0"))


def test_noise_is_seeded_per_drone_and_switched_by_settings():
    a, b, c = _drone(3), _drone(3), _drone(4)
    ra, rb, rc = _grounded_rolls(a), _grounded_rolls(b), _grounded_rolls(c)
    assert ra == rb and ra != rc                                    # same seed, same numbers
    off = _drone(3, {"attitude_imu": False})
    assert set(_grounded_rolls(off)) == {0.0}
    # the position / velocity / battery group: off by default in the library, on when asked
    exact, est = _drone(3), _drone(3, {"position_velocity_vbat": True})
    xs, vbats = [], []
    for k in range(1, 101):
        for drone in (exact, est):
            drone.advance(k * 10000)
        assert exact.sim_vehicle.logged_position_m()[0] == exact.vehicle.north_m     # default: exact
        assert exact.sim_vehicle.logged_vbat_v() == exact.vehicle.battery_v
        xs.append(est.sim_vehicle.logged_position_m()[0] - est.vehicle.north_m)
        vbats.append(est.sim_vehicle.logged_vbat_v() - est.vehicle.battery_v)
    assert 0.005 < statistics.stdev(xs) < 0.02 and 0.002 < statistics.stdev(vbats) < 0.01
    # the attitude group's numbers do not depend on the other group being on
    assert _grounded_rolls(_drone(3, {"position_velocity_vbat": True})) == ra


def test_fleet_draws_from_its_seed_and_checks_the_settings():
    rolls = []
    for seed in (1, 1, 2):
        fleet = SimCrazyflieFleet(2, seed=seed)
        try:
            rolls.append([d.sim_vehicle.logged_attitude_deg()[0] for d in fleet.drones])
        finally:
            fleet.close()
    assert rolls[0] == rolls[1] and rolls[0] != rolls[2]
    with pytest.raises(ConfigError, match="sensor_noise.gyro_noise_degps must be a number >= 0"):
        SimCrazyflieFleet(1, config={"drone": {"sensor_noise": {"gyro_noise_degps": -1.0}}})
