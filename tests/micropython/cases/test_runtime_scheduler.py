"""Scheduler, watchdog and samples: run under CPython (pytest) and inside MicroPython.

The clock here is a minimal stepping clock (time only moves when the scheduler
sleeps on it), so nothing reads the wall clock.
"""
from onboard.core.samples import ImuSample, PoseSample, SampleError, WheelCmd
from onboard.runtime.scheduler import GROUP_RATES, Scheduler, SchedulerConfigError
from onboard.runtime.watchdog import Failsafe, Watchdog


class SteppingClock:
    def __init__(self):
        self.t_us = 0

    def now_us(self):
        return self.t_us

    def sleep_until_us(self, deadline_us):
        if deadline_us > self.t_us:
            self.t_us = deadline_us


def test_rate_groups_run_at_declared_ratios():
    calls = {"imu": [], "ctl": [], "aid": []}
    sched = Scheduler([("imu", 100, lambda t: calls["imu"].append(t)),
                       ("ctl", 50, lambda t: calls["ctl"].append(t)),
                       ("aid", 10, lambda t: calls["aid"].append(t))])
    clock = SteppingClock()
    sched.run(clock, 1000000)
    assert len(calls["imu"]) == 100
    assert len(calls["ctl"]) == 50
    assert len(calls["aid"]) == 10
    assert calls["aid"][:3] == [0, 100000, 200000]
    rep = sched.report()
    assert abs(rep["groups"]["ctl"]["achieved_hz"] - 50.0) < 1e-9
    assert rep["overruns"] == 0


def test_non_integer_ratio_rejected():
    try:
        Scheduler([("a", 100, lambda t: None), ("b", 30, lambda t: None)])
    except SchedulerConfigError:
        return
    raise AssertionError("30 Hz under a 100 Hz base accepted")


def test_overrun_counted_and_ticks_skipped():
    clock = SteppingClock()
    runs = []

    def slow(t):
        runs.append(t)
        if len(runs) == 3:
            clock.t_us += 25000  # this run takes 2.5 periods

    sched = Scheduler([("fast", 100, slow)])
    sched.run(clock, 100000)
    rep = sched.report()
    # run 3 (t=20 ms) ends at 45 ms: the 30 ms tick is skipped, the 40 ms tick runs late at 45 ms
    assert rep["overruns"] == 1
    assert rep["skipped_ticks"] == 1
    assert runs == [0, 10000, 20000, 45000, 50000, 60000, 70000, 80000, 90000]
    assert rep["groups"]["fast"]["max_exec_us"] == 25000


def test_watchdog_engages_failsafe_on_stale_input_and_recovers():
    fs = Failsafe()
    wd = Watchdog(fs, start_us=0)
    wd.add_input("imu", 50000)
    wd.feed("imu", 0)
    assert wd.check(40000) == []
    assert not fs.engaged
    assert wd.check(60000) == ["imu"]
    assert fs.engaged
    wd.feed("imu", 70000)
    assert wd.check(70000) == []
    assert not fs.engaged
    assert wd.report()["imu"]["trips"] == 1


def test_latching_failsafe_needs_reset():
    fs = Failsafe(latching=True)
    wd = Watchdog(fs)
    wd.add_input("pose", 100000)
    wd.check(200000)
    wd.feed("pose", 210000)
    wd.check(210000)
    assert fs.engaged
    fs.reset()
    assert not fs.engaged


def test_samples_validate_shape():
    s = ImuSample(10, 10000, (0.0, 0.1, -0.098), (0.001, 0.0, 0.0))
    assert s.as_dict()["dvel_body_mps"] == [0.0, 0.1, -0.098]
    assert s == ImuSample(10, 10000, [0, 0.1, -0.098], [0.001, 0, 0])
    try:
        PoseSample(0, (1.0, 2.0), (0.0, 0.0, 0.0))
    except SampleError:
        pass
    else:
        raise AssertionError("2-element position accepted")
    assert not WheelCmd(0, float("nan"), 0.0).is_finite()


def test_a_time_or_vector_that_is_not_a_number_is_a_sample_error():
    """Text, None, NaN or infinity where a sample wants a whole number or a vector of numbers: SampleError
    naming the field (the watched inputs count it), not the ValueError / OverflowError of int() or float()."""
    bad = ((lambda: ImuSample(float("nan"), 10000, [0, 0, 0], [0, 0, 0]), "time_us"),
           (lambda: ImuSample(float("inf"), 10000, [0, 0, 0], [0, 0, 0]), "time_us"),
           (lambda: ImuSample("soon", 10000, [0, 0, 0], [0, 0, 0]), "time_us"),
           (lambda: ImuSample(10, None, [0, 0, 0], [0, 0, 0]), "dt_us"),
           (lambda: ImuSample(10, 10000, ["x", 0, 0], [0, 0, 0]), "dvel_body_mps"),
           (lambda: WheelCmd(None, 0.0, 0.0), "time_us"))
    for make, field in bad:
        try:
            make()
        except SampleError as exc:
            assert field in str(exc), (field, str(exc))
        else:
            raise AssertionError("accepted a bad " + field)


def golden_scheduler_times():
    calls = []
    sched = Scheduler([("a", 200, lambda t: None), ("b", 40, lambda t: calls.append(t))])
    sched.run(SteppingClock(), 200000)
    return calls


def test_the_group_rates_settings_rule_accepts_what_the_scheduler_builds():
    """GROUP_RATES (checked with the settings, before anything starts) says yes exactly where the
    Scheduler can be built from those rates."""
    for rates in ((100, 10, 50), (100, 10, 40), (300, 100, 50), (125, 25, 5), (200, 200, 1), (1, 1, 1), (0, 1, 1)):
        try:
            Scheduler([("g%d" % i, r, None) for i, r in enumerate(rates)])
            built = True
        except SchedulerConfigError:
            built = False
        assert GROUP_RATES[1](*rates) == built, rates


def test_a_boolean_rate_is_refused_as_the_settings_rule_refuses_it():
    """``True`` is an int in Python: a rate of True must not build a 1 Hz group (GROUP_RATES refuses it)."""
    for rates in ((True, 1), (100, True), (False, 1)):
        assert not GROUP_RATES[1](*rates)
        try:
            Scheduler([("g%d" % i, r, None) for i, r in enumerate(rates)])
        except SchedulerConfigError:
            continue
        raise AssertionError("rates %r built a scheduler" % (rates,))
