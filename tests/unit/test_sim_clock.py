"""Simulated clock: ordering, lockstep with the scheduler, no wall time."""
import pytest

from harness.sim.clock import PRIORITY_PHYSICS, PRIORITY_SENSOR, SimClock, SimClockError
from onboard.runtime.node import Node


def test_events_fire_in_time_then_priority_then_fifo_order():
    clock = SimClock()
    fired = []
    clock.call_at(200, lambda t: fired.append(("b", t)), priority=PRIORITY_SENSOR)
    clock.call_at(200, lambda t: fired.append(("a", t)), priority=PRIORITY_PHYSICS)
    clock.call_at(100, lambda t: fired.append(("first", t)))
    clock.call_at(200, lambda t: fired.append(("c", t)), priority=PRIORITY_SENSOR)
    clock.advance_to(250)
    assert fired == [("first", 100), ("a", 200), ("b", 200), ("c", 200)]
    assert clock.now_us() == 250


def test_time_never_goes_back():
    clock = SimClock(start_us=1000)
    with pytest.raises(SimClockError):
        clock.advance_to(999)
    with pytest.raises(SimClockError):
        clock.call_at(10, lambda t: None)


def test_reserved_event_fires_where_call_at_would_have_put_it():
    clock = SimClock()
    fired = []
    clock.call_at(200, lambda t: fired.append("before"))
    key = clock.reserve(200)                 # its place: after "before", ahead of "after"
    clock.call_at(200, lambda t: fired.append("after"))
    clock.call_at(100, lambda t: clock.call_reserved(key, lambda t2: fired.append(("reserved", t2))))
    clock.advance_to(300)
    assert fired == ["before", ("reserved", 200), "after"]
    with pytest.raises(SimClockError):
        clock.call_reserved(key, lambda t: None)         # its time has passed
    with pytest.raises(SimClockError):
        clock.reserve(299)


def test_scheduler_runs_in_lockstep_with_world_events():
    clock = SimClock()
    world = []
    clock.call_every(1000, lambda t: world.append(t), priority=PRIORITY_PHYSICS)
    seen = []
    node = Node("lockstep")
    node.every("ctl", 100, lambda t: seen.append((t, len(world))))
    node.run(clock, 50000)
    # at each 10 ms tick the world has already been stepped up to and including that time
    assert seen[:3] == [(0, 1), (10000, 11), (20000, 21)]
    assert len(seen) == 5


def test_watchdog_in_node_trips_on_stale_stream_in_sim_time():
    clock = SimClock()
    node = Node("watched")
    node.watch("imu", 30000)
    # the IMU stream stops at 100 ms
    clock.call_every(10000, lambda t: node.feed("imu", t) if t <= 100000 else None)
    engaged_at = []
    node.every("ctl", 100, lambda t: engaged_at.append(t) if node.failsafe.engaged else None)
    node.run(clock, 200000)
    assert engaged_at[0] == 140000    # first tick with more than 30 ms since the 100 ms sample
    assert node.watchdog.report()["imu"]["trips"] == 1
