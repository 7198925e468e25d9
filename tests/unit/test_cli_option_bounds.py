"""Command-line values no run can use are one line and exit 2, before any work (found by probing the CLIs):
pinger-locate's physical constants, sweep's seed ranges, policy check's input count and seed, grading-sweep's
seed and report folder, and a grading agent folder whose weights are empty, truncated or not the card's
network."""
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
