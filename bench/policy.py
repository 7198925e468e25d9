"""Policy benchmark: microseconds per inference of the 7-100-100-9 int8 model, every backend.

Side by side in one run, on the committed ``models/pocket-dqn`` and the same int8 inputs:

- litert          : LiteRT 2.3 reference kernels (the bit-exact backend), ``Policy.run`` (set
                    tensor, invoke, get tensor from Python) and ``invoke()`` alone;
- litert-xnnpack  : LiteRT's default XNNPACK path (fast, not guaranteed bit-exact);
- pure-cpython    : the pure int8 kernel on CPython;
- pure-micropython: the same kernel inside real MicroPython 1.27 (WebAssembly, node),
                    timed inside MicroPython with ``time.ticks_us``;
- c-host          : the AVR C kernel compiled with the host gcc: per call through ctypes,
                    and in a C loop (batch call);
- avr             : the C kernel with the MULS/MUL inline assembly on an ATmega328P in simavr,
                    Timer1 cycles -> microseconds and inferences/s at 16 MHz; plain-C build
                    for comparison; flash/RAM from avr-size (plus the robot_link firmware's
                    figures when firmware/arduino has been built).

Also checks that every backend returned the same outputs on the timed inputs: a backend other than XNNPACK
that differs from LiteRT's reference kernels is listed under `not_bit_exact` and the script exits 1.
Writes bench/results/policy.json.
"""
import argparse
import base64
import json
import os
import platform
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from harness.sim.micropython import available, onboard_files, run_micropython  # noqa: E402
from harness.training.c_kernel import AVR_F_CPU_HZ, HostCPolicy, build_avr, run_simavr  # noqa: E402
from onboard.policy.int8_pure import Int8Graph  # noqa: E402
from onboard.policy.policy import load_model_dir, make_policy  # noqa: E402
from results_file import write_results  # noqa: E402 (bench/ is the script's folder)

MODEL_DIR = os.path.join(REPO, "models", "pocket-dqn")
ROBOT_LINK_SIZE = os.path.join(REPO, "firmware", "arduino", "build", "uno", "size.json")


