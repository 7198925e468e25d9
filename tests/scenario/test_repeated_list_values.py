"""List settings whose values key a scenario's results refuse a value given twice (one line, exit 2, before the
run): a repeat ran twice and the second run overwrote the first's results (uwb-ranging n_nodes [2, 2],
ins-eskf settings ["extreme", "extreme"])."""
import pytest

from harness.cli import main


@pytest.mark.parametrize("scenario, item, key", [
    ("uwb-ranging", "n_nodes=[2, 2]", "n_nodes"),
    ("uwb-ranging", 'modes=["broadcast", "broadcast"]', "modes"),
    ("ins-eskf", 'settings=["extreme", "extreme"]', "settings"),
    ("soil-sweep", 'soils=["sand", "sand"]', "soils"),
])
def test_a_repeated_value_is_refused_before_the_run(tmp_path, capsys, scenario, item, key):
    out = tmp_path / "run"
    code = main(["run", scenario, "--reduced", "--set", item, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("error: setting config.%s must be a non-empty list of distinct" % key)
    assert not (out / "metrics.json").exists()
