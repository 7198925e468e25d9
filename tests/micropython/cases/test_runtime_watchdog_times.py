"""Watchdog times and replay feeding (pure; CPython and MicroPython): a stamp that is no number, a late sample
with an older stamp, a timeout that is no number; text that looks like a tagged float; a recorded tick index
that is no whole number."""
from onboard.runtime.node import STEP_TOPIC, Node
from onboard.runtime.replay_feed import ReplayFeedError, feed, floats_from_hex, floats_to_hex
from onboard.runtime.watchdog import Failsafe, Watchdog, WatchdogConfigError, WatchdogTimeError

NAN = float("nan")
INF = float("inf")


def _watchdog():
    fs = Failsafe()
    wd = Watchdog(fs, start_us=0)
    wd.add_input("imu", 50000)
    return fs, wd


def test_a_feed_stamped_nan_is_refused_and_the_input_still_goes_stale():
    """A feed stamp that is no finite number is refused: NaN compares false with everything, so an input fed
    NaN would never be stale again (the failsafe could not engage however long the input stayed silent)."""
    fs, wd = _watchdog()
    wd.feed("imu", 10000)
    for bad in (NAN, None, "10", True):
        try:
            wd.feed("imu", bad)
        except WatchdogTimeError as exc:
            assert isinstance(exc, ValueError) and "imu" in str(exc)
        else:
            raise AssertionError("fed with %r" % (bad,))
    assert wd.report()["imu"]["feeds"] == 1
    assert wd.check(50000) == []
    assert wd.check(70000) == ["imu"]
    assert fs.engaged


def test_a_check_at_nan_is_refused_and_leaves_the_failsafe_engaged():
    """A check at NaN is refused (it would find every input fresh and release the failsafe of a silent one)."""
    fs, wd = _watchdog()
    assert wd.check(100000) == ["imu"]
    for bad in (NAN, INF, None):
        try:
            wd.check(bad)
        except WatchdogTimeError:
            pass
        else:
            raise AssertionError("checked at %r" % (bad,))
    assert fs.engaged and wd.report()["imu"]["stale"]


def test_a_late_sample_with_an_older_stamp_does_not_age_the_input():
    """An input is as fresh as the newest stamp it was fed: a sample delivered late (older stamp, after a
    newer one) does not trip the failsafe while fresh data arrives."""
    fs, wd = _watchdog()
    wd.feed("imu", 100000)
    wd.feed("imu", 20000)          # delivered late
    assert wd.check(110000) == []
    assert not fs.engaged
    assert wd.check(150001) == ["imu"]
    assert wd.report()["imu"]["feeds"] == 2


def test_a_stamp_ahead_of_the_clock_still_counts_as_fed_now():
    fs, wd = _watchdog()
    wd.feed("imu", 10 ** 12)       # the sender's clock jumped ahead
    assert wd.check(10000) == []
    assert wd.check(60001) == ["imu"]
    assert fs.engaged


def test_a_timeout_that_is_no_number_is_a_config_error():
    wd = Watchdog()
    for bad in (INF, NAN, None, "soon"):
        try:
            wd.add_input("x", bad)
        except WatchdogConfigError:
            pass
        else:
            raise AssertionError("timeout %r accepted" % (bad,))
    wd.add_input("x", 1000)


def test_text_that_starts_with_the_float_tag_comes_back_as_the_same_text():
    """A text field "f:..." comes back as that text, not as a float ("f:0000000000000000" is not 0.0)."""
    value = {"name": "f:0000000000000000", "faults": ["f:", "f:f:x", "plain"], "x": [1.5, -0.0],
             "nested": {"s": "f:abc", "n": 3}}
    back = floats_from_hex(floats_to_hex(value))
    assert back == {"name": "f:0000000000000000", "faults": ["f:", "f:f:x", "plain"], "x": [1.5, -0.0],
                    "nested": {"s": "f:abc", "n": 3}}
    assert str(back["x"][1]) == "-0.0"
    assert floats_to_hex(0.5) == "f:000000000000e03f" and floats_to_hex("plain") == "plain"


def test_a_recorded_tick_index_that_is_no_whole_number_is_refused():
    """A tick index that is no whole number >= 0 (a recording edited by hand) is refused: 1.5 would run no group
    of that tick (1.5 % 1 != 0), a replay differing from the recording without saying why."""
    runs = []
    node = Node()
    node.every("a", 100, runs.append)
    assert feed(node, [(STEP_TOPIC, "", 0, {"time_us": 0, "tick": 0}),
                       (STEP_TOPIC, "", 10000, {"time_us": 10000, "tick": 1})]) == (0, 2)
    assert runs == [0, 10000]
    for bad in (1.5, 2.0, True, -1, "3", None):
        try:
            feed(node, [(STEP_TOPIC, "", 20000, {"time_us": 20000, "tick": bad})])
        except ReplayFeedError:
            continue
        raise AssertionError("tick %r fed" % (bad,))
    assert runs == [0, 10000] and node.scheduler.tick_index == 2