def per_call_us(fn, n, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


MP_CODE = """
import binascii, json, time
from onboard.policy.policy import PurePolicy
import _model_data
policy = PurePolicy(binascii.a2b_base64(_model_data.B64.encode()))
xs = json.loads(_model_data.INPUTS)
outs = [policy.run([x])[0] for x in xs]
n = %d
t0 = time.ticks_us()
for k in range(n):
    policy.run([xs[k %% len(xs)]])
dt = time.ticks_diff(time.ticks_us(), t0)
print("MPTIME " + json.dumps({"us_per_inference": dt / n, "outs": outs}))
"""


def main():
    data, card = load_model_dir(MODEL_DIR)
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (64, 7))
    rows = [r.tolist() for r in x]
    results = {"model": "models/pocket-dqn", "macs": Int8Graph(data).macs,
               "platform": platform.platform(), "python": platform.python_version(),
               "backends": {}}
    B = results["backends"]

    lit = make_policy(data, card, "litert")
    ref_out = [lit.run([r])[0] for r in rows]
    it = lit.interpreter
    it.set_tensor(lit._in[0][0], np.asarray(rows[0], dtype=np.int8).reshape(1, 7))
    B["litert"] = {"us_per_inference": per_call_us(lambda: lit.run([rows[0]]), 20000),
                   "us_per_invoke_only": per_call_us(it.invoke, 50000), "bit_exact": True}
    xnn = make_policy(data, card, "litert-xnnpack")
    it2 = xnn.interpreter
    xnn_out = [xnn.run([r])[0] for r in rows]
    B["litert-xnnpack"] = {"us_per_inference": per_call_us(lambda: xnn.run([rows[0]]), 20000),
                           "us_per_invoke_only": per_call_us(it2.invoke, 50000),
                           "bit_exact": xnn_out == ref_out,
                           "note": "not guaranteed bit-exact (float requantization)"}
    pure = make_policy(data, card, "pure")
    assert [pure.run([r])[0] for r in rows] == ref_out
    B["pure-cpython"] = {"us_per_inference": per_call_us(lambda: pure.run([rows[0]]), 300),
                         "bit_exact": True}

    if available():
        files = onboard_files()
        files["/lib/_model_data.py"] = "B64 = %r\nINPUTS = %r\n" % (
            base64.b64encode(data).decode(), json.dumps(rows))
        out = run_micropython(MP_CODE % 100, files)
        line = [l for l in out.splitlines() if l.startswith("MPTIME ")][0]
        r = json.loads(line[len("MPTIME "):])
        B["pure-micropython"] = {"us_per_inference": r["us_per_inference"],
                                 "bit_exact": r["outs"] == ref_out,
                                 "interpreter": "MicroPython 1.27 WebAssembly under node"}
    else:
        B["pure-micropython"] = {"status": "MicroPython not installed (make setup)"}

    c = HostCPolicy(data, card)
    assert c.run_batch_q(x).tolist() == ref_out
    big = np.tile(x, (2000, 1))
    t0 = time.perf_counter()
    c.run_batch_q(big)
    c_loop_us = (time.perf_counter() - t0) / len(big) * 1e6
    B["c-host"] = {"us_per_inference": c_loop_us,
                   "us_per_inference_ctypes_call": per_call_us(lambda: c.run([rows[0]]), 20000),
                   "bit_exact": True, "compiler": "gcc -O2"}

    avr = {}
    for name, plain in (("avr", False), ("avr-plain-c", True)):
        try:
            elf, size = build_avr(data, x[:16], plain_c=plain)
            out, cycles = run_simavr(elf, 16, 9)
        except RuntimeError as exc:             # gcc-avr / avr-libc / simavr missing, or the run incomplete
            avr[name] = {"status": "skipped: %s" % str(exc).splitlines()[0]}
            print("policy: %s row skipped: %s" % (name, str(exc).splitlines()[0]))
            continue
        cyc = max(cycles)
        avr[name] = {"cycles_per_inference": cyc,
                     "us_per_inference": cyc / AVR_F_CPU_HZ * 1e6,
                     "inferences_per_s_at_16MHz": AVR_F_CPU_HZ / cyc,
                     "cycles_per_mac_overall": cyc / results["macs"],
                     "flash_bytes": size["flash_bytes"], "ram_bytes": size["ram_bytes"],
                     "bit_exact": out.tolist() == ref_out[:16],
                     "mcu": "atmega328p (simavr)"}
    if os.path.exists(ROBOT_LINK_SIZE) and "flash_bytes" in avr["avr"]:
        with open(ROBOT_LINK_SIZE) as fh:
            rl = json.load(fh)
        avr["avr"]["robot_link_firmware"] = {"flash_bytes": rl["flash_bytes"], "ram_bytes": rl["ram_bytes"]}
        # the test-vector main + vectors is ~1.5 KB of the policy build; the sum over-counts a little
        avr["avr"]["sum_with_robot_link_flash_bytes"] = rl["flash_bytes"] + avr["avr"]["flash_bytes"]
        avr["avr"]["sum_with_robot_link_ram_bytes"] = rl["ram_bytes"] + avr["avr"]["ram_bytes"]
    B.update(avr)

    base = B["litert"]["us_per_inference"]
    print("%-18s %14s %12s %10s" % ("backend", "us/inference", "vs litert", "bit-exact"))
    for name, r in B.items():
        if "us_per_inference" not in r:
            print("%-18s %s" % (name, r.get("status")))
            continue
        r["ratio_to_litert"] = r["us_per_inference"] / base
        print("%-18s %14.2f %12.2f %10s" % (name, r["us_per_inference"], r["ratio_to_litert"],
                                             r.get("bit_exact")))
    print("litert invoke() alone: %.2f us (ref kernels), %.2f us (xnnpack); c-host per ctypes call %.2f us"
          % (B["litert"]["us_per_invoke_only"], B["litert-xnnpack"]["us_per_invoke_only"],
             B["c-host"]["us_per_inference_ctypes_call"]))
    for name in ("avr", "avr-plain-c"):
        a = B[name]
        if "cycles_per_inference" not in a:
            print("%-12s %s" % (name, a["status"]))
            continue
        print("%-12s %8d cycles  %6.1f inferences/s @16 MHz  %5.1f cycles/MAC  flash %d B  RAM %d B"
              % (name, a["cycles_per_inference"], a["inferences_per_s_at_16MHz"],
                 a["cycles_per_mac_overall"], a["flash_bytes"], a["ram_bytes"]))
    if "robot_link_firmware" in B["avr"]:
        print("with robot_link firmware: flash %d / 32768 B, RAM %d / 2048 B"
              % (B["avr"]["sum_with_robot_link_flash_bytes"], B["avr"]["sum_with_robot_link_ram_bytes"]))
    # every backend but XNNPACK (float requantisation) must reproduce LiteRT's reference kernels bit for bit
    results["not_bit_exact"] = [name for name, r in B.items()
                                if r.get("bit_exact") is False and name != "litert-xnnpack"]
    write_results("policy", results, sort_keys=True)
    if results["not_bit_exact"]:
        print("policy: NOT bit-exact against LiteRT: %s" % ", ".join(results["not_bit_exact"]))
        return 1
    return 0


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    sys.exit(main())
