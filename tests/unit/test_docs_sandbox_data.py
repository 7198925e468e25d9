"""docs/formats/sandbox-data.md: its per-frame table is the writer's (keys, dtypes, units), and its Python
example runs as written on a session file that ``save_npz`` wrote."""
import os
import re

import numpy as np

from harness.sim.sandbox import session as sess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "formats", "sandbox-data.md")


def _doc():
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def _section(title):
    text = _doc()
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def test_per_frame_table_is_the_writers():
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([^|]+) \|", _section("## Per-frame arrays"), re.M)
    assert [r[0] for r in rows] == list(sess.TABLE_KEYS)
    for key, dtype, unit in rows:
        assert (dtype, unit.strip()) == sess.TABLE[key][:2], key


def test_python_example_runs_as_written(tmp_path):
    frames = 4
    arrays = {k: np.zeros(frames, dtype=sess.TABLE[k][0]) for k in sess.TABLE_KEYS}
    arrays["left_radps"] = np.arange(frames, dtype=float)
    arrays["teleport"][1] = True
    path = tmp_path / "sandbox_A.npz"
    sess.save_npz(str(path), arrays, {"format": "sandbox-data", "format_version": sess.FORMAT_VERSION})
    code = re.search(r"```python\n(.*?)```", _doc(), re.S).group(1)
    code = code.replace('"reports/sandbox/sandbox_A.npz"', repr(str(path)))
    scope = {}
    exec(compile(code, DOC, "exec"), scope)        # a fresh namespace: the example's own imports only
    assert scope["x"].shape == (frames, 4) and scope["y"].shape == (frames, 2)
    assert scope["keep"].tolist() == [True, False, True, True]
    assert scope["meta"]["format"] == "sandbox-data"
