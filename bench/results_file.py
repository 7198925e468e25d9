"""Where a benchmark writes what it measured: ``bench/results/<name>.json``."""
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
