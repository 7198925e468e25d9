"""harness.progress.Progress: a total that is no finite number >= 0 (an open-ended run) shows the count alone
instead of failing inside tqdm's formatting, and only when the bar is shown (a run worked with --quiet and failed
without it); a finite total keeps its bar."""
import math

import pytest

from harness.progress import Progress


@pytest.mark.parametrize("total", [math.inf, -5.0, math.nan, 10 ** 400], ids=["inf", "negative", "nan", "huge-int"])
@pytest.mark.parametrize("enabled", [True, False])
def test_an_open_ended_total_counts_without_a_bar(capsys, total, enabled):
    bar = Progress(total, "run", enabled=enabled)
    bar.update_to(1.25)
    bar.update_to(2.5)
    bar.stage("next")
    bar.close()
    err = capsys.readouterr().err
    if enabled:
        assert "run: 0.0 sim s" in err and "%" not in err
    else:
        assert err == ""


@pytest.mark.parametrize("unit, shown", [("sim s", "0.0/12.5 sim s"), ("cases", "0/4 cases")])
def test_a_finite_total_keeps_its_bar(capsys, unit, shown):
    total = 12.5 if unit == "sim s" else 4
    bar = Progress(total, "run", enabled=True, unit=unit)
    bar.update_to(total + 1.0)
    bar.close()
    err = capsys.readouterr().err
    assert "run:   0%|" in err and shown in err
