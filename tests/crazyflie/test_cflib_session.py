"""The official, unmodified cflib 0.1.34 against simulated Crazyflies over loopback UDP.

Real sockets and cflib's own threads: waits are bounded (events with timeouts, the lockstep
barriers), never wall-clock sleeps, except where cflib's MotionCommander sleeps itself.
"""
import threading

import pytest

from harness.sim.clock import SimClock
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.lockstep import CflibCounter, Lockstep

pytestmark = [pytest.mark.fil, pytest.mark.timeout(60)]

FIRMWARE_LOG_NAMES = ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z", "stateEstimate.vx",
                      "stateEstimate.vy", "stateEstimate.vz", "stateEstimate.yaw", "pm.vbat", "kalman.stateX",
                      "stabilizer.roll", "stabilizer.thrust", "ranging.distance0"]


def _check_session(scf, sim):
    cf = scf.cf
    assert cf.platform.get_protocol_version() == 10
    for name in FIRMWARE_LOG_NAMES:
        assert cf.log.toc.get_element_by_complete_name(name) is not None, name
    assert cf.log.toc.get_element_by_complete_name("stateEstimate.x").ctype == "float"
    assert cf.log.toc.get_element_by_complete_name("pm.state").ctype == "int8_t"
    n_log = sum(len(g) for g in cf.log.toc.toc.values())
    n_par = sum(len(g) for g in cf.param.toc.toc.values())
    assert n_log == len(sim.log.variables) and n_par == len(sim.params.params)
    assert cf.param.toc.get_element_by_complete_name("commander.enHighLevel").ctype == "uint8_t"
    assert cf.param.toc.get_element_by_complete_name("deck.bcLoco").get_readable_access() == "RO"
    assert cf.param.toc.get_element_by_complete_name("ring.effect").is_persistent(), "extended types fetched"
    scf.wait_for_params()
    assert cf.param.get_value("posCtlPid.xKp") == "2.0"
    assert cf.param.get_value("firmware.revision0") == str(0x5151A1C0)


def test_cflib_connects_to_one_and_to_four_drones_and_reads_the_tocs(open_sync):
    with SimCrazyflieFleet(1, seed=1) as one, SimCrazyflieFleet(4, seed=2) as four:
        scf = open_sync(one.uris[0])
        _check_session(scf, one.drones[0])
        sessions = [open_sync(uri) for uri in four.uris]
        for scf, sim in zip(sessions, four.drones):
            _check_session(scf, sim)
        assert len(set(four.uris)) == 4
        for sim in one.drones + four.drones:
            assert sim.stats["malformed"] == 0 and sim.stats["unknown"] == 0 and sim.stats["internal_errors"] == 0
        sim = four.drones[0]
        assert sim.log.toc_crc != sim.params.toc_crc
        open_sync.close_all()


def test_log_data_streams_at_the_requested_period(open_sync):
    from cflib.crazyflie.log import LogConfig
    from cflib.crazyflie.syncLogger import SyncLogger

    with SimCrazyflieFleet(2, seed=3) as fleet:
        for uri, period_ms in zip(fleet.uris, (20, 50)):
            scf = open_sync(uri)
            lg = LogConfig(name="pose", period_in_ms=period_ms)
            for var in ("stateEstimate.x", "stateEstimate.y", "stateEstimate.z", "pm.vbat"):
                lg.add_variable(var)
            stamps = []
            truth = fleet.vehicles[fleet.uris.index(uri)]
            with SyncLogger(scf, lg) as logger:
                for ts, data, _block in logger:
                    stamps.append(ts)
                    assert data["pm.vbat"] == pytest.approx(4.15, abs=1e-3)
                    assert data["stateEstimate.x"] == pytest.approx(truth.north_m, abs=1e-6)
                    if len(stamps) == 12:
                        break
            # firmware timestamps (ms) step by exactly the period: no drops, no doubles
            assert [b - a for a, b in zip(stamps, stamps[1:])] == [period_ms] * 11
        open_sync.close_all()


