"""Where a benchmark writes what it measured, ``bench/results/<name>.json``, and how it judges a goal on it."""
import json
import os

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def write_results(name, out, sort_keys=False):
    """Write ``out`` (a JSON-able dict) to bench/results/<name>.json (keys sorted when ``sort_keys``), whole:
    into a temporary file beside it, then renamed over it, so an interrupted run leaves the previous file.
    Prints the path and returns it."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, name + ".json")
    text = json.dumps(out, indent=2, sort_keys=sort_keys) + "\n"   # serialised before the file is touched
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    print("wrote", path)
    return path


def judged_goal(value, op, limit, skipped_why="not measured"):
    """{"value", "goal", "met"} of a goal ``value op limit`` (``op`` ">=" or "<="), judged on a figure of this run.
    A value not measured (None): met False and ``skipped`` saying why, so a missing row never reads as met."""
    goal = "%s %g" % (op, limit)
    if value is None:
        return {"value": None, "goal": goal, "met": False, "skipped": skipped_why}
    return {"value": value, "goal": goal, "met": bool(value >= limit if op == ">=" else value <= limit)}
