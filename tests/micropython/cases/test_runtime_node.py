"""Node with parts: runs under CPython (pytest) and inside MicroPython (same numbers).

Parts on one node: the ground robot's estimation part (planar EKF fed IMU and pose
samples, watched inputs ``imu`` and ``aiding``), and two small parts of this file's own (an io
part that feeds the samples, a recorder); a stepping clock (time moves only when the node sleeps on it), no wall clock.
While recording into a batching sink (the ring log), node.run has it write what it holds between ticks.
"""
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.runtime.estimation import PoseEstimation
from onboard.runtime.node import Node, NodeConfigError
from onboard.runtime.scheduler import SchedulerConfigError
from test_runtime_scheduler import SteppingClock

IMU_PERIOD_US = 10000
POSE_PERIOD_US = 100000
G_MPS2 = 9.80665


class Feeder:
    """io part: a robot driving north at 0.5 m/s turning at 0.1 rad/s; IMU every tick, a pose every
    100 ms until ``pose_until_us`` (then silent)."""

    def __init__(self, estimation, pose_until_us):
        self.estimation = estimation
        self.pose_until_us = pose_until_us

    def attach(self, node):
        node.every("feed", 100, self._feed, io=True)

    def _feed(self, now_us):
        dt = IMU_PERIOD_US * 1e-6
        self.estimation.on_imu(ImuSample(now_us, IMU_PERIOD_US, (0.0, 0.0, -G_MPS2 * dt), (0.0, 0.0, 0.1 * dt)))
        if now_us % POSE_PERIOD_US == 0 and now_us < self.pose_until_us:
            t_s = now_us * 1e-6
            self.estimation.on_pose(PoseSample(now_us, (0.5 * t_s, 0.01 * t_s, 0.0), (0.0, 0.0, 0.1 * t_s)))


class Recorder:
    """Part: records (time, north, yaw, failsafe engaged) at 10 Hz."""

    def __init__(self, estimator):
        self.estimator = estimator
        self.rows = []
        self._node = None

    def attach(self, node):
        self._node = node
        node.every("record", 10, self._record)

    def _record(self, now_us):
        nav = self.estimator.nav_state()
        self.rows.append([now_us, nav.pos_ned_m[0], nav.euler_rad[2], 1 if self._node.failsafe.engaged else 0])

    def report(self):
        return {"rows": len(self.rows)}


def _node(pose_until_us):
    node = Node("test")
    est = node.add("estimation", PoseEstimation(PlanarEkf(), 100, 10, 50000, 300000))
    node.add("feed", Feeder(est, pose_until_us))
    rec = node.add("record", Recorder(est.estimator))
    return node, est, rec


def test_node_runs_parts_and_trips_on_a_silent_input():
    node, est, rec = _node(pose_until_us=1000000)
    node.run(SteppingClock(), 2000000)
    rep = node.report()
    assert rep["scheduler"]["groups"]["predict"]["runs"] == 200
    assert rep["scheduler"]["groups"]["aiding"]["runs"] == 20
    assert rep["record"]["rows"] == 20 and len(rec.rows) == 20
    assert rep["estimation"]["estimator"]["updates"] == 9           # poses 0.1 .. 0.9 s (the first initialises)
    # the pose stream stops after 0.9 s: stale once 300 ms have passed (at 1.3 s), never before
    assert rep["scheduler"]["watchdog"]["aiding"]["trips"] == 1
    assert rep["failsafe_engagements"] == 1
    engaged = [r[0] for r in rec.rows if r[3]]
    assert engaged[0] == 1300000 and all(r[3] == 0 for r in rec.rows if r[0] < 1300000)
    assert "stale:aiding" in node.failsafe.reasons


def test_node_checks_its_recipe():
    node, est, rec = _node(0)
    try:
        node.add("record", Recorder(est.estimator))
    except NodeConfigError:
        pass
    else:
        raise AssertionError("a part name added twice was accepted")
    node.step(0)
    try:
        node.every("late", 10, lambda t: None)
    except NodeConfigError:
        pass
    else:
        raise AssertionError("a rate group added after the start was accepted")
    bad = Node("bad")
    bad.every("a", 100, lambda t: None)
    bad.every("b", 30, lambda t: None)
    try:
        bad.step(0)
    except SchedulerConfigError:
        return
    raise AssertionError("30 Hz under a 100 Hz base accepted")


def test_io_groups_run_before_the_watchdog_check():
    """A sample read in this tick's io group counts as fresh in the same tick's check."""
    node = Node("io")
    node.watch("x", 10000)
    seen = []
    node.every("read", 100, lambda t: node.feed("x", t), io=True)
    node.every("ctl", 100, lambda t: seen.append(node.failsafe.engaged))
    for t_us in range(0, 200000, 10000):
        node.step(t_us)
    assert not any(seen) and node.report()["scheduler"]["watchdog"]["x"]["trips"] == 0


def golden_node_estimates():
    node, est, rec = _node(pose_until_us=1000000)
    node.run(SteppingClock(), 2000000)
    out = []
    for row in rec.rows:
        out.extend(row)
    cov = est.estimator.pose_covariance()
    return out + [cov[0], cov[4], cov[8]] + list(est.estimator.x)


def _recorded_run():
    """The node of _node() recording into a list: (topic, time_us) of every record, in order."""
    node, est, rec = _node(pose_until_us=300000)
    records = []
    node.record(lambda topic, time_us, msg: records.append((topic, time_us)), "test", {"rate_hz": 100})
    node.run(SteppingClock(), 50000)
    return records


def test_recording_writes_inputs_ticks_in_the_order_they_happen():
    records = _recorded_run()
    assert records[0] == ("/app/config", 0)
    # each tick: what the io part fed through the entry points in that tick's io phase, then the tick
    assert records[1:5] == [("/app/in/imu", 0), ("/app/in/aiding", 0), ("/app/step", 0), ("/app/in/imu", 10000)]
    assert [t for t, _ in records].count("/app/step") == 5


def golden_recording_order():
    return [t for _, t in _recorded_run()]


class _WatchingClock(SteppingClock):
    """A stepping clock that notes, at each wait for the next tick, how many records the sink wrote."""

    def __init__(self, sink):
        SteppingClock.__init__(self)
        self.sink = sink
        self.written = []

    def sleep_until_us(self, deadline_us):
        self.written.append(self.sink.records)
        SteppingClock.sleep_until_us(self, deadline_us)


def test_run_has_a_batching_sink_write_what_it_holds_between_ticks():
    """Node.run calls node.idle() before each wait: a ring log (32 records a batch) has written every
    record of a tick before the next one starts, and the file holds the recording in order."""
    from onboard.runtime.ring_log import RingLogSink, read_log
    from test_ring_log import _path, _read
    path = _path("node.bin")
    sink = RingLogSink(path, 16 * 1024, meta_bytes=1024, batch_records=32)
    node, est, rec = _node(pose_until_us=300000)
    node.record(sink, "test", {"rate_hz": 100})
    clock = _WatchingClock(sink)
    node.run(clock, 50000)
    want = [t for t, _ in _recorded_run()][1:]
    # before tick k (k >= 1): the records of ticks 0..k-1, all written
    steps = [i for i, t in enumerate(want) if t == "/app/step"]
    assert clock.written == [0] + [steps[k - 1] + 1 for k in range(1, 5)]
    sink.close()
    got = read_log(_read(path)).records
    assert [r[0] for r in got] == want
