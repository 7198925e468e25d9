"""A run stopped by an error (bad input found mid-run, a scenario breaking its contract, a failed deploy) closes
the progress bars it left open before the one error line is printed, as Ctrl-C and SIGTERM do: the line starts
clean instead of after a half-drawn bar."""
import argparse

import pytest
from tqdm import tqdm

from harness import cli, scenarios
from harness.config import ConfigError
from harness.progress import Progress
from onboard.deploy.build import DeployError


@pytest.mark.parametrize("error, code", [(ConfigError("bad value"), cli.EXIT_BAD_INPUT),
                                         (scenarios.ContractError("metrics"), cli.EXIT_BAD_INPUT),
                                         (DeployError("no board"), cli.EXIT_DEPLOY)])
def test_an_error_mid_run_closes_the_bars_before_its_line(error, code, capsys):
    bars = []

    def run(_args):
        bars.append(Progress(10.0, "run", enabled=True))
        bars[-1].update_to(3.0)
        raise error

    assert cli._run_command(argparse.Namespace(func=run)) == code
    assert bars[0]._bar not in getattr(tqdm, "_instances", ())    # closed
    assert capsys.readouterr().err.rstrip().splitlines()[-1].startswith("error")
