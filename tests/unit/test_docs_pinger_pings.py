"""docs/formats/pinger-pings.md: its example file reads and locates a pinger with the documented command, and the
hydrophone bound it states is the one ``--hydrophones`` applies."""
import json
import os
import re

import pytest

from harness.cli import main
from harness.pinger_cli import parse_hydrophones, read_pings
from onboard.core.settings import ConfigError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "formats", "pinger-pings.md")


def _doc():
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def _example_csv():
    """The first fenced block of the page that starts with the CSV header."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", _doc(), re.S):
        if block.startswith("time_s,"):
            return block
    raise AssertionError("no example CSV block in %s" % DOC)


def test_example_file_reads(tmp_path):
    path = tmp_path / "pings.csv"
    path.write_text(_example_csv())
    time_s, poses, tdoa = read_pings(str(path), 3)
    assert list(time_s) == [12.0, 14.0]
    assert poses.shape == (2, 3) and tdoa.shape == (2, 2)
    assert tdoa[0].tolist() == [-3.1e-4, 2.2e-4]


def test_example_file_locates_with_the_documented_command(tmp_path, capsys):
    path = tmp_path / "pings.csv"
    path.write_text(_example_csv())
    out = tmp_path / "fix"
    code = main(["pinger-locate", str(path), "--hydrophones", "0,0;1,0;0,1", "--out", str(out)])
    assert code in (0, None)
    with open(out / "pinger.json") as fh:
        fix = json.load(fh)
    assert "north_m" in fix and "east_m" in fix
    assert "pinger: north_m" in capsys.readouterr().out


def test_stated_hydrophone_bound_is_the_one_applied():
    m = re.search(r"\|x\| <= (\S+) m and \|y\| <= (\S+) m", _doc())
    assert m, "the page states no |x|, |y| bound for the hydrophones"
    lim_x, lim_y = float(m.group(1)), float(m.group(2))
    # the corner of the box is accepted (farther than the limit from the origin: a box, not a circle)
    parse_hydrophones("0,0;%r,%r" % (lim_x, lim_y))
    for bad in ("0,0;%r,0" % (lim_x * 1.01), "0,0;0,%r" % (-lim_y * 1.01)):
        with pytest.raises(ConfigError, match="beyond the bound"):
            parse_hydrophones(bad)
