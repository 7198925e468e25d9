"""docs/formats/sandbox-ini.md: the example INI it links loads, and the messages it quotes are the reader's."""
import os
import re
import shutil

import pytest

from harness.sim.sandbox.config import load_experiment
from onboard.core.settings import ConfigError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "formats", "sandbox-ini.md")
EXAMPLE = os.path.join(REPO, "harness", "scenarios", "leveling", "sandbox", "experiment.ini")


def _doc():
    with open(DOC, encoding="utf-8") as fh:
        return " ".join(fh.read().split())


def _variant(tmp_path, old, new):
    shutil.copy(os.path.join(os.path.dirname(EXAMPLE), "terrain_a.png"), tmp_path / "terrain_a.png")
    with open(EXAMPLE, encoding="utf-8") as fh:
        text = fh.read()
    assert old in text
    path = tmp_path / "experiment.ini"
    path.write_text(text.replace(old, new))
    return str(path)


def test_linked_example_loads():
    assert "harness/scenarios/leveling/sandbox/experiment.ini" in _doc()
    exp = load_experiment(EXAMPLE)
    assert exp.heights_m.shape == (128, 128) and exp.frame_dt_us == 10000 and exp.substeps == 10


@pytest.mark.parametrize("index, old, new", [
    (0, "frame_dt = 0.01", "frame_dt = 0.0100005"),
    (1, "k_c = 990.0", "k_c = 1e300"),
    (2, "frame_dt = 0.01\nsubsteps = 10", "frame_dt = 1.0\nsubsteps = 1"),
])
def test_quoted_messages_are_the_readers(tmp_path, index, old, new):
    with pytest.raises(ConfigError) as info:
        load_experiment(_variant(tmp_path, old, new))
    message = str(info.value)
    quoted = [q.rstrip(" .") for q in re.findall(r"\(`(\[[^`]*)`\)", _doc())
              + re.findall(r"`(\[experiment\] frame_dt /[^`]*)`", _doc())]
    assert len(quoted) == 3, quoted
    assert quoted[index].split("...")[0].strip() in message, (message, quoted[index])
