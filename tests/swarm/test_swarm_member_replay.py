"""A swarm member recorded at its boundary replays bit for bit (``python -m harness replay``), and runs
through the conformance targets (``python -m harness conformance``).

Everything that enters a member passes an entry point taking one sample (ranges, own velocity, goal
range, goal resets) and so does the state of its random draws at the start of each decision: the
swarm's members share one generator, so what one member draws depends on the others. A swarm
scenario records drone 0 of its first flight into its log.mcap; without the recorded random states
the replayed member draws other numbers and diverges.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from harness.config import ConfigError, merge
from harness.conformance import main_conformance
from harness.replay import EXIT_DIVERGED, EXIT_IDENTICAL, main_replay, read_recording
from harness.scenarios.swarm import flight as ep
from harness.scenarios.swarm import study as swarm_scenario
from onboard.core.samples import RangeSample
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.runtime.mcap_log import McapLog
from onboard.runtime.replay_feed import IN_PREFIX, decode_sample
from onboard.swarm.member import SwarmMember

pytestmark = pytest.mark.scenario
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A short swarm-fixed run (seed 3, two drones, 8 simulated seconds over cflib) and its log."""
    out = tmp_path_factory.mktemp("swarm")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "swarm-fixed", "--seed", "3", "--out", str(out),
                           "--quiet", "--set", "drone_counts=[2]", "--set", "large_swarm.drones=0",
                           "--set", "episode.max_duration_s=8", "--set", "episode.compare_estimators=false"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    return out / "log.mcap"


def _rewrite(events, path, keep):
    """``events`` (read_recording) written to a new MCAP file, those ``keep(event)`` refuses left out."""
    log = McapLog(str(path))
    for topic, schema, time_us, data in events:
        if keep((topic, schema, time_us, data)):
            log.log(topic, time_us, decode_sample(schema, data) if topic.startswith(IN_PREFIX) else data)
    log.close()


def test_the_recorded_member_replays_bit_exactly(recorded, tmp_path, capsys):
    events, damage = read_recording(str(recorded))
    assert damage is None and events[0][3]["app"] == "swarm_member"
    config = events[0][3]["config"]
    assert config["name"] == "drone0" and config["peers"] == [1]
    assert config["models"] == {"policy": "int8", "estimator": "int8", "dir": "models/swarm"}
    topics = {e[0] for e in events}
    for name in ("range", "velocity", "goal_range", "random_state"):
        assert IN_PREFIX + name in topics
    code = main_replay([str(recorded), "--out", str(tmp_path / "r")])
    captured = capsys.readouterr()
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    report = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert report["identical"] and report["estimator"] == "particle_filter"
    assert report["ticks"] >= 70 and report["inputs"] > report["ticks"] * 3
    for name in ("velocity", "decision"):
        t = report["topics"][name]
        assert t["logged"] == t["replayed"] >= 70 and t["max_abs_diff"] == 0 and t["first_divergence_us"] is None
    # the member flew: commands that are not all hover, estimates of the neighbour and the goal
    outs = [d for topic, _s, _t, d in events if topic == "/app/out/decision"]
    assert any(math.hypot(*d["setpoint_body_mps"]) > 0 for d in outs)
    assert set(outs[-1]["objects"]) == {"1", "goal"}


def test_the_recording_conforms_on_every_particle_filter_implementation(recorded, tmp_path, capsys):
    code = main_conformance([str(recorded), "--out", str(tmp_path / "c")])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    result = json.loads((tmp_path / "c" / "conformance.json").read_text())
    targets = result["targets"]
    assert "skipped" in targets["micropython"]
    for target in ("pure", "cython"):
        if "skipped" in targets[target]:
            continue
        assert targets[target]["tolerance"] == 0.0
        assert all(t["max_abs_diff"] == 0 for t in targets[target]["topics"].values())
    assert targets["pure"]["within"]


@pytest.mark.parametrize("impl", ["cython", "numpy"])
def test_replay_picks_the_particle_filter_kernels(recorded, tmp_path, capsys, impl):
    from harness.replay import replay_events
    from onboard.impl import ImplUnavailable, load
    from onboard.estimators.particle_filter import KERNEL_MODULES
    try:
        load(KERNEL_MODULES, impl)
    except ImplUnavailable:
        pytest.skip("%s kernels not built here" % impl)
    events, _ = read_recording(str(recorded))
    result = replay_events(events, impl=impl, tolerance=1e-9)
    assert result["impl"] == impl and result["recorded_impl"] == events[0][3]["config"]["impl"]
    assert result["identical"], result["topics"]


def test_without_its_random_states_the_member_diverges(recorded, tmp_path, capsys):
    events, _ = read_recording(str(recorded))
    dropped = tmp_path / "no_random_state.mcap"
    _rewrite(events, dropped, lambda e: e[0] != IN_PREFIX + "random_state")
    assert main_replay([str(dropped), "--out", str(tmp_path / "r")]) == EXIT_DIVERGED
    # ... while the same rewrite keeping them replays identically (the rewrite itself changes nothing)
    kept = tmp_path / "kept.mcap"
    _rewrite(events, kept, lambda e: True)
    assert main_replay([str(kept), "--out", str(tmp_path / "k")]) == EXIT_IDENTICAL
    capsys.readouterr()


class _Driver:
    def __init__(self):
        self.cmds = []

    def command(self, sp):
        self.cmds.append(sp)
        return True


def test_a_member_sharing_its_generator_replays_with_goal_resets(tmp_path, capsys):
    """A member fed by hand, drawing from a generator that something else draws from between its
    decisions, with a goal reset in the middle: its recording replays identically."""
    net, dqn = ep.load_models("float", "float")
    rng = np.random.default_rng(11)
    log = McapLog(str(tmp_path / "member.mcap"))
    drv = _Driver()
    t0_us = 3000000
    mem = SwarmMember(dqn, net, NumpyDraws(rng), [1, 2], drv, {"step_rate_hz": 10},
                      dict(ep.AGENT, n_particles=200), start_us=t0_us, name="drone0",
                      models={"policy": "float", "estimator": "float", "dir": "models/swarm"})
    mem.record(log.log, "test", t0_us)
    for k in range(40):
        now = t0_us + k * 100000
        mem.on_velocity(now, (0.1, 0.05 * math.sin(k * 0.1)), 0.3)
        mem.on_range(RangeSample(now - 20000, 1, 1.5 - 0.01 * k, (0.0, 0.1)))
        if k % 3:
            mem.on_range(RangeSample(now - 10000, 2, 2.0 + 0.005 * k, (0.1, 0.0)))
        mem.on_goal_range(now, 2.5 - 0.02 * k)
        if k == 20:
            mem.new_goal(now)
        rng.standard_normal(7 + k)              # the other members' draws
        mem.step(now)
    log.close()
    assert mem.node.part("draws").states_recorded == 40 and len(drv.cmds) == 40
    code = main_replay([str(tmp_path / "member.mcap"), "--out", str(tmp_path / "r")])
    captured = capsys.readouterr()
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    assert "goal_reset" in {e[0][len(IN_PREFIX):] for e in read_recording(str(tmp_path / "member.mcap"))[0]}


def test_the_recorded_member_must_fly_in_the_first_flight():
    cfg = merge(swarm_scenario.DEFAULTS, {"drone_counts": [2], "record_member": 2}, "swarm-fixed")
    with pytest.raises(ConfigError, match="record_member"):
        swarm_scenario.check_config(cfg)
    swarm_scenario.check_config(merge(swarm_scenario.DEFAULTS, {"drone_counts": [2], "record_member": -1},
                                      "swarm-fixed"))
