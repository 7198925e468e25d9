"""SimWorld.run refuses a step that would never reach the end time (it looped forever before)."""
import math

import pytest

from harness.sim.world import SimWorld


class _App:
    def __init__(self):
        self.calls = []

    def run(self, clock, until_us):
        self.calls.append(until_us)
        clock.advance_to(until_us)


@pytest.mark.timeout(5)
@pytest.mark.parametrize("step_us", [0, -1000, math.nan, True])
def test_run_refuses_a_step_that_does_not_advance(step_us):
    world = SimWorld()
    app = _App()
    world.start(app)
    with pytest.raises(ValueError, match="step_us must be a positive"):
        world.run(10000, step_us)
    assert app.calls == [] and world.clock.now_us() == 0


def test_run_with_a_positive_step_reaches_the_end():
    world = SimWorld()
    app = _App()
    world.start(app)
    assert world.run(10000, 3000) is False
    assert app.calls == [3000, 6000, 9000, 10000]
