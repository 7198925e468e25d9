"""The grading-agent training's command line (train_policy.main) refuses what would fail only after the data
were collected, at parse time with exit 2: an odd ``--layers`` (the residual blocks take two convolutions;
the net's forward pass raised IndexError on the first batch), an ``--agents`` entry other than agent1 /
agent2 (a KeyError or ValueError after collecting the data), a negative ``--seed`` (numpy's default_rng
raised in the first episode), a ``--device`` torch does not know."""
import pytest

pytest.importorskip("torch")

from harness.training.grading_policy import dataset, train_policy  # noqa: E402


def _no_work(*args, **kwargs):
    raise AssertionError("worked despite bad arguments")


@pytest.mark.parametrize("argv,needle", [
    (["--layers", "3"], "argument --layers: expected an even integer >= 2 (residual blocks of two convolutions), "
                        "got '3'"),
    (["--layers", "0"], "argument --layers: expected an even integer >= 2"),
    (["--agents", "agent3"],
     "argument --agents: expected agent1 or agent2 or both, separated by a comma, got 'agent3'"),
    (["--agents", "agent1,"], "argument --agents: expected agent1 or agent2"),
    (["--agents", "agent1,agent1"], "argument --agents: expected agent1 or agent2"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (["--device", "gpu"], "--device gpu: Expected one of cpu, cuda"),
])
def test_bad_arguments_exit_2_before_any_data_is_collected(tmp_path, capsys, monkeypatch, argv, needle):
    monkeypatch.setattr(dataset, "collect_parallel", _no_work)
    monkeypatch.setattr(train_policy, "_train", _no_work)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        train_policy.main(argv + ["--threads", "1", "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err.strip().splitlines()[-1], err
    assert not out.exists()


def test_good_agent_lists_pass():
    assert train_policy.agent_list("agent1,agent2") == "agent1,agent2"
    assert train_policy.agent_list("agent2") == "agent2"
    assert train_policy.even_layers("8") == 8



def test_the_int8_export_refuses_a_negative_seed_before_loading_anything(tmp_path, capsys):
    # before: accepted, the int8 folder created, then RunRandom's ValueError from the first calibration episode
    from harness.training.grading_policy import export_int8
    out = tmp_path / "int8"
    with pytest.raises(SystemExit) as exc:
        export_int8.main(["--agent", "agent1", "--seed", "-1", "--out", str(out)])
    assert exc.value.code == 2
    assert "argument --seed: expected an integer >= 0, got '-1'" in capsys.readouterr().err
    assert not out.exists()
