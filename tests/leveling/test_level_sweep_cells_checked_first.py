"""level-sweep checks the cells of every study before any study runs: a cell of the last study that can never
level (MA1 with one agent) is refused before the first study's runs, and nothing is written, not even the
report folder."""
import os

import pytest

from harness.config import ConfigError
from harness.scenarios.leveling.level_sweep import QUICK, level_sweep
from harness.sweep_runner import Runner


class _CountingRunner(Runner):
    """The local sweep runner, counting the jobs it is given."""

    def __init__(self):
        Runner.__init__(self)
        self.jobs = 0

    def map(self, fn, arg_tuples):
        arg_tuples = list(arg_tuples)
        self.jobs += len(arg_tuples)
        return Runner.map(self, fn, arg_tuples)


def test_a_memetic_cell_that_never_levels_is_refused_before_the_rho_study_runs(tmp_path):
    out = str(tmp_path / "sweep")
    runner = _CountingRunner()
    with pytest.raises(ConfigError, match="at least 2 agents for ma1"):
        level_sweep(out, studies=("rho", "memetic"), runs=1, base=dict(QUICK, agents=1, max_cycles=10),
                    rho_values=(0.5,), terrains=("mounds",), runner=runner)
    runner.close()
    assert runner.jobs == 0
    assert not os.path.exists(out)



@pytest.mark.parametrize("args", [["--set", "agents=0"], ["--set", "agents=1", "--studies", "memetic"],
                                  ["--rho", "0"]])
def test_the_cli_refuses_bad_settings_before_it_makes_the_report_folder(tmp_path, capsys, args):
    from harness.cli import main
    out = tmp_path / "out"
    assert main(["level-sweep", "--quick", "--runs", "1", "--out", str(out)] + args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "level-sweep" in err, err
    assert not out.exists()
