"""Every example command in the ``--help`` texts of ``python -m harness`` and its subcommands, and every
``python -m harness ...`` / ``harness ...`` command in the fenced code blocks of README.md, runs.

How an example runs (in process, from the repository root):

- ``... --help``, ``list`` and ``settings``: as written, exit status 0;
- ``run SCENARIO ...``: with ``--reduced --quiet`` added and ``--out`` pointed into a temporary folder
  (exit 0 or 3: the mission may fail in a few seconds, the command may not); a scenario file that is
  not in the repository is only parsed;
- every other subcommand (they need a log, a model, a port, or serve until interrupted): its arguments
  are parsed, so a misspelled option or a value of the wrong kind fails.

A README line carrying the marker ``[no-test]`` in its trailing comment is skipped, e.g.
``python -m harness run swarm-random --set episodes=10   # [no-test] 30 flights, ~10 min``.
"""
import os
import re
import shlex

import pytest

from harness import scenarios
from harness.cli import build_parser, main

pytestmark = pytest.mark.scenario
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NO_TEST = "[no-test]"
COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:(?:\.venv/bin/)?python3?\s+-m\s+harness|(?:\.venv/bin/)?harness)\s+(.*)$")


def _argv(line):
    """The arguments after ``python -m harness`` of one example line (its trailing comment cut), or None."""
    match = COMMAND.match(line)
    if not match:
        return None
    words = shlex.split(match.group(1), comments=True)
    # a shell redirection or "&" ends the command's own arguments (``harness avr >pty.txt &``)
    for k, word in enumerate(words):
        if word in ("&", "|", "&&", ";") or re.match(r"^[0-9]*>", word):
            words = words[:k]
            break
    return words or None


def help_examples():
    """(where, argv) of every example line in the help of the harness and its subcommands."""
    parser = build_parser()
    texts = [("python -m harness --help", parser.format_help())]
    for action in parser._subparsers._group_actions:
        for name, sub in action.choices.items():
            texts.append(("python -m harness %s --help" % name, sub.format_help()))
    out = []
    for where, text in texts:
        for line in text.splitlines():
            argv = _argv(line)
            if argv:
                out.append((where, argv))
    return out


def readme_examples(path=os.path.join(REPO, "README.md")):
    """(where, argv) of every harness command in the fenced code blocks of ``path`` (lines joined at a
    trailing backslash), but those marked [no-test]."""
    out = []
    fenced = False
    pending = ""
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                pending = ""
                continue
            if not fenced:
                continue
            line = pending + line.rstrip("\n")
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            if NO_TEST in line:
                continue
            argv = _argv(line)
            if argv:
                out.append(("README.md:%d" % number, argv))
    return out


def _unique(examples):
    seen, out = set(), []
    for where, argv in examples:
        if tuple(argv) not in seen:
            seen.add(tuple(argv))
            out.append(pytest.param(argv, id="%s: %s" % (where, " ".join(argv))))
    return out


def _run_example(argv, tmp_path, capsys):
    if "--help" in argv or "-h" in argv:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        return
    command = argv[0]
    if command in ("list", "settings"):
        assert main(argv) == 0, capsys.readouterr().err
        return
    if command == "run":
        args = build_parser().parse_args(argv)
        runnable = args.scenario in scenarios.SCENARIOS or os.path.isfile(os.path.join(REPO, args.scenario))
        if runnable:
            words = list(argv)
            if "--out" in words:
                del words[words.index("--out"):words.index("--out") + 2]
            words += ["--out", str(tmp_path / "out"), "--quiet"] + ([] if "--reduced" in words else ["--reduced"])
            code = main(words)
            assert code in (0, 3), capsys.readouterr().err
            assert (tmp_path / "out" / "metrics.json").exists()
        return
    build_parser().parse_args(argv)             # SystemExit(2) on an unknown option or a bad value


@pytest.mark.timeout(180)
@pytest.mark.parametrize("argv", _unique(help_examples()))
def test_help_example_runs(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    _run_example(argv, tmp_path, capsys)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("argv", _unique(readme_examples()))
def test_readme_example_runs(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    _run_example(argv, tmp_path, capsys)


def test_the_run_help_has_examples_and_they_are_found():
    examples = [argv for where, argv in help_examples() if where == "python -m harness run --help"]
    assert ["run", "waypoints", "--reduced"] in examples and len(examples) >= 3


def test_readme_extraction(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("python -m harness run outside-a-block\n"
                      "```\n"
                      ".venv/bin/python -m harness run waypoints --seed 3   # comment\n"
                      "harness settings waypoints\n"
                      "python -m harness.training.something --not-the-cli\n"
                      "python -m harness run swarm-random \\\n"
                      "    --set episodes=10   # [no-test] long\n"
                      "make run\n"
                      "```\n")
    assert [argv for _where, argv in readme_examples(str(readme))] == [
        ["run", "waypoints", "--seed", "3"], ["settings", "waypoints"]]
