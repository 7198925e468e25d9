"""The arbiter part's direct setters (what the mission part and an obstacles_fn call) refuse what its entries
refuse: a non-finite destination or a bad obstacle set is counted and the ones held stay."""
import math

import pytest

from onboard.vessel.arbiters_part import ArbiterPart


@pytest.mark.parametrize("north, east", [(math.nan, 3.0), (1.0, math.inf), (None, 1.0), ("1", 2.0), (True, 1.0)])
def test_set_destination_refuses_a_bad_point_and_keeps_steering(north, east):
    part = ArbiterPart("potential_field", destination=(30.0, 0.0))
    assert part.set_destination(north, east) is False
    assert part.destination == (30.0, 0.0) and part.bad_samples == 1 and part.destination_updates == 0
    heading, speed = part.reference(0.0, 0.0, 0.0, 0.0, 1000)
    assert part.refused == 0 and heading == pytest.approx(0.0, abs=1e-9) and speed > 0.0


@pytest.mark.parametrize("bad", [
    [(10.0, 0.0, 1.0), (math.nan, 5.0, 1.0)],
    [(10.0, 0.0, -1.0)],
    [(10.0, 0.0)],
    [(10.0, 0.0, 1.0, 4.0)],
    [None],
    5,
])
def test_set_obstacles_refuses_a_bad_set_and_keeps_the_held_one(bad):
    part = ArbiterPart("damn", destination=(30.0, 0.0))
    held = part.set_obstacles([(12.0, 0.0, 1.0)])
    assert held == ((12.0, 0.0, 1.0),) and part.obstacle_updates == 1
    assert part.set_obstacles(bad) == held
    assert part.obstacles == held and part.bad_samples == 1 and part.obstacle_updates == 1
    part.reference(0.0, 0.0, 0.0, 0.0, 1000)
    assert part.refused == 0 and part.arbiter.decisions == 1


def test_a_bad_obstacles_fn_result_keeps_the_last_good_set():
    sets = [[(12.0, 0.0, 1.0)], [(12.0, math.nan, 1.0)]]
    part = ArbiterPart("damn", destination=(30.0, 0.0), obstacles_fn=lambda: sets[0])
    part.reference(0.0, 0.0, 0.0, 0.0, 1000)
    sets.pop(0)
    part.reference(0.0, 0.0, 0.0, 0.0, 2000)
    assert part.obstacles == ((12.0, 0.0, 1.0),) and part.bad_samples == 1 and part.refused == 0
    assert part.arbiter.decisions == 2