def test_param_write_reads_back_and_persistent_store(open_sync):
    with SimCrazyflieFleet(1, seed=4) as fleet:
        scf = open_sync(fleet.uris[0])
        scf.wait_for_params()
        param = scf.cf.param
        got = threading.Event()
        param.add_update_callback(group="posCtlPid", name="xKp", cb=lambda name, value: got.set())
        param.set_value("posCtlPid.xKp", 3.25)
        assert got.wait(5.0)
        assert param.get_value("posCtlPid.xKp") == "3.25"
        assert fleet.drones[0].param("posCtlPid", "xKp").value == 3.25
        with pytest.raises(AttributeError):
            param.set_value("deck.bcLoco", 0)          # read-only in the TOC: cflib refuses
        # an independent read request returns the written value too
        got.clear()
        param.request_param_update("posCtlPid.xKp")
        assert got.wait(5.0) and param.get_value("posCtlPid.xKp") == "3.25"
        stored = {}
        done = threading.Event()
        param.set_value("ring.effect", 9)
        param.persistent_store("ring.effect", lambda name, ok: (stored.update(ok=ok), done.set()))
        assert done.wait(5.0) and stored["ok"] is True
        done.clear()
        param.persistent_get_state("ring.effect", lambda name, st: (stored.update(state=st), done.set()))
        assert done.wait(5.0)
        assert stored["state"].is_stored and stored["state"].default_value == 6 and stored["state"].stored_value == 9
        open_sync.close_all()


def test_velocity_setpoints_fly_a_drone_to_a_target_within_5_cm(open_sync):
    """Lockstep on a SimClock: hover-setpoint take-off, then a P loop on the logged estimate."""
    from cflib.crazyflie.log import LogConfig

    clock = SimClock()
    target_x_m, target_y_m, height_m = 1.2, -0.6, 0.5
    with SimCrazyflieFleet(1, seed=5, clock=clock) as fleet:
        # the counter sees every packet from the link's opening on, as the drone's rx_packets counts them: the
        # lockstep's uplink barrier (rx_packets >= packets_sent) then waits for each setpoint
        counters = []
        scf = open_sync(fleet.uris[0], before_open=lambda cf: counters.append(CflibCounter(cf)))
        cf = scf.cf
        counter = counters[0]
        latest = {}
        lg = LogConfig(name="state", period_in_ms=10)
        for var in ("stateEstimate.x", "stateEstimate.y", "stateEstimate.z"):
            lg.add_variable(var)
        lg.data_received_cb.add_callback(lambda ts, data, _lg: latest.update(data))
        started = threading.Event()
        lg.started_cb.add_callback(lambda _lg, on: on and started.set())
        cf.log.add_config(lg)
        lg.start()
        assert started.wait(5.0)
        step = Lockstep(clock, fleet, [counter])
        for k in range(150):                                # 1.5 s take-off ramp at 100 Hz
            cf.commander.send_hover_setpoint(0.0, 0.0, 0.0, min(1.0, k / 100.0) * height_m)
            step.advance(10000)
        for _ in range(600):                               # 6 s of velocity setpoints
            ex, ey = target_x_m - latest["stateEstimate.x"], target_y_m - latest["stateEstimate.y"]
            vz = 1.5 * (height_m - latest["stateEstimate.z"])
            cf.commander.send_velocity_world_setpoint(1.5 * ex, 1.5 * ey, vz, 0.0)
            step.advance(10000)
        truth = fleet.vehicles[0]
        assert abs(truth.north_m - target_x_m) < 0.05 and abs(-truth.east_m - target_y_m) < 0.05
        assert abs(latest["stateEstimate.x"] - target_x_m) < 0.05
        assert abs(truth.height_m - height_m) < 0.05
        assert truth.cfg["max_speed_mps"] >= max(abs(truth.vel_north_mps), abs(truth.vel_east_mps))
        cf.commander.send_notify_setpoint_stop()
        sim = fleet.drones[0]
        assert sim.stats["rejected_setpoints"] == 0 and sim.stats["wdt_stabilize"] == 0
        open_sync.close_all()


def test_motion_commander_takes_off_moves_and_lands(open_sync):
    """cflib's MotionCommander paces itself with time.sleep, so this one runs in realtime."""
    from cflib.positioning.motion_commander import MotionCommander

    with SimCrazyflieFleet(1, seed=6) as fleet:
        scf = open_sync(fleet.uris[0])
        mc = MotionCommander(scf, default_height=0.3)
        try:
            mc.take_off(velocity=1.0)
            mc.left(0.2, velocity=1.0)
            mc.forward(0.3, velocity=1.0)
            height_m = fleet.vehicles[0].height_m
        finally:
            mc.land(velocity=1.0)      # also stops MotionCommander's (non-daemon) setpoint thread
        truth = fleet.vehicles[0]
        assert height_m > 0.2
        assert -truth.east_m == pytest.approx(0.2, abs=0.1), "left is +y in the Crazyflie frame = west"
        # the last leg is cut short by the landing (the drone stops when it touches down)
        assert 0.1 < truth.north_m < 0.4
        assert fleet.wait_until(lambda: not truth.motors_on, 5.0) or not truth.airborne
        open_sync.close_all()
