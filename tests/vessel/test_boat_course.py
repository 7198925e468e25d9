"""Course files and generated courses (harness.sim.boat_course): round trip, every malformed case refused
with one line naming the key, generator determinism and the generated courses' layout."""
import math
from pathlib import Path

import pytest

from harness.sim import boat_course as bc

EXAMPLE = Path(__file__).resolve().parents[2] / "harness" / "scenarios" / "boat" / "courses" / "example.toml"

GOOD = """
[start]
north_m = 1.0
east_m = -2
yaw_deg = 90.0

[[buoys]]
north_m = 10.0
east_m = 3.0
radius_m = 0.5
height_m = 1.0
role = "gate_left"

[[buoys]]
north_m = 20.0
east_m = 0.0
radius_m = 0.4
height_m = 0.6

[goal]
north_m = 60.0
east_m = 5.0
"""


def _write(tmp_path, text):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_good_file_reads_as_written(tmp_path):
    c = bc.load_course(_write(tmp_path, GOOD))
    assert (c.start_north_m, c.start_east_m) == (1.0, -2.0)
    assert c.start_yaw_rad == pytest.approx(math.pi / 2)
    assert c.buoys == (bc.Buoy(10.0, 3.0, 0.5, 1.0, "gate_left"), bc.Buoy(20.0, 0.0, 0.4, 0.6, "obstacle"))
    assert c.goal == (60.0, 5.0) and c.tasks == () and c.shore == ()


def test_shore_as_tables(tmp_path):
    text = GOOD + "\n[[shore]]\nnorth_m = 90.0\neast_m = -50\n\n[[shore]]\nnorth_m = 92.5\neast_m = 50.0\n"
    c = bc.load_course(_write(tmp_path, text))
    assert c.shore == ((90.0, -50.0), (92.5, 50.0))
    assert bc.load_course(_write(tmp_path, bc.course_to_toml(c))) == c
    bad = GOOD + "\n[[shore]]\nnorth_m = 90.0\neast_m = -50\n\n[[shore]]\nnorth_m = 92.5\n"
    with pytest.raises(bc.CourseFileError, match=r"shore\[1\]\.east_m: missing"):
        bc.load_course(_write(tmp_path, bad))


def test_example_file_round_trips(tmp_path):
    c = bc.load_course(EXAMPLE)
    assert [t.kind for t in c.tasks] == ["speed_gate", "obstacle_field", "pinger_gate", "dock"]
    assert {b.role for b in c.buoys} == set(bc.ROLES) - {"obstacle"} | {"obstacle"}
    assert len(c.shore) == 4
    assert bc.load_course(_write(tmp_path, bc.course_to_toml(c))) == c


@pytest.mark.parametrize("kind", bc.KINDS)
@pytest.mark.parametrize("seed", [0, 1, 7, 123])
def test_generated_courses_round_trip_exactly(tmp_path, kind, seed):
    c = bc.generate_course(seed, kind)
    assert bc.load_course(_write(tmp_path, bc.course_to_toml(c))) == c


def test_generator_is_deterministic_and_seeds_differ():
    for kind in bc.KINDS:
        assert bc.generate_course(5, kind) == bc.generate_course(5, kind)
        assert bc.generate_course(5, kind) != bc.generate_course(6, kind)
    with pytest.raises(ValueError, match="unknown course kind"):
        bc.generate_course(1, "lake")


def _gap_m(a, b):
    return math.hypot(a.north_m - b.north_m, a.east_m - b.east_m) - a.radius_m - b.radius_m


