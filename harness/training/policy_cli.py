"""``python -m harness policy {inspect,check} MODEL`` -- look inside and cross-check int8 models.

MODEL is a ``.tflite`` file or a model directory (``model.tflite`` + ``card.json``; the card
is then validated too).

- ``inspect``: operators, tensors (shape, dtype, quantization, bytes), parameter bytes,
  MACs and an arena estimate (largest pair of live activations, as the C kernel's
  ping-pong buffers use).
- ``check``: runs every available backend (pure, LiteRT reference, host C, and LiteRT
  XNNPACK for information) on N random int8 inputs (a quarter of them saturated at -128 /
  127) and reports bit-exact agreement. Exit 0 when all exact backends agree, 1 otherwise.
"""
import json
import os
import sys

import numpy as np

from harness.config import non_negative_int
from onboard.core.settings import argument, int_within
from onboard.policy import tflite_pure as fb
from onboard.policy.int8_pure import Int8Graph
from onboard.policy.policy import load_model_dir, make_policy


def _load(path):
    if os.path.isdir(path):
        return load_model_dir(path)
    with open(path, "rb") as fh:
        return fh.read(), None


def inspect_model(data, card=None):
    """Dict with ops, tensors, sizes, MACs and arena estimate of a model."""
    model = fb.read_model(data)
    if card is not None:
        from onboard.policy.card import validate
        validate(card, model)
    tensors = []
    const_bytes = 0
    for i, t in enumerate(model["tensors"]):
        pos, n = model["buffers"][t["buffer"]]
        const_bytes += n
        tensors.append({"index": i, "name": t["name"], "shape": t["shape"], "dtype": t["dtype"],
                        "constant_bytes": n,
                        "scale": t["scales"][0] if len(t["scales"]) == 1 else
                        ("per-channel x%d" % len(t["scales"]) if t["scales"] else None),
                        "zero_point": t["zero_points"][0] if t["zero_points"] else None})
    consts = set(i for i, t in enumerate(model["tensors"]) if model["buffers"][t["buffer"]][1] > 0)
    arena = 0
    for op in model["operators"]:
        live = [i for i in op["inputs"] + op["outputs"] if i >= 0 and i not in consts]
        size = sum(fb.tensor_size(model["tensors"][i]) * fb.DTYPE_SIZES.get(model["tensors"][i]["dtype"], 1)
                   for i in live)
        arena = max(arena, size)
    info = {"bytes": len(data), "description": model["description"],
            "ops": [{"op": op["op"], "inputs": op["inputs"], "outputs": op["outputs"],
                     "options": op["options"]} for op in model["operators"]],
            "inputs": model["inputs"], "outputs": model["outputs"], "tensors": tensors,
            "constant_bytes": const_bytes, "arena_bytes_estimate": arena}
    try:
        graph = Int8Graph(data)
        info["macs"] = graph.macs
        info["pure_kernel"] = "supported"
    except ValueError as exc:
        info["pure_kernel"] = "unsupported: %s" % exc
    return info


def check_model(data, card=None, n=1000, seed=0):
    """Run all backends on the same n int8 inputs; returns a report dict."""
    from harness.training.c_kernel import HostCPolicy
    pure = make_policy(data, card, "pure")
    rng = np.random.default_rng(seed)
    inputs = []
    for spec in pure.inputs:
        if spec["dtype"] == "int8":
            x = rng.integers(-128, 128, (n, spec["size"]))
            sat = rng.random((n, spec["size"])) < 0.25
            x[sat] = np.where(rng.random(int(sat.sum())) < 0.5, -128, 127)
        else:
            x = rng.normal(0.0, 4.0, (n, spec["size"])).astype(np.float32)
        inputs.append(x)
    reference = [pure.run([inp[k].tolist() for inp in inputs]) for k in range(n)]
    report = {"n": n, "backends": {"pure": {"status": "ok", "mismatches": 0}}, "exact": True}
    others = [("litert", True, lambda: make_policy(data, card, "litert")),
              ("c-host", True, lambda: HostCPolicy(data, card)),
              ("litert-xnnpack", False, lambda: make_policy(data, card, "litert-xnnpack"))]
    for name, must_match, make in others:
        try:
            pol = make()
        except (ValueError, RuntimeError, OSError) as exc:
            report["backends"][name] = {"status": "unavailable: %s" % exc}
            continue
        bad = 0
        for k in range(n):
            if pol.run([inp[k].tolist() for inp in inputs]) != reference[k]:
                bad += 1
        report["backends"][name] = {"status": "ok", "mismatches": bad,
                                    "must_be_bit_exact": must_match}
        if must_match and bad:
            report["exact"] = False
    return report


def _cmd_inspect(args):
    data, card = _load(args.model)
    info = inspect_model(data, card)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print("%s: %d bytes, %s" % (args.model, info["bytes"], info["description"]))
    print("operators:")
    for k, op in enumerate(info["ops"]):
        print("  %2d %-16s in %s out %s %s" % (k, op["op"], op["inputs"], op["outputs"],
                                               op["options"] or ""))
    print("tensors:")
    for t in info["tensors"]:
        print("  %2d %-22s %-14s %-8s scale %-18s zp %-5s const %d B"
              % (t["index"], t["name"][:22], t["shape"], t["dtype"], t["scale"], t["zero_point"],
                 t["constant_bytes"]))
    print("inputs %s outputs %s" % (info["inputs"], info["outputs"]))
    print("constant data %d B, arena estimate %d B, MACs %s, pure kernel: %s"
          % (info["constant_bytes"], info["arena_bytes_estimate"], info.get("macs", "?"),
             info["pure_kernel"]))
    return 0


def _cmd_check(args):
    data, card = _load(args.model)
    report = check_model(data, card, n=args.n, seed=args.seed)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("%d random int8 inputs (25%% saturated), reference = pure kernel" % report["n"])
        for name, r in report["backends"].items():
            if r["status"] != "ok":
                print("  %-15s %s" % (name, r["status"]))
            else:
                tag = "" if r.get("must_be_bit_exact", True) else " (not required to be bit-exact)"
                print("  %-15s %d mismatches%s" % (name, r["mismatches"], tag))
        print("bit-exact: %s" % ("yes" if report["exact"] else "NO"))
    return 0 if report["exact"] else 1


def _run(args):
    try:
        return args.policy_func(args)
    except (ValueError, OSError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2


MAX_CHECK_INPUTS = 100000     # random inputs per check: every backend runs each (the pure kernel ~1 ms apiece)


def add_parser(sub):
    p = sub.add_parser("policy", help="inspect or cross-check an int8 .tflite policy",
                       description=__doc__.split("\n\n")[0])
    psub = p.add_subparsers(dest="policy_command", required=True)
    pi = psub.add_parser("inspect", help="operators, tensors, sizes, arena estimate")
    pi.add_argument("model", help=".tflite file or model directory")
    pi.add_argument("--json", action="store_true")
    pi.set_defaults(func=_run, policy_func=_cmd_inspect)
    pc = psub.add_parser("check", help="run every backend on N random inputs, report agreement")
    pc.add_argument("model", help=".tflite file or model directory")
    pc.add_argument("-n", type=argument(int_within(1, MAX_CHECK_INPUTS), int), default=1000,
                    help="number of inputs, 1..%d (default 1000)" % MAX_CHECK_INPUTS)
    pc.add_argument("--seed", type=non_negative_int, default=0)
    pc.add_argument("--json", action="store_true")
    pc.set_defaults(func=_run, policy_func=_cmd_check)
    return p
