"""docs/new-robot.md's code blocks run, in order, as one program: the made-up orchard cart's recipe
finishes its rows on simulated hardware with its policy part deciding, sends telemetry,
and engages the failsafe when its pose input goes silent."""
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "new-robot.md")


def _code_blocks():
    """Each python block, padded with blank lines so tracebacks name its line in the page."""
    with open(DOC) as fh:
        text = fh.read()
    return ["\n" * text[:m.start(1)].count("\n") + m.group(1)
            for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


def test_new_robot_page_runs(monkeypatch, capsys):
    blocks = _code_blocks()
    assert len(blocks) == 3
    monkeypatch.chdir(REPO)
    scope = {"__name__": "new_robot_doc"}
    for block in blocks:
        exec(compile(block, DOC, "exec"), scope)
    out = capsys.readouterr().out
    drive = scope["drive"]
    assert drive.mission_complete_us is not None and drive.follower.index == 3
    report = scope["report"]
    assert report["yield"]["decisions"] > 50 and report["yield"]["yields"] == 0
    assert report["telemetry"]["frames"] > 10
    assert sorted(report["scheduler"]["groups"]) == ["aiding", "control", "predict", "telemetry", "yield"]
    # the ground station receives the frames the cart sent
    frames = scope["ground_station"].read(1 << 20).splitlines()
    assert len(frames) == report["telemetry"]["frames"] and frames[0].startswith(b"S,")
    node2 = scope["node2"]
    assert "stale:aiding" in node2.failsafe.reasons and node2.part("drive").stop_commands > 0
    assert "rows done at" in out
