"""onboard.soil.loader_app: the loader's app as a recipe on a Node (entry point, watched input, the map and
estimate groups), cuts closed at the end of the operator's cut phase and passes ended by a new lane, bad
samples counted and dropped; onboard.soil.machine_forces: the drive and lift-pressure paths invert the
machine's moment balance."""
import math

import numpy as np
import pytest

from harness.sim.clock import SimClock
from onboard.core.settings import ConfigError
from onboard.soil import loader_app, machine_forces
from onboard.soil.blind_map import BladePose
from onboard.soil.grid_map import GridMap
from onboard.soil.loader_app import BlindMapping, MachineSample, checked_config

DT_US = 16667
MACHINE = {"mass_kg": 5000.0, "rolling_resistance": 0.04, "sprocket_radius_m": 0.35,
           "blade": {"offset_m": 2.0, "pivot_m": [0.3, 0.9], "cylinder_arm_m": 0.35, "cylinder_area_m2": 0.0157,
                     "mass_kg": 600.0}}


def _sample(k, north_m, east_m=2.0, down_m=0.1, phase="cut", lane=(0, 0), force=(5000.0, -500.0)):
    pose = BladePose(k * DT_US, north_m, east_m, down_m, 0.0, math.radians(10.0), 0.0)
    return MachineSample(k * DT_US, pose, force, 1800.0, 4.0e6, 0.0, 1.0, 0.0, phase, lane)


class _Cuts:
    def __init__(self):
        self.cuts = []

    def submit(self, cut):
        self.cuts.append(cut)


def _mapping_node():
    from onboard.runtime.node import Node
    cfg = checked_config({"estimation": False})
    node = Node("loader")
    cuts = _Cuts()
    mapping = node.add("mapping", BlindMapping(GridMap({"size_m": [8.0, 6.0], "cell_m": 0.1}), cfg, cuts))
    return node, mapping, cuts


def test_cuts_close_at_the_end_of_the_cut_phase_and_a_new_lane_ends_the_pass():
    node, mapping, cuts = _mapping_node()
    clock = SimClock()
    k = 0
    for lane, east in ((0, 2.0), (1, 4.5)):
        for step in range(90):                          # 1.5 m at 1 m/s, 0.1 m deep
            mapping.on_machine(_sample(k, 1.0 + step / 60.0, east, lane=(lane, 0)))
            k += 1
        for step in range(30):                          # lifting out
            mapping.on_machine(_sample(k, 2.5, east, down_m=0.1 - 0.01 * step, phase="lift", lane=(lane, 0)))
            k += 1
        node.run(clock, k * DT_US)
    mapping.finish()
    assert [c.lane for c in cuts.cuts] == [(0, 0), (1, 0)]
    for cut in cuts.cuts:
        assert len(cut.samples) == 90 and all(s.phase == "cut" for s in cut.samples)
        assert sum(r.valid for r in cut.records) >= 10
        assert cut.records[-1].t1_us <= cut.samples[-1].time_us
    rep = node.report()
    assert rep["mapping"]["cuts"] == 2 and rep["mapping"]["sweeps"] > 20
    assert rep["scheduler"]["groups"]["map"]["declared_hz"] == 20


def test_bad_samples_are_counted_and_never_reach_the_map():
    node, mapping, cuts = _mapping_node()
    mapping.on_machine(_sample(0, 1.0, force=(float("nan"), 0.0)))
    mapping.on_machine("not a sample")
    mapping.on_machine(_sample(1, 1.01))
    node.step(0)
    assert mapping.report()["rejected"] == 2 and mapping.mapper.poses and len(mapping.mapper.poses) == 1
    assert node.watchdog.report()["machine"]["feeds"] == 1


