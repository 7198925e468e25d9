"""``boards.linux_service.run_until_stopped`` with ``--duration-s``: the app runs in chunks of ``chunk_us`` and the
last chunk ends at the duration, not up to a chunk after it."""
from boards.linux_service import StopSignals, run_until_stopped
from harness.sim.clock import SimClock


class _App:
    def __init__(self):
        self.untils = []

    def run(self, clock, until_us):
        self.untils.append(until_us)
        clock.advance_to(until_us)


def test_the_run_ends_at_the_duration():
    clock = SimClock(start_us=1000)
    app = _App()
    run_until_stopped(app, clock, StopSignals(), duration_s=0.12, chunk_us=50000)
    assert app.untils == [51000, 101000, 121000]
    assert clock.now_us() == 121000


def test_without_a_duration_chunks_stay_whole_until_a_signal():
    clock = SimClock()
    stop = StopSignals()
    app = _App()
    real_run = app.run

    def run(c, until_us):
        real_run(c, until_us)
        if len(app.untils) == 3:
            stop.signum = 15
    app.run = run
    run_until_stopped(app, clock, stop, chunk_us=50000)
    assert app.untils == [50000, 100000, 150000]