@pytest.mark.parametrize("seed", range(6))
def test_robotx_course_layout(seed):
    c = bc.generate_course(seed, "robotx")
    roles = [b.role for b in c.buoys]
    assert [t.kind for t in c.tasks] == ["speed_gate", "obstacle_field", "pinger_gate", "dock"]
    assert c.goal is None and len(c.shore) >= 2
    assert roles.count("pinger") == 1 and roles.count("dock") == 5
    for r in ("entry_left", "entry_right", "exit_left", "exit_right"):
        assert roles.count(r) == 1
    assert roles.count("gate_left") == roles.count("gate_right") == 3
    assert roles.count("obstacle") >= 3
    by_role = {r: [b for b in c.buoys if b.role == r] for r in bc.ROLES}
    # every task point is the centre of its gate / bay and the pinger is 6 m from the marked gate's centre
    speed, field, pgate, dock = c.tasks
    left, right = by_role["exit_left"][0], by_role["exit_right"][0]
    assert (field.north_m, field.east_m) == pytest.approx(((left.north_m + right.north_m) / 2,
                                                           (left.east_m + right.east_m) / 2))
    p = by_role["pinger"][0]
    assert math.hypot(p.north_m - pgate.north_m, p.east_m - pgate.east_m) == pytest.approx(6.0)
    # obstacles leave room for the boat; the mission points are reachable in order
    obstacles = by_role["obstacle"]
    for i, a in enumerate(obstacles):
        for b in obstacles[i + 1:]:
            assert _gap_m(a, b) > bc.BOAT_BEAM_M
    points = [(c.start_north_m, c.start_east_m)] + [(t.north_m, t.east_m) for t in c.tasks[:3]]
    for a, b in zip(points, points[1:]):
        assert bc.reachable(a, b, c.buoys, clearance_m=1.25)


@pytest.mark.parametrize("seed", range(8))
def test_buoy_field_goal_distance_and_reachable(seed):
    c = bc.generate_course(seed, "buoy_field")
    assert c.tasks == () and 60.0 <= math.hypot(*c.goal) <= 100.0
    assert 8 <= len(c.buoys) <= 16 and all(b.role == "obstacle" for b in c.buoys)
    assert bc.reachable((0.0, 0.0), c.goal, c.buoys, clearance_m=0.5 * bc.BOAT_BEAM_M + 0.5)


def test_course_for_run_reads_the_file_or_generates(tmp_path):
    assert bc.course_for_run("", 3, "buoy_field") == bc.generate_course(3, "buoy_field")
    assert bc.course_for_run(str(EXAMPLE), 3) == bc.load_course(EXAMPLE)
    with pytest.raises(bc.CourseFileError):
        bc.course_for_run(str(tmp_path / "none.toml"), 3)


def test_task_path_follows_the_legs():
    c = bc.generate_course(2, "robotx")
    path = bc.task_path(c, step_m=1.0)
    legs = [(c.start_north_m, c.start_east_m)] + [(t.north_m, t.east_m) for t in c.tasks]
    total = sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(legs, legs[1:]))
    assert total <= len(path) <= total + len(legs)
    assert path[0][:2] == legs[0] and path[-1][:2] == legs[-1]
    for (n0, e0, _), (n1, e1, _) in zip(path, path[1:]):
        assert math.hypot(n1 - n0, e1 - e0) <= 1.0 + 1e-9
    g = bc.generate_course(2, "buoy_field")
    n, e, yaw = bc.task_path(g, 5.0)[-1]
    assert (n, e) == g.goal and yaw == math.atan2(g.goal[1], g.goal[0])


def test_reachable_detects_a_wall():
    wall = [bc.Buoy(10.0, e, 0.6, 1.0) for e in range(-40, 41)]
    assert not bc.reachable((0.0, 0.0), (20.0, 0.0), wall, clearance_m=1.0, margin_m=0.0)
    assert bc.reachable((0.0, 0.0), (20.0, 0.0), wall[:40] + wall[42:], clearance_m=0.5, margin_m=0.0)


def test_course_to_toml_refuses_goal_and_tasks_together():
    c = bc.generate_course(1, "robotx")
    with pytest.raises(ValueError):
        bc.course_to_toml(bc.Course(0.0, 0.0, 0.0, (), (1.0, 2.0), c.tasks))
    with pytest.raises(ValueError):
        bc.course_to_toml(bc.Course(0.0, 0.0, 0.0, (), None, ()))


_B = '\n[[buoys]]\nnorth_m = 1.0\neast_m = 2.0\nradius_m = 0.5\nheight_m = 1.0\n'
_START = '[start]\nnorth_m = 0.0\neast_m = 0.0\nyaw_deg = 0.0\n'
_GOAL = '\n[goal]\nnorth_m = 50.0\neast_m = 0.0\n'
_TASK = '\n[[tasks]]\nkind = "dock"\nnorth_m = 5.0\neast_m = 1.0\n'

