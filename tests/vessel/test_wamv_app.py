"""The boat app against the simulated WAM-V (boards.wamv.app on harness.sim.boat_world): closed loop,
the recording's fit topics, the watchdog stopping both thrusters on a cut link or silent sensors."""
import math

from boards.wamv.app import WamvApp
from harness.sim.boat_world import BoatWorld
from harness.sim.rng import RunRandom
from onboard.control.heading_speed import HeadingSpeedController
from onboard.vessel import log_topics as lt
from onboard.vessel.thrust_map import ThrustMap


def _world(seed=1, latency_s=0.0, plan=None, log=None):
    w = BoatWorld(RunRandom(seed), gnss={"dropout_prob": 0.0, "outlier_prob": 0.0},
                  interface={"latency_s": latency_s, "timeout_ms": 200}, log=log)
    app = WamvApp(w.driver(), w.gnss_app_end, {"plan": plan or [[8.0, 0.0, 1.5], [8.0, 60.0, 1.5]]})
    w.attach_app(app, app.frame)
    return w, app


def test_closed_loop_tracks_heading_and_speed_and_records_fit_topics():
    topics = {}
    w, app = _world()
    try:
        w.start(app, record=lambda topic, t, msg: topics.__setitem__(topic, topics.get(topic, 0) + 1))
        w.run(12000000, 1000000)
        v = w.vessel
        assert abs(math.degrees(v.yaw_rad) - 60.0) < 12.0
        assert 1.1 < v.state()[4] < 1.9
        assert not app.failsafe.engaged and app.ekf.initialized
        est = app.ekf.x
        assert math.hypot(est[2] - v.north_m, est[3] - v.east_m) < 1.5
        for topic in lt.FIT_TOPICS:
            assert topics.get(topic, 0) > 0, topic
    finally:
        w.close()


def test_link_cut_stops_both_thrusters_within_250_ms():
    w, app = _world()
    try:
        w.start(app)
        w.run(3000000, 1000000)
        assert w.outboards.thrust_n[0] > 0 and w.outboards.thrust_n[1] > 0
        w.cut_outboard("left", 3000000)
        w.run(3250000, 10000)
        assert w.outboards.thrust_n == (0.0, 0.0)
        assert "stale:outboard_left" in app.failsafe.reasons
    finally:
        w.close()


def test_silent_sensors_stop_both_thrusters():
    w, app = _world()
    try:
        w.start(app)
        w.run(3000000, 1000000)
        for s in w.clock_sensors if hasattr(w, "clock_sensors") else w.sensors:
            s.entry = lambda sample: None           # the GNSS line and the IMU go quiet
        w.run(3800000, 10000)
        assert app.failsafe.engaged and "stale:imu" in app.failsafe.reasons
        assert w.outboards.thrust_n == (0.0, 0.0)
    finally:
        w.close()


def test_allocation_keeps_the_moment_and_limits():
    ctl = HeadingSpeedController(ThrustMap())
    t_l, t_r = ctl.allocate(400.0, 100.0)
    assert t_l <= 242.7 + 1e-9 and t_r >= -101.9 - 1e-9
    assert abs((t_l - t_r) * 1.027 - 100.0) < 1e-6
    cl, cr = ctl.step(0.5, 1.0, 0.0, 0.0, 1.0, 0)
    assert cl > cr                                   # heading to the right: more left thrust


def test_a_silent_heading_source_alone_stops_both_thrusters():
    """The compass / INS heading is a watched input: with GNSS and gyro alive, a heading source that goes
    quiet engages the failsafe (stale:heading) and both thrusters give zero within 250 ms of its timeout."""
    w, app = _world()
    try:
        w.start(app)
        w.run(3000000, 1000000)
        assert not app.failsafe.engaged and w.outboards.thrust_n[0] > 0
        heading = [s for s in w.sensors if getattr(s, "model", None) is w.heading_model]
        assert len(heading) == 1
        heading[0].entry = lambda sample: None
        timeout_us = app.config["heading_timeout_us"]
        w.run(3000000 + timeout_us - 150000, 10000)
        assert not app.failsafe.engaged                 # not stale yet (the last sample came before 3 s)
        w.run(3000000 + timeout_us + 250000, 10000)
        assert app.failsafe.engaged and sorted(app.failsafe.reasons) == ["stale:heading"]
        assert w.outboards.thrust_n == (0.0, 0.0)
    finally:
        w.close()
