"""Command-line values no run can use are one line and exit 2, before any work (found by probing the CLIs):
pinger-locate's physical constants, sweep's seed ranges, policy check's input count and seed, grading-sweep's
seed, the report folders of the sweeps and conformance, a grading agent folder whose weights are empty,
truncated or not the card's network, scenario settings beyond any magnitude, grids and trajectories too
large to allocate, and a boat course far beyond any course."""
import os
import shutil

import numpy as np
import pytest

from harness.cli import main
from harness.scenarios.grading import agents


def _exit_2(capsys, argv, needle):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err, err


@pytest.mark.parametrize("option,value,needle", [
    ("--sound-speed-mps", "1e-300", "--sound-speed-mps: expected a number in [100, 10000]"),
    ("--timing-sigma-s", "1e200", "--timing-sigma-s: expected a number in [1e-09, 0.001]"),
    ("--timing-sigma-s", "1e-300", "--timing-sigma-s: expected a number in [1e-09, 0.001]"),
    ("--iterations", "1000000000", "--iterations: expected an integer in 1..1000000"),
])
def test_pinger_locate_refuses_constants_beyond_any_water(tmp_path, capsys, option, value, needle):
    _exit_2(capsys, ["pinger-locate", str(tmp_path / "pings.csv"), "--hydrophones", "0,0;1,0;0,1", option, value],
            needle)


def test_a_sweep_of_more_seeds_than_memory_is_refused(capsys):
    _exit_2(capsys, ["sweep", "waypoints", "--seeds", "1-1000000000000"], "at most 100000 seeds in one sweep")
    _exit_2(capsys, ["sweep", "waypoints", "--seeds", "0-99999,100000"], "at most 100000 seeds in one sweep, got 100001")


@pytest.mark.parametrize("argv,needle", [
    (["-n", "10000000"], "-n: expected an integer in 1..100000"),
    (["--seed", "-1"], "--seed: expected an integer >= 0"),
])
def test_policy_check_bounds_its_inputs(capsys, argv, needle):
    _exit_2(capsys, ["policy", "check", "models/pocket-dqn"] + argv, needle)


def test_grading_sweep_refuses_a_negative_seed_and_a_report_folder_it_cannot_write(tmp_path, capsys):
    _exit_2(capsys, ["grading-sweep", "--seed", "-1"], "--seed: expected an integer >= 0")
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    # refused at once (it wrote its report after every rollout and then failed on the folder)
    assert main(["grading-sweep", "--rollouts", "1", "--quiet", "--out", str(blocked / "report")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the report folder" in err, err


def _agent_copy(tmp_path, edit):
    folder = tmp_path / "agents" / "agent1"
    shutil.copytree(os.path.join(agents.MODEL_DIR, "agent1"), folder)
    edit(folder / "weights.npz")
    return str(tmp_path / "agents")


def _drop_stem(path):
    with np.load(path) as data:
        kept = {k: data[k] for k in data.files if not k.startswith("stem.")}
    np.savez(path, **kept)


def _narrow_head(path):
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["head.weight"] = arrays["head.weight"][:, :3]
    np.savez(path, **arrays)


@pytest.mark.parametrize("edit,needle", [
    (lambda p: p.write_bytes(b""), "weights.npz: empty file"),
    (lambda p: p.write_bytes(p.read_bytes()[:1000]), "weights.npz: not an .npz (zip) file, or truncated"),
    (_drop_stem, "weights.npz has no array stem.weight"),
    (_narrow_head, "the weights do not fit the card's network"),
])
def test_a_broken_grading_agent_folder_is_one_line(tmp_path, edit, needle):
    model_dir = _agent_copy(tmp_path, edit)
    with pytest.raises(agents.ModelError) as info:
        agents.load_agent("agent1", model_dir)
    assert needle in str(info.value) and "\n" not in str(info.value), str(info.value)
    agents.load_agent("agent2")                           # the committed agents still load


def _run_exit_2(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err


@pytest.mark.parametrize("scenario,setting", [
    ("waypoints", "max_duration_s=1e308"), ("uwb-ranging", "radio.clock_drift_ppm_max=1e308"),
    ("swarm-fixed", "episode.arena_m=1e308"), ("boat-arbiters", "goal_radius_m=1e308"),
    ("boat-ekf", "gnss_sigma_m=-1e300"),
])
def test_a_setting_beyond_any_magnitude_is_refused(tmp_path, capsys, scenario, setting):
    # each overflowed somewhere in its run (OverflowError, "float too large to pack", ...)
    _run_exit_2(capsys, ["run", scenario, "--reduced", "--quiet", "--out", str(tmp_path / "r"), "--set", setting],
                "no setting takes a magnitude above 1e+12")


def test_grids_and_trajectories_too_large_to_allocate_are_refused(tmp_path, capsys):
    _run_exit_2(capsys, ["run", "fil-leveler", "--reduced", "--quiet", "--out", str(tmp_path / "f"), "--set",
                         "terrain.cell_m=1e-5"], "must be at most 1048576 cells")           # asked for 107 GiB
    _run_exit_2(capsys, ["run", "ins-eskf", "--reduced", "--quiet", "--out", str(tmp_path / "i"), "--set",
                         "duration_s=1e9"], "must be at most 1000000 IMU samples")        # sampled for ever


def test_a_boat_course_point_more_than_10_km_from_the_origin_is_refused(tmp_path, capsys):
    course = tmp_path / "utm.toml"
    course.write_text("[start]\nnorth_m = 0.0\neast_m = 0.0\nyaw_deg = 0.0\n[goal]\nnorth_m = 5.4e6\neast_m = 0.0\n")
    _run_exit_2(capsys, ["run", "boat-arbiters", "--reduced", "--quiet", "--out", str(tmp_path / "b"), "--set",
                         "course.file=%s" % course], "goal: 5.4e+06 m from the local origin; a course lies within")
    course.write_text("[start]\nnorth_m = 1e300\neast_m = 0.0\nyaw_deg = 0.0\n[goal]\nnorth_m = 1e300\neast_m = 5.0\n")
    _run_exit_2(capsys, ["run", "boat-arbiters", "--reduced", "--quiet", "--out", str(tmp_path / "b"), "--set",
                         "course.file=%s" % course], "start: 1e+300 m from the local origin")


def test_sweeps_and_conformance_check_their_report_folder_first(tmp_path, capsys):
    blocked = tmp_path / "a_file"
    blocked.write_text("")
    _run_exit_2(capsys, ["level-sweep", "--quick", "--out", str(blocked)], "cannot write the report folder")
    _run_exit_2(capsys, ["level-sweep", "--quick", "--studies", ",", "--out", str(tmp_path / "l")],
                "--studies must be studies among rho, k, memetic")
    assert not (tmp_path / "l").exists()
    log = tmp_path / "run" / "log.mcap"
    assert main(["run", "waypoints", "--reduced", "--quiet", "--out", str(log.parent)]) == 0
    _run_exit_2(capsys, ["conformance", str(log), "--out", str(blocked)], "cannot write the report folder")


@pytest.mark.parametrize("server", ["crazyflies", "vescs"])
@pytest.mark.parametrize("seed", ["-1", "x"])
def test_the_servers_seed_is_an_integer_at_least_0_named_in_the_error(capsys, server, seed):
    """A negative seed is refused by its option's name before anything is served (not numpy's bare "expected
    non-negative integer")."""
    _exit_2(capsys, [server, "--seed", seed], "argument --seed: expected an integer >= 0, got %r" % seed)
