"""The docs stay short, linked and timeless.

- README.md is at most 150 lines and its architecture picture exists; the script that draws it runs;
- every relative link in README.md and in the Markdown pages under docs/, onboard/, harness/, boards/,
  models/, bench/ and firmware/ resolves to a file or folder of the repository;
- code comments and docstrings under onboard/, harness/ and boards/ hold no dated history (a date
  YYYY-MM-DD or "issue N": that belongs in docs/experiments/, the code says what is, in units and the
  paper's equations).
"""
import ast
import io
import os
import re
import subprocess
import sys
import tokenize

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
README_MAX_LINES = 150
DOC_ROOTS = ("docs", "onboard", "harness", "boards", "models", "bench", "firmware")
CODE_ROOTS = ("onboard", "harness", "boards")
SKIP_DIRS = {"__pycache__", "node_modules", "build", ".venv"}

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
HISTORY = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b|\bissues?\s+#?\d+", re.IGNORECASE)


def _walk(roots, suffix):
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, root)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(suffix):
                    yield os.path.join(dirpath, name)


def markdown_pages():
    return [README] + list(_walk(DOC_ROOTS, ".md"))


def links(path):
    """(line number, target) of every Markdown link outside code blocks and inline code."""
    out, fenced = [], False
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for match in LINK.finditer(INLINE_CODE.sub("", line)):
                out.append((number, match.group(1)))
    return out


def is_external(target):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) is not None or target.startswith("#")


def test_readme_is_short():
    with open(README, encoding="utf-8") as fh:
        count = len(fh.read().splitlines())
    assert count <= README_MAX_LINES, "README.md has %d lines (at most %d)" % (count, README_MAX_LINES)


def test_readme_shows_the_architecture_picture():
    images = [t for _, t in links(README) if not is_external(t) and t.lower().endswith((".png", ".svg"))]
    assert images, "README.md links no architecture picture"
    for target in images:
        path = os.path.join(REPO, target.split("#")[0])
        assert os.path.isfile(path), "README.md's picture %s does not exist" % target
        with open(path, "rb") as fh:
            head = fh.read(512)
        assert head.startswith(b"\x89PNG") or b"<svg" in head, "%s is neither a PNG nor an SVG" % target


def test_relative_links_resolve():
    broken = []
    for page in markdown_pages():
        for number, target in links(page):
            if is_external(target):
                continue
            rel = target.split("#")[0]
            if not rel:
                continue
            path = os.path.normpath(os.path.join(os.path.dirname(page), rel))
            if not path.startswith(REPO) or not os.path.exists(path):
                broken.append("%s:%d: %s" % (os.path.relpath(page, REPO), number, target))
    assert not broken, "broken links:\n" + "\n".join(broken)


def comments_and_docstrings(path):
    """(line number, text) of every comment and every module/class/function docstring line of a .py file."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    out = [(tok.start[0], tok.string)
           for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                for offset, line in enumerate(first.value.value.splitlines()):
                    out.append((first.lineno + offset, line))
    return out


def test_scanner_finds_history_in_comments_and_docstrings(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Module (issue 9)."""\nX = 1  # tuned on 2026-11-25\n'
                      'def f():\n    """Fine."""\n    return "issue 3 in a string is data"\n')
    found = [text for _, text in comments_and_docstrings(str(sample)) if HISTORY.search(text)]
    assert len(found) == 2


def test_no_dated_history_in_code():
    found = []
    for path in _walk(CODE_ROOTS, ".py"):
        for number, text in comments_and_docstrings(path):
            if HISTORY.search(text):
                found.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, text.strip()[:120]))
    assert not found, ("dated history in comments/docstrings (move it to docs/experiments/):\n"
                       + "\n".join(found))


@pytest.mark.parametrize("script", ["draw_architecture.py", "bench_tables.py"])
def test_doc_scripts_run(tmp_path, script):
    out = tmp_path / ("out.png" if script == "draw_architecture.py" else "out.md")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "scripts", script), "--out", str(out)],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, MPLBACKEND="Agg"))
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and out.stat().st_size > 1000
