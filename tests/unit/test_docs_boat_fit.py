"""harness/training/boat_fit/README.md: its CSV example reads with the documented columns and limits, and its
settings section names every setting of ``procedure.DEFAULTS`` (``--set`` takes each of them)."""
import os
import re

from harness.training.boat_fit import boat_log, procedure
from harness.training.boat_fit.fit_windows import LOG_COLUMNS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "harness", "training", "boat_fit", "README.md")


def _doc():
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def test_csv_example_reads_with_the_documented_columns():
    text = _doc()
    table = text[text.index("### CSV format"):]
    columns = re.findall(r"^\| `(\w+)` \|", table, re.M)
    assert sorted(columns) == sorted(LOG_COLUMNS)
    block = next(b for b in re.findall(r"```\n(.*?)```", text, re.S) if b.startswith("time_s,"))
    log = boat_log.read_csv_bytes(block.encode(), "example.csv")
    assert log["time_s"].tolist() == [0.0, 0.01]
    assert log["thrust_left_n"].tolist() == [120.0, 121.2]


def test_stated_value_limits_are_the_readers():
    text = " ".join(_doc().split())
    stated = re.search(r"\|thrust\| above (\S+) N, \|GNSS\| above (\S+) m, \|yaw\| above (\S+) rad, "
                       r"\|yaw rate\| above (\S+) rad/s", text)
    assert stated
    limits = boat_log.PLAUSIBLE_ABS
    assert [float(v) for v in stated.groups()] == [limits["thrust_left_n"][0], limits["gnss_north_m"][0],
                                                   limits["yaw_rad"][0], limits["yaw_rate_radps"][0]]


def test_settings_section_names_every_setting():
    text = _doc()
    section = text[text.index("## Settings"):text.index("## Modules")]
    missing = [k for k in procedure.DEFAULTS if "`%s" % k not in section]
    assert not missing, "settings not described in %s: %s" % (DOC, ", ".join(missing))
