"""Benchmark: deploy to the virtual MicroPython board and the estimator loop on it.

Measures, in one run: full and incremental (one file changed) deploy time through
the real mpremote, for .py and .mpy; size of the file set as .py and .mpy; the
runtime step (estimator + control tick) on the virtual board (MicroPython 1.27
wasm, timed on the board with time.ticks_us, ms resolution there) vs CPython.
Writes bench/results/mp_deploy.json.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.scenarios import mp_board, prepare  # noqa: E402
from harness.scenarios.context import RunContext  # noqa: E402
from harness.sim.virtual_board import VirtualBoard  # noqa: E402
from onboard.deploy.build import BOARDS_DIR, build  # noqa: E402
from onboard.deploy.deployer import deploy  # noqa: E402
from results_file import write_results  # noqa: E402 (bench/ is the script's folder)



def deploy_times(mpy):
    tmp = tempfile.mkdtemp()
    try:
        shutil.copytree(os.path.join(BOARDS_DIR, "mp_common"), os.path.join(tmp, "mp_common"))
        shutil.copytree(os.path.join(BOARDS_DIR, "pico_rp2040"), os.path.join(tmp, "b"))
        with VirtualBoard() as vb:
            t0 = time.monotonic()
            full = deploy("b", vb.port, mpy=mpy, timeout_s=30, log=lambda m: None, boards_dir=tmp)
            t_full = time.monotonic() - t0
            t0 = time.monotonic()
            deploy("b", vb.port, mpy=mpy, timeout_s=30, log=lambda m: None, boards_dir=tmp)
            t_noop = time.monotonic() - t0
            path = os.path.join(tmp, "b", "board.py")
            src = open(path).read()
            open(path, "w").write(re.sub(r'VERSION = "[^"]*"', 'VERSION = "bench"', src))
            t0 = time.monotonic()
            inc = deploy("b", vb.port, mpy=mpy, timeout_s=30, log=lambda m: None, boards_dir=tmp)
            t_inc = time.monotonic() - t0
        return {"full_s": t_full, "unchanged_s": t_noop, "one_file_s": t_inc,
                "full_uploaded": full["uploaded"], "one_file_uploaded": inc["uploaded"]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    _, py_set = build("pico_rp2040")
    _, mpy_set = build("pico_rp2040", mpy=True)
    py_bytes = sum(v[2] for v in py_set.values())
    mpy_bytes = sum(v[2] for v in mpy_set.values())
    res = {"files": len(py_set), "py_bytes": py_bytes, "mpy_bytes": mpy_bytes,
           "deploy_py": deploy_times(False), "deploy_mpy": deploy_times(True)}
    ctx = RunContext(1)
    _module, config = prepare("mp-board", {"duration_s": 5.0})
    metrics = mp_board.run(config, ctx)
    res["step"] = dict({k: ctx.timings[k] for k in ("board_step_mean_us", "board_step_max_us", "cpython_step_mean_us",
                                                    "link_wall_s_per_tick")},
                       max_abs_diff=metrics["max_abs_diff"], ticks=metrics["ticks"])
    out_path = write_results("mp_deploy", res, sort_keys=True)
    print("%-42s %12s %12s %8s" % ("figure", ".py", ".mpy", "ratio"))
    print("%-42s %12d %12d %8.2f" % ("file set size (bytes, %d files)" % len(py_set), py_bytes, mpy_bytes,
                                     mpy_bytes / py_bytes))
    for key, label in (("full_s", "full deploy (s)"), ("unchanged_s", "re-deploy, nothing changed (s)"),
                       ("one_file_s", "deploy after one-file edit (s)")):
        a, b = res["deploy_py"][key], res["deploy_mpy"][key]
        print("%-42s %12.2f %12.2f %8.2f" % (label, a, b, b / a))
    s = res["step"]
    print("%-42s %12s %12s %8s" % ("runtime tick (us)", "CPython", "vboard", "ratio"))
    print("%-42s %12.1f %12.1f %8.1f" % ("mean (estimator+control, %d ticks)" % s["ticks"],
                                         s["cpython_step_mean_us"], s["board_step_mean_us"],
                                         s["board_step_mean_us"] / s["cpython_step_mean_us"]))
    print("max |board - CPython| = %.3g; wrote %s" % (s["max_abs_diff"], out_path))


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
