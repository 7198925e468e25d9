"""Scenario robotx-course: the whole RobotX mission by the WAM-V app (EKF, LIDAR perception, mission planner, DAMN
arbiter, pinger locator) on a course file written here, scored from the truth; bad course files refused with one
line; the scoring's pieces (hull contact, bootstrap interval, the planner's briefing) on their own."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.scenarios.boat import robotx_course as rc
from harness.sim.boat_course import load_course

# a compact mission along north: speed gate at 15 m, an obstacle field from 30 to 48 m, two gates at 68 m (the
# pinger 6 m beyond the east one), the dock's bay at 88-92 m
COURSE = """
[start]
north_m = 0.0
east_m = 0.0
yaw_deg = 0.0

[[buoys]]
north_m = 15.0
east_m = -5.0
radius_m = 0.4
height_m = 1.0
role = "gate_left"
[[buoys]]
north_m = 15.0
east_m = 5.0
radius_m = 0.4
height_m = 1.0
role = "gate_right"
[[buoys]]
north_m = 30.0
east_m = -6.0
radius_m = 0.4
height_m = 1.0
role = "entry_left"
[[buoys]]
north_m = 30.0
east_m = 6.0
radius_m = 0.4
height_m = 1.0
role = "entry_right"
[[buoys]]
north_m = 38.0
east_m = -2.0
radius_m = 0.4
height_m = 0.8
[[buoys]]
north_m = 41.0
east_m = 5.0
radius_m = 0.3
height_m = 0.8
[[buoys]]
north_m = 48.0
east_m = -6.0
radius_m = 0.4
height_m = 1.0
role = "exit_left"
[[buoys]]
north_m = 48.0
east_m = 6.0
radius_m = 0.4
height_m = 1.0
role = "exit_right"
[[buoys]]
north_m = 68.0
east_m = -14.0
radius_m = 0.4
height_m = 1.0
role = "gate_left"
[[buoys]]
north_m = 68.0
east_m = -4.0
radius_m = 0.4
height_m = 1.0
role = "gate_right"
[[buoys]]
north_m = 68.0
east_m = 4.0
radius_m = 0.4
height_m = 1.0
role = "gate_left"
[[buoys]]
north_m = 68.0
east_m = 14.0
radius_m = 0.4
height_m = 1.0
role = "gate_right"
[[buoys]]
north_m = 74.0
east_m = 9.0
radius_m = 0.4
height_m = 1.2
role = "pinger"
%s
[[tasks]]
kind = "speed_gate"
north_m = 15.0
east_m = 0.0
[[tasks]]
kind = "obstacle_field"
north_m = 48.0
east_m = 0.0
[[tasks]]
kind = "pinger_gate"
north_m = 68.0
east_m = 9.0
[[tasks]]
kind = "dock"
north_m = 90.0
east_m = 0.0
""" % "".join("[[buoys]]\nnorth_m = %r\neast_m = %r\nradius_m = 0.3\nheight_m = 1.5\nrole = \"dock\"\n" % (n, e)
              for n, e in ((88.0, -4.0), (92.0, -4.0), (92.0, 0.0), (92.0, 4.0), (88.0, 4.0)))


@pytest.mark.timeout(120)
def test_a_course_file_written_here_runs_the_whole_mission(tmp_path, capsys):
    path = tmp_path / "compact.toml"
    path.write_text(COURSE)
    assert [t.kind for t in load_course(path).tasks] == list(rc.TASKS)
    out = tmp_path / "run"
    code = main(["run", "robotx-course", "--reduced", "--quiet", "--seed", "5", "--out", str(out),
                 "--set", "course.file=%s" % path, "--set", "course.tasks=0"])
    assert code == 0, capsys.readouterr().err
    m = json.loads((out / "metrics.json").read_text())
    run = m["runs"][0]
    assert m["tasks"] == list(rc.TASKS) and run["done"] == [True, True, True, True]
    assert run["planner"] == ["done", "done", "done", "done"]
    assert m["success"] and m["acceptance"]["completion_rate"] == 1.0
    # the pinger gate was found by the located pinger: the fix within a few metres of the buoy (74, 9)
    assert run["pinger_fix_error_m"] is not None and run["pinger_fix_error_m"] < 3.0
    # the score: the four tasks' points and the time bonus, minus the contacts
    pts = rc.DEFAULTS["points"]
    expected = sum(pts.values()) + 100.0 * (1.0 - run["time_s"] / rc.DEFAULTS["time_limit_s"]) - 25.0 * run["contacts"]
    assert run["score"] == pytest.approx(expected, abs=0.05)
    timing = json.loads((out / "run.json").read_text())["timing"]
    assert timing["sim_s"] > 60.0 and timing["sim_seconds_per_cpu_second"] > 0.0
    assert (out / "course.png").exists() and (out / "scores.png").exists()


@pytest.mark.parametrize("text,needle", [
    ("[start]\nnorth_m = 0.0\neast_m = 0.0\nyaw_deg = 0.0\n[goal]\nnorth_m = 5.0\neast_m = 0.0\n",
     "not a [[tasks]] mission"),
    ("[start]\nnorth_m = 0.0\neast_m = 0.0\n[goal]\nnorth_m = 5.0\neast_m = 0.0\n", "start.yaw_deg: missing"),
])
def test_a_bad_course_file_is_one_line_and_exit_2(tmp_path, capsys, text, needle):
    _refused(tmp_path, capsys, text, needle)


def _refused(tmp_path, capsys, text, needle):
    """robotx-course on the course ``text``: exit 2, one line on stderr naming course.file and ``needle``."""
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "run"
    assert main(["run", "robotx-course", "--reduced", "--quiet", "--out", str(out), "--set",
                 "course.file=%s" % path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "course.file" in err, err
    assert not (out / "metrics.json").exists()
    return path


PINGER_BUOY = """[[buoys]]
north_m = 74.0
east_m = 9.0
radius_m = 0.4
height_m = 1.2
role = "pinger"
"""


@pytest.mark.parametrize("edit,needle", [
    (lambda c: c.replace(PINGER_BUOY, ""), 'tasks[2] (pinger_gate at north_m 68, east_m 9): a pinger gate needs '
                                           'exactly one buoy with role = "pinger" (the file has 0)'),
    (lambda c: c.replace(PINGER_BUOY, PINGER_BUOY + PINGER_BUOY.replace("9.0", "-9.0")), "(the file has 2)"),
    # the speed gate's point 20 m off its buoys' centre: its crossing could not be scored
    (lambda c: c.replace('kind = "speed_gate"\nnorth_m = 15.0', 'kind = "speed_gate"\nnorth_m = 35.0'),
     "tasks[0] (speed_gate at north_m 35, east_m 0): no gate_left / gate_right buoy pair centred within 12 m"),
    # the field's exit buoys given the obstacle role
    (lambda c: c.replace('role = "exit_left"\n', "").replace('role = "exit_right"\n', ""),
     "tasks[1] (obstacle_field at north_m 48, east_m 0): no exit_left / exit_right buoy pair"),
])
def test_a_course_whose_tasks_cannot_be_run_and_scored_is_one_line_and_exit_2(tmp_path, capsys, edit, needle):
    text = edit(COURSE)
    assert text != COURSE
    path = _refused(tmp_path, capsys, text, needle)
    assert load_course(path).tasks                      # a well-formed file: the loader takes it


def test_generated_courses_the_example_and_the_compact_course_pass_the_mission_check(tmp_path):
    example = Path(rc.__file__).parent / "courses" / "example.toml"
    path = tmp_path / "compact.toml"
    path.write_text(COURSE)
    assert rc.mission_problem(load_course(example)) is None
    assert rc.mission_problem(load_course(path)) is None
    assert [s for s in range(200) if rc.mission_problem(rc.generate_course(s, "robotx"))] == []


def test_hull_contact_is_the_rectangle_not_a_circle():
    # a buoy of radius 0.3 m: 2.6 m ahead of the centre touches the bow (half length 2.45 m), 2.6 m abeam does not
    assert rc._hull_contact(0.0, 0.0, 0.0, 2.6, 0.0, 0.3, 2.45, 1.2)
    assert not rc._hull_contact(0.0, 0.0, 0.0, 0.0, 2.6, 0.3, 2.45, 1.2)
    # heading east: the same buoy north is now abeam
    assert not rc._hull_contact(0.0, 0.0, math.pi / 2, 2.6, 0.0, 0.3, 2.45, 1.2)
    assert rc._hull_contact(0.0, 0.0, math.pi / 2, 0.0, 2.6, 0.3, 2.45, 1.2)


def test_bootstrap_interval_is_seeded_and_contains_the_mean():
    x = [400.0, 650.0, 620.0, 300.0, 655.0, 640.0]
    a = rc.bootstrap_ci(x, 2000, 0.95, np.random.default_rng(1))
    b = rc.bootstrap_ci(x, 2000, 0.95, np.random.default_rng(1))
    assert a == b and a[1] < a[0] < a[2] and a[0] == pytest.approx(np.mean(x))
    assert a[1] >= min(x) and a[2] <= max(x)
    assert rc.bootstrap_ci([5.0], 100, 0.95, np.random.default_rng(1)) == (5.0, 5.0, 5.0)


def test_the_briefing_does_not_tell_which_gate_the_pinger_marks(tmp_path):
    path = tmp_path / "compact.toml"
    path.write_text(COURSE)
    course = load_course(path)
    brief = rc.briefing(course, course.tasks)
    assert [t.kind for t in brief] == list(rc.TASKS)
    area = brief[2]
    # the mean of the four gate buoys: as far from the marked gate (east) as from the other
    assert (area.north_m, area.east_m) == pytest.approx((68.0, 0.0))
    assert brief[1].entry_ne_m == pytest.approx((30.0, 0.0))
    segs = rc.truth_gates(course, course.tasks)
    assert segs[2] == [((68.0, 4.0), (68.0, 14.0))] and len(segs[1]) == 2 and segs[3] == []
