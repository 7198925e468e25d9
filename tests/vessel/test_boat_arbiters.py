"""Scenario `boat-arbiters` (harness/scenarios/boat/boat_arbiters.py): the acceptance on a reduced count of
seeded buoy fields with the adversarial cases, the difference vote shadows make, held-out course files
written here by hand (a single goal and a mission), a malformed course file refused with one line, and the
metrics independent of the sweep runner's worker count.

The full study (40 seeded fields, the three arbiters):
``python -m harness run boat-arbiters --seed 1`` (docs/results/boat.md)."""
import json

import pytest

from harness.cli import main
from harness.scenarios import prepare
from harness.scenarios.context import RunContext

pytestmark = pytest.mark.scenario


def _run(overrides, seed=1):
    module, config = prepare("boat-arbiters", overrides)
    return module.run(config, RunContext(seed))


@pytest.mark.timeout(120)
def test_damn_with_shadows_reaches_the_seeded_goals_without_contact_and_shadows_off_does_not():
    m = _run({"courses": 8, "decide_hz": 2, "arbiters": ["damn", "damn_no_shadows"]})
    damn, off = m["arbiters"]["damn"], m["arbiters"]["damn_no_shadows"]
    assert m["success"] and m["acceptance"]["met"]
    assert damn["seeded"]["runs"] == 8
    assert damn["seeded"]["success_rate"] >= 0.95 and damn["seeded"]["contacts"] == 0
    assert damn["seeded"]["min_clearance_m"] > 0.0 and damn["seeded"]["stalls"] == 0
    for case in ("goal_behind_buoy", "u_trap", "narrow_gate"):
        assert damn["adversarial"][case]["outcome"] == "reached" and damn["adversarial"][case]["contacts"] == 0
    # without shadows the boat heads for regions behind buoys and touches them
    assert off["seeded"]["contacts"] > 0 and off["seeded"]["success_rate"] <= damn["seeded"]["success_rate"] - 0.5
    assert off["adversarial"]["goal_behind_buoy"]["contacts"] > 0
    assert m["shadows"]["with"]["contacts"] == 0 and m["shadows"]["without"]["contacts"] == off["seeded"]["contacts"]
    assert 1.0 <= damn["seeded"]["path_length_ratio"] < 1.6


HELD_OUT = """
# a held-out course: heading east, a cluster of buoys across the way, the goal behind its middle
[start]
north_m = 5.0
east_m = -10.0
yaw_deg = 90.0

[[buoys]]
north_m = 5.0
east_m = 20.0
radius_m = 0.6
height_m = 1.0

[[buoys]]
north_m = 9.0
east_m = 24.0
radius_m = 0.4
height_m = 1.0
role = "obstacle"

[[buoys]]
north_m = 0.0
east_m = 26.0
radius_m = 0.5
height_m = 1.0

[[buoys]]
north_m = 5.5
east_m = 33.0
radius_m = 0.7
height_m = 1.5

[goal]
north_m = 5.0
east_m = 45.0
"""

HELD_OUT_MISSION = """
[start]
north_m = 0.0
east_m = 0.0
yaw_deg = -30.0

[[buoys]]
north_m = 20.0
east_m = 0.0
radius_m = 0.5
height_m = 1.0

[[buoys]]
north_m = 20.0
east_m = -40.0
radius_m = 0.5
height_m = 1.0

[[tasks]]
kind = "waypoint"
north_m = 30.0
east_m = 0.0

[[tasks]]
kind = "waypoint"
north_m = 20.0
east_m = -50.0
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", [HELD_OUT, HELD_OUT_MISSION], ids=["goal", "mission"])
def test_a_held_out_course_file_is_run_the_same_way(tmp_path, capsys, text):
    course = tmp_path / "held_out.toml"
    course.write_text(text)
    out = tmp_path / "run"
    code = main(["run", "boat-arbiters", "--set", "course.file=%s" % course, "--set", 'arbiters=["damn"]',
                 "--quiet", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    m = json.loads((out / "metrics.json").read_text())
    assert m["course_file"] == str(course) and m["cases"] == 1
    block = m["arbiters"]["damn"]["course_file"]
    assert block["outcome"] == "reached" and block["contacts"] == 0 and block["min_clearance_m"] > 0.0
    assert (out / "paths.png").stat().st_size > 0 and (out / "votes.png").stat().st_size > 0


def test_a_malformed_course_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(HELD_OUT.replace("radius_m = 0.6", "radius_m = -0.6"))
    out = tmp_path / "run"
    code = main(["run", "boat-arbiters", "--set", "course.file=%s" % bad, "--quiet", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "course.file" in err and "radius_m" in err and len(err.splitlines()) == 1
    assert not (out / "metrics.json").exists()
    code = main(["run", "boat-arbiters", "--set", "course.file=%s" % (tmp_path / "none.toml"), "--quiet",
                 "--out", str(out)])
    assert code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.timeout(120)
def test_metrics_do_not_depend_on_the_worker_count():
    base = {"courses": 2, "adversarial": False, "decide_hz": 2, "arbiters": ["damn", "potential_field"]}
    one = _run(dict(base, workers=1), seed=4)
    two = _run(dict(base, workers=2), seed=4)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert one["arbiters"]["damn"]["seeded"]["runs"] == 2


@pytest.mark.parametrize("settings, leg", [
    (["--set", "goal_radius_m=40"], "(40 m, goal_behind_buoy)"),                   # the adversarial cases
    (["--set", "goal_radius_m=1e6", "--set", "adversarial=false"], "(60 m, the seeded buoy fields)"),
    (["--set", "goal_radius_m=30", "--set", "course.file=FILE"], "course.file)"),
])
def test_a_goal_radius_that_reaches_a_destination_from_the_leg_before_is_refused(tmp_path, capsys, settings, leg):
    """A goal radius at least the shortest leg to a destination would count it reached without going there:
    one line naming the setting and the leg, exit 2, nothing run."""
    course = tmp_path / "held_out.toml"
    course.write_text(HELD_OUT_MISSION)
    out = tmp_path / "run"
    code = main(["run", "boat-arbiters", "--quiet", "--out", str(out)]
                + [s.replace("FILE", str(course)) for s in settings])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "goal_radius_m" in err and leg in err, err
    assert not (out / "metrics.json").exists()