def test_the_recipe_and_its_settings():
    grid = GridMap({"size_m": [4.0, 4.0], "cell_m": 0.1})
    node = loader_app.loader_app(grid, {"sensor_paths": ["force", "drive"]}, MACHINE)
    assert [name for name, _part in node.parts] == ["estimation", "mapping"]
    assert "machine" in node.entries
    with pytest.raises(ConfigError, match="need the machine's constants"):
        loader_app.loader_app(grid, {"sensor_paths": ["drive+pressure"]})
    with pytest.raises(ConfigError, match="sensor_paths"):
        loader_app.loader_app(grid, {"sensor_paths": []})
    with pytest.raises(ConfigError, match="erosion.friction_rad"):
        loader_app.loader_app(grid, {"blind_map": {"erosion": {"friction_rad": 2.0}}})
    only_map = loader_app.loader_app(grid, {"estimation": False})
    assert [name for name, _part in only_map.parts] == ["mapping"]
    s = _sample(3, 1.0)
    d = s.as_dict()
    assert d["time_us"] == 3 * DT_US and d["blade_pose"]["ned_m"] == [1.0, 2.0, 0.1] and d["lane"] == [0, 0]


def test_the_force_paths_invert_the_machines_moment_balance_and_dynamics():
    rng = np.random.default_rng(3)
    fx = rng.uniform(5e3, 3e4, 50)
    fz = rng.uniform(-5e3, 2e3, 50)
    lift = rng.uniform(-0.2, 0.3, 50)
    pressure = machine_forces.lift_moment_nm(MACHINE, lift, fx, fz) / (0.35 * 0.0157)
    assert machine_forces.fz_from_pressure(MACHINE, pressure, lift, fx) == pytest.approx(fz, rel=1e-9, abs=1e-6)
    v = 1.0 + 0.2 * np.sin(np.arange(120) / 20.0)
    dt = 1.0 / 60.0
    slope = machine_forces.speed_slope_mps2(v, dt)
    ref = np.array([np.polyfit(np.arange(max(0, i - 6), min(120, i + 7)) * dt, v[max(0, i - 6):min(120, i + 7)], 1)[0]
                    for i in range(120)])
    assert slope == pytest.approx(ref, abs=1e-9)
    g = machine_forces.GRAVITY_MPS2
    torque = (20000.0 + 0.04 * 5000.0 * g + 5000.0 * slope) * 0.35       # level ground, F_x = 20 kN
    assert machine_forces.fx_from_drive(MACHINE, torque, v, np.zeros(120), dt) == pytest.approx(20000.0, abs=1e-6)
    assert machine_forces.speed_slope_mps2([1.0], dt).tolist() == [0.0]


def test_a_machine_sample_earlier_than_the_last_is_refused_and_the_rest_of_the_period_is_mapped():
    """A sample stamped before the last one was queued: the blind map raised BlindMapError out of the map
    group in the middle of its queue (the queue already taken: the later samples of the period were lost,
    the stale sample already in the cut). It is refused at the entry point and counted instead."""
    node, mapping, _cuts = _mapping_node()
    for k in range(5):
        mapping.on_machine(_sample(k, 1.0 + k / 60.0))
    mapping.on_machine(_sample(2, 1.0))                      # late: earlier than the last sample
    for k in range(5, 10):
        mapping.on_machine(_sample(k, 1.0 + k / 60.0))
    node.step(10 * DT_US)
    assert mapping.report()["rejected"] == 1
    assert mapping.mapper.poses[-1].time_us == 9 * DT_US
    times = [s.time_us for s in mapping.cut.samples]
    assert times == sorted(times) and len(times) == 10


def test_a_short_last_window_is_joined_to_the_one_before_across_missing_samples():
    # 1 m windows: samples over 0-0.95 m, then none (dropped samples) until 3.05 m, then to 3.25 m. The last
    # window (0.25 m long) is to be joined to the one before it, window 0; with min(k, last - 1) it was only
    # renumbered to 2 and stayed a window of its own
    cut = loader_app.Cut((0, 0))
    north = [0.05 * k for k in range(20)] + [3.05, 3.1, 3.15, 3.2, 3.25]
    cut.samples = [_sample(k, n) for k, n in enumerate(north)]
    subs = loader_app.CutEstimation.windows(cut, 1.0)
    assert [len(s.samples) for s in subs] == [len(north)]
    # without the gap the same rule: a short remainder joins window 1 of two
    cut.samples = [_sample(k, 0.05 * k) for k in range(46)]          # 0 .. 2.25 m
    assert [len(s.samples) for s in loader_app.CutEstimation.windows(cut, 1.0)] == [20, 26]
