"""soil-sweep's acceptance judges c and gamma in clay and loam only: a sweep of neither (here sand alone) reports
those checks as not applicable (null) and leaves them out of ``success``; before, they read false, so such a
sweep could never succeed whatever its estimates."""
import json

import pytest

from harness.cli import main

pytest.importorskip("scipy")


def test_a_sweep_without_clay_or_loam_leaves_c_and_gamma_out_of_its_acceptance(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "soil-sweep", "--reduced", "--set", 'soils=["sand"]', "--out", str(out)])
    capsys.readouterr()
    m = json.loads((out / "metrics.json").read_text())
    acc = m["acceptance"]
    assert acc["c_spearman"] is None and acc["gamma_spearman"] is None
    judged = [v for v in acc.values() if v is not None]
    assert judged and all(isinstance(v, bool) for v in judged)
    assert m["success"] is all(judged)
    assert code == (0 if m["success"] else 3)          # the CLI: 3 on a run whose acceptance fails
