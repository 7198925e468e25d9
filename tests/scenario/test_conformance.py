"""``python -m harness conformance``: one recording through every target against its tolerance.

A short grading run (the dozer's ES-EKF app) records its app; conformance feeds the recorded inputs
to the pure, Cython and NumPy implementations and to the same recipe inside MicroPython 1.27:
pure and Cython reproduce the log bit for bit, NumPy and MicroPython within their stated
tolerances. An output altered beyond a target's tolerance exits 3; a file that is no recording, 2.
"""
import json
import subprocess
import sys

import pytest

from harness.conformance import EXIT_CONFORM, EXIT_OUTSIDE, TOLERANCE, main_conformance
from harness.replay import EXIT_BAD_LOG, read_recording
from onboard.core import samples
from onboard.runtime.mcap_log import McapLog
from onboard.runtime.replay_feed import decode_sample

pytestmark = pytest.mark.scenario


@pytest.fixture(scope="module")
def grading_log(tmp_path_factory):
    out = tmp_path_factory.mktemp("grading")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "grading", "--seed", "2", "--out", str(out),
                           "--quiet", "--set", "max_legs=1"], capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 3), proc.stderr
    return out / "log.mcap"


def test_every_target_conforms(grading_log, tmp_path, capsys):
    assert main_conformance([str(grading_log), "--out", str(tmp_path)]) == EXIT_CONFORM, capsys.readouterr().err
    report = json.loads((tmp_path / "conformance.json").read_text())
    targets = report["targets"]
    assert set(targets) == {"pure", "cython", "numpy", "micropython"}
    for name, result in targets.items():
        assert result["within"], name
        for topic in ("estimate", "wheels"):
            t = result["topics"][topic]
            assert t["replayed"] == t["logged"] > 50
            assert t["max_abs_diff"] <= TOLERANCE[name]
    assert targets["pure"]["topics"]["wheels"]["max_abs_diff"] == 0.0
    assert targets["cython"]["topics"]["wheels"]["max_abs_diff"] == 0.0


def test_an_output_beyond_tolerance_exits_3(grading_log, tmp_path, capsys):
    """The log's wheel command at one tick moved by 1e-6 rad/s: every target is now outside."""
    events, _damage = read_recording(str(grading_log))
    altered = McapLog(str(tmp_path / "altered.mcap"))
    moved = False
    for topic, _schema, time_us, data in events:
        if topic == "/app/out/wheels" and not moved and data["left_radps"] != 0.0:
            data = dict(data, left_radps=data["left_radps"] + 1e-6)
            moved = True
        # samples are written back as samples (replay decodes inputs by their type's name)
        altered.log(topic, time_us, decode_sample(_schema, data) if hasattr(samples, _schema) else data)
    altered.close()
    assert moved
    assert main_conformance([str(tmp_path / "altered.mcap"), "--target", "pure", "--target", "micropython",
                             "--out", str(tmp_path / "r")]) == EXIT_OUTSIDE
    out = capsys.readouterr().out
    assert out.count("NO (from") == 2


def test_not_a_recording_exits_2(tmp_path, capsys):
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"\x00" * 64)
    assert main_conformance([str(junk)]) == EXIT_BAD_LOG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")

