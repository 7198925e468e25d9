"""One app model: a rate-group Scheduler is built by onboard.runtime.node.Node only (issue 41).

Every app is a recipe of parts on one Node, so no module of the runtime, the boards, the harness or
the benchmarks constructs a Scheduler of its own (that is how nested schedulers crept in before);
the scheduler's own tests (tests/micropython/cases/test_runtime_scheduler.py) and its benchmark
(bench/spine.py) are the exceptions.
"""
import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREES = ("onboard", "boards", "harness", "bench", "tests", "docs")
# the scheduler's own tests and its benchmark (bench/spine.py times the bare scheduler beside the Node)
ALLOWED = ("onboard/runtime/node.py", "tests/micropython/cases/test_runtime_scheduler.py", "bench/spine.py")


def scheduler_constructions(root, trees=TREES):
    """-> ["path:line", ...] where a call to a name or attribute ``Scheduler`` appears."""
    found = []
    for tree in trees:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, tree)):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "build")]
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8") as fh:
                    parsed = ast.parse(fh.read(), path)
                for node in ast.walk(parsed):
                    if isinstance(node, ast.Call):
                        fn = node.func
                        called = fn.id if isinstance(fn, ast.Name) else getattr(fn, "attr", None)
                        if called == "Scheduler":
                            found.append("%s:%d" % (rel, node.lineno))
    return found


def test_only_the_node_builds_a_scheduler():
    stray = [where for where in scheduler_constructions(REPO) if where.split(":")[0] not in ALLOWED]
    assert not stray, "Scheduler constructed outside the Node (make it a part on the app's Node):\n" + \
        "\n".join(stray)


def test_the_check_finds_a_stray_scheduler(tmp_path):
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "app.py").write_text(
        "from onboard.runtime import scheduler\ns = scheduler.Scheduler([('a', 10, print)])\n")
    assert scheduler_constructions(str(tmp_path), ("boards",)) == ["boards/app.py:2"]
