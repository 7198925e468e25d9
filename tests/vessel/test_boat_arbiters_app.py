"""The arbiters in the WAM-V app on its Node (boards.wamv.app with ``arbiter`` set; onboard.vessel.arbiters_part)
against the simulated WAM-V (harness.sim.boat_world): the app steers from its EKF estimate to the destination
round a buoy given on the ``obstacles`` entry, records its decisions, stops at the destination, and counts bad
samples without acting on them."""
import math

import pytest

from boards.wamv.app import WamvApp
from harness.sim.boat_world import BoatWorld
from harness.sim.rng import RunRandom
from onboard.core.settings import ConfigError
from onboard.vessel.arbiters import ArbiterInputError
from onboard.vessel.arbiters_part import DestinationSample, ObstaclesSample

BUOY = (20.0, 1.0, 0.5)


def _world(arbiter, destination=(40.0, 0.0), config=None):
    w = BoatWorld(RunRandom(2), gnss={"dropout_prob": 0.0, "outlier_prob": 0.0},
                  interface={"latency_s": 0.0, "timeout_ms": 200})
    app = WamvApp(w.driver(), w.gnss_app_end, dict({"arbiter": arbiter, "destination": list(destination)},
                                                   **(config or {})))
    w.attach_app(app, app.frame)
    return w, app


@pytest.mark.timeout(120)
def test_the_app_steers_round_a_buoy_to_the_destination_and_stops():
    w, app = _world("damn")
    topics = {}
    clear = []
    try:
        w.start(app, record=lambda topic, t, msg: topics.__setitem__(topic, topics.get(topic, 0) + 1))
        app.on_obstacles(ObstaclesSample(0, [BUOY]))             # recorded: a replay sees it too
        v = w.vessel

        def track(t_us):
            clear.append(math.hypot(v.north_m - BUOY[0], v.east_m - BUOY[1]) - BUOY[2] - 2.5)
        w.run(45000000, 100000, done=lambda: app.helm.arbiter.arrived, each_step=track)
        part = app.helm.arbiter
        assert part.arrived and math.hypot(v.north_m - 40.0, v.east_m) < 4.5
        assert min(clear) > 0.0
        assert topics.get("/app/out/arbiter", 0) > 50 and topics.get("/app/in/obstacles", 0) == 1
        assert app.report()["arbiter"]["decisions"] == part.arbiter.decisions > 50
        w.run(w.clock.now_us() + 8000000, 100000)          # arrived: speed reference 0, the boat slows
        assert app.helm.reference[1] == 0.0 and v.state()[4] < 0.5
    finally:
        w.close()


@pytest.mark.timeout(60)
def test_a_new_destination_and_bad_samples_potential_field():
    w, app = _world("potential_field", destination=(30.0, 0.0))
    try:
        part = app.helm.arbiter
        app.on_destination(DestinationSample(0, float("nan"), 3.0))
        app.on_obstacles(ObstaclesSample(0, [(10.0, 0.0, -1.0)]))
        assert part.bad_samples == 2 and part.destination == (30.0, 0.0) and part.obstacles == ()
        app.on_destination(DestinationSample(0, 0.0, 25.0))
        w.start(app)
        w.run(12000000, 100000)
        v = w.vessel
        assert part.destination == (0.0, 25.0) and v.east_m > 8.0 and abs(v.north_m) < 6.0
    finally:
        w.close()


def test_unknown_arbiter_or_settings_fail_at_build():
    with pytest.raises(ArbiterInputError):
        _world("vfh")
    with pytest.raises(ConfigError, match="headings"):
        _world("damn", config={"arbiter_config": {"headings": 2}})
