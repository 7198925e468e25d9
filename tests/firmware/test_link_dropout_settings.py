"""The firmware-in-the-loop scenarios' link_dropout block (harness.sim.avr_bridge.LINK_DROPOUT_RANGES): a dropout
asked for must start inside the run and last, else the run was accepted and lost no link (a start after
max_duration_s, a negative start that cut from the first command, a zero duration). One line, exit 2, checked
before the firmware is built or simavr starts."""
import pytest

from harness.cli import main


@pytest.mark.parametrize("scenario", ["fil-avr", "fil-leveler"])
@pytest.mark.parametrize("start_s, duration_s", [(200.0, 1.0), (-1.0, 1.0), (1.0, 0.0)])
def test_a_dropout_outside_the_run_is_refused_before_it(tmp_path, capsys, scenario, start_s, duration_s):
    out = tmp_path / "run"
    code = main(["run", scenario, "--reduced", "--set", "link_dropout.start_s=%r" % start_s,
                 "--set", "link_dropout.duration_s=%r" % duration_s, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "config.link_dropout.start_s, config.link_dropout.duration_s, config.max_duration_s" \
        in err[0] and "a dropout inside the run" in err[0]
    assert not (out / "metrics.json").exists()
