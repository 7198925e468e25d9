"""Where a benchmark writes what it measured, ``bench/results/<name>.json``, and how it judges a goal on it."""
import json
import os

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def write_results(name, out):
    """Write ``out`` (a JSON-able dict) to bench/results/<name>.json and print the path."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, name + ".json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=2)
        fh.write("\n")
    print("wrote", path)
    return path


def judged_goal(value, op, limit, skipped_why="not measured"):
    """{"value", "goal", "met"} of a goal ``value op limit`` (``op`` ">=" or "<="), judged on a figure of this run.
    A value not measured (None): met False and ``skipped`` saying why, so a missing row never reads as met."""
    goal = "%s %g" % (op, limit)
    if value is None:
        return {"value": None, "goal": goal, "met": False, "skipped": skipped_why}
    return {"value": value, "goal": goal, "met": bool(value >= limit if op == ">=" else value <= limit)}