MALFORMED = [
    # (text, key named in the message, words of the problem)
    ("colour = 1\n" + _START + _GOAL, "colour", "unknown key"),
    (_GOAL, "start", "missing"),
    ('[start]\nnorth_m = 0.0\neast_m = 0.0\n' + _GOAL, "start.yaw_deg", "missing"),
    (_START.replace("yaw_deg = 0.0", "yaw_deg = 0.0\nroll_deg = 1.0") + _GOAL, "start.roll_deg", "unknown key"),
    (_START.replace("north_m = 0.0", 'north_m = "zero"') + _GOAL, "start.north_m", "must be a number"),
    (_START.replace("yaw_deg = 0.0", "yaw_deg = true") + _GOAL, "start.yaw_deg", "must be a number"),
    (_START.replace("east_m = 0.0", "east_m = nan") + _GOAL, "start.east_m", "must be finite"),
    (_START + _B.replace("radius_m = 0.5", "radius_m = -0.5") + _GOAL, "buoys[0].radius_m", "must be > 0"),
    (_START + _B.replace("radius_m = 0.5", "radius_m = 0") + _GOAL, "buoys[0].radius_m", "must be > 0"),
    (_START + _B + _B.replace("height_m = 1.0", "height_m = inf") + _GOAL, "buoys[1].height_m", "must be finite"),
    (_START + _B.replace("height_m = 1.0", "height_m = -inf") + _GOAL, "buoys[0].height_m", "must be finite"),
    (_START + _B.replace("north_m = 1.0", "north_m = -nan") + _GOAL, "buoys[0].north_m", "must be finite"),
    (_START + _B.replace("east_m = 2.0", "east_m = 1" + "0" * 400) + _GOAL, "buoys[0].east_m", "must be finite"),
    (_START + _B.replace("radius_m = 0.5\n", "") + _GOAL, "buoys[0].radius_m", "missing"),
    (_START + _B + 'colour = "red"\n' + _GOAL, "buoys[0].colour", "unknown key"),
    (_START + _B + 'role = "red_buoy"\n' + _GOAL, "buoys[0].role", "unknown role"),
    (_START + _B + 'role = 3\n' + _GOAL, "buoys[0].role", "unknown role"),
    (_START + "[buoys]\nnorth_m = 1.0\n" + _GOAL, "buoys", "array of tables"),
    (_START + _B, "goal/tasks", "exactly one"),
    (_START + _GOAL + _TASK, "goal/tasks", "exactly one"),
    ("tasks = []\n" + _START, "tasks", "non-empty"),
    (_START + _TASK.replace('"dock"', '"party"'), "tasks[0].kind", "unknown kind"),
    (_START + _TASK.replace('kind = "dock"\n', ''), "tasks[0].kind", "missing"),
    (_START + _TASK + "speed_mps = 2.0\n", "tasks[0].speed_mps", "unknown key"),
    (_START + _GOAL.replace("east_m = 0.0", "east_m = [1.0]"), "goal.east_m", "must be a number"),
    (_START + _GOAL + "\nbearing_deg = 3.0\n", "goal.bearing_deg", "unknown key"),
    ("shore = [[1.0, 2.0]]\n" + _START + _GOAL, "shore", "at least 2"),
    ("shore = [[1.0, 2.0], [3.0]]\n" + _START + _GOAL, "shore[1]", "pair"),
    ("shore = [[1.0, 2.0], [3.0, nan]]\n" + _START + _GOAL, "shore[1][1]", "must be finite"),
    ("start = 5\n" + _GOAL, "start", "must be a table"),
    ("[start\nnorth_m = 0.0\n", "not valid TOML", ""),
    (_START + _GOAL + _GOAL, "not valid TOML", ""),                 # a table defined twice
]


@pytest.mark.parametrize("text,key,problem", MALFORMED)
def test_malformed_file_is_refused_with_one_line(tmp_path, text, key, problem):
    path = _write(tmp_path, text)
    with pytest.raises(bc.CourseFileError) as e:
        bc.load_course(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("course file %s: " % path)
    assert key in msg and problem in msg


def test_unreadable_and_binary_files_are_refused(tmp_path):
    with pytest.raises(bc.CourseFileError, match="cannot read") as e:
        bc.load_course(tmp_path / "missing.toml")
    assert "\n" not in str(e.value)
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe\x00[start]")
    with pytest.raises(bc.CourseFileError, match="not UTF-8"):
        bc.load_course(p)
    assert issubclass(bc.CourseFileError, ValueError)
