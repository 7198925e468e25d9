"""Committed models, export quality, card validation and the refusal paths of every backend."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from harness.sim.rng import RunRandom
from harness.training.c_kernel import CKernelUnsupported, HostCPolicy, generate_c
from harness.training.dqn_teacher import load_float_reference, sample_states, teacher_q, train_mlp
from harness.training.fixtures import chain_model, op_coverage_model
from harness.training.quantize import build_mlp_int8, mlp_forward, write_model_dir
from onboard.policy import load_policy
from onboard.policy.card import CardMismatchError
from onboard.policy.int8_pure import InputError, UnsupportedModelError
from onboard.policy.policy import load_model_dir, make_policy
from onboard.policy.tflite_pure import ModelFormatError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DQN_DIR = os.path.join(REPO, "models", "pocket-dqn")
# Stated bound of the committed 7-100-100-9 model (action scores lie in [-0.2, 1]):
# |Q_int8 - Q_float| <= 0.15 everywhere on held-out states, mean <= 0.015, argmax >= 97 %.
MAX_ABS_ERROR = 0.15
MEAN_ABS_ERROR = 0.015
ARGMAX_AGREEMENT = 0.97


@pytest.fixture(scope="module")
def dqn_litert():
    return load_policy(DQN_DIR, "litert")


def test_committed_dqn_int8_vs_float_on_held_out_states(dqn_litert):
    layers, mean, std = load_float_reference(DQN_DIR)
    states = sample_states(RunRandom(12345).stream("held-out"), 4000)   # not the training seed
    q_float = mlp_forward(layers, (states - mean) / std)
    x_q = np.array([dqn_litert.quantize_input(s) for s in states])
    y_q = dqn_litert.run_batch_q(x_q).astype(np.int64)
    out = dqn_litert.outputs[0]
    q_int8 = out["scale"] * (y_q - out["zero_point"])
    err = np.abs(q_int8 - q_float)
    assert err.max() <= MAX_ABS_ERROR
    assert err.mean() <= MEAN_ABS_ERROR
    assert np.mean(y_q.argmax(axis=1) == q_float.argmax(axis=1)) >= ARGMAX_AGREEMENT
    # and the policy is meaningful: it mostly picks the teacher's action
    assert np.mean(y_q.argmax(axis=1) == teacher_q(states).argmax(axis=1)) >= 0.75


def test_dqn_card_describes_the_model(dqn_litert):
    card = dqn_litert.card
    assert [f["name"] for f in card["inputs"][0]["features"]] == ["v_x", "v_y", "d_x", "d_y", "o_x", "o_y", "dt"]
    assert len(card["outputs"][0]["actions"]) == 9
    assert card["training"]["seed"] == 1
    assert card["metrics"]["int8_argmax_agreement_with_float"] >= ARGMAX_AGREEMENT
    p = load_policy(DQN_DIR, "pure")
    # goal straight ahead along +x, nothing near: accelerate at 0 deg
    assert p.act([0.0, 0.0, 1.5, 0.0, -1.4, -1.4, 0.1]) == 0
    # goal along +y: 90 deg
    assert p.act([0.0, 0.0, 0.0, 1.5, -1.4, -1.4, 0.1]) == 2
    # at the goal while moving along +x: brake (slow down, or accelerate at 180 deg)
    assert p.act([0.6, 0.0, 0.02, 0.0, -1.4, -1.4, 0.1]) in (4, 8)


def test_export_pipeline_small_mlp_bounded_error(tmp_path):
    """Train (numpy), quantize with calibration, write a model dir, reload through the card."""
    rr = RunRandom(3)
    x = sample_states(rr.stream("x"), 4000)
    y = teacher_q(x)
    mean, std = x.mean(axis=0), x.std(axis=0)
    layers = train_mlp((x - mean) / std, y, [7, 32, 9], rr.stream("init"), epochs=8)
    x_n = (x - mean) / std
    # representative dataset = the training inputs (a smaller calibration set clips the
    # rare test state whose outputs exceed its range)
    data, info = build_mlp_int8(layers, x_n, per_channel=True)
    card = {"name": "tiny", "op_set": ["FULLY_CONNECTED"],
            "inputs": [{"name": "input", "shape": [1, 7], "dtype": "int8", "quantization": info["input"],
                        "normalization": {"mean": mean.tolist(), "std": std.tolist()}}],
            "outputs": [{"name": "output", "shape": [1, 9], "dtype": "int8", "quantization": info["output"],
                         "actions": [{"name": str(k)} for k in range(9)]}]}
    write_model_dir(str(tmp_path), data, card)
    pol = load_policy(str(tmp_path), "litert")
    test = sample_states(rr.stream("test"), 500)
    q_f = mlp_forward(layers, (test - mean) / std)
    q_i = np.array([pol.predict(s) for s in test])
    assert np.abs(q_i - q_f).max() < 0.1
    assert np.mean(q_i.argmax(axis=1) == q_f.argmax(axis=1)) > 0.9


# -- refusal paths -------------------------------------------------------------------------
def test_truncated_and_corrupt_files_raise_clear_errors():
    data = chain_model()
    for n in (0, 3, 8, 20, len(data) // 3, len(data) // 2, len(data) - 1):
        for backend in ("pure", "litert"):
            with pytest.raises(ModelFormatError):
                make_policy(data[:n], None, backend)
    with pytest.raises(ModelFormatError, match="file identifier"):
        make_policy(b"\x00" * 4 + b"XXXX" + data[8:], None, "pure")
    with pytest.raises(ModelFormatError):
        make_policy("not bytes", None, "pure")


def test_random_byte_flips_never_crash_the_pure_kernel():
    data = bytearray(op_coverage_model())
    rng = np.random.default_rng(0)
    outcomes = {"refused": 0, "loaded": 0}
    for _ in range(300):
        bad = bytearray(data)
        for pos in rng.integers(0, len(bad), 3):
            bad[pos] = int(rng.integers(0, 256))
        try:
            p = make_policy(bytes(bad), None, "pure")
            p.run([[0.5] * p.inputs[0]["size"]])
            outcomes["loaded"] += 1
        except ValueError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and sum(outcomes.values()) == 300


def test_random_byte_flips_in_litert_subprocess():
    """LiteRT behind our validation: corrupt files are refused or run, never kill the process."""
    code = (
        "import numpy as np\n"
        "from harness.training.fixtures import chain_model\n"
        "from onboard.policy.policy import make_policy\n"
        "data = bytearray(chain_model()); rng = np.random.default_rng(1); ok = bad = 0\n"
        "for _ in range(100):\n"
        "    b = bytearray(data)\n"
        "    for pos in rng.integers(0, len(b), 2): b[pos] = int(rng.integers(0, 256))\n"
        "    try:\n"
        "        p = make_policy(bytes(b), None, 'litert'); p.run([[0] * 7]); ok += 1\n"
        "    except (ValueError, RuntimeError):\n"
        "        bad += 1\n"
        "print('DONE', ok, bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DONE" in proc.stdout


def test_wrong_inputs_raise_and_change_nothing():
    p = load_policy(DQN_DIR, "pure")
    for bad in ([0] * 6, [0] * 8, [128] + [0] * 6, [-129] + [0] * 6, [0.5] + [0] * 6, None):
        with pytest.raises(InputError):
            p.run([bad])
    with pytest.raises(InputError):
        p.run([[0] * 7, [0] * 7])
    with pytest.raises(InputError):
        p.act([float("nan")] + [0.0] * 6)
    with pytest.raises(InputError):
        p.act([float("inf")] + [0.0] * 6)
    assert p.inferences == 0
    p.act([1e6] * 7)                       # saturates: clipped, counted, still an action
    assert p.saturated_inputs == 7 and p.inferences == 1


@pytest.mark.parametrize("backend", ["pure", "litert"])
def test_unsupported_op_is_refused(backend):
    data = chain_model(extra_op="SOFTMAX")
    with pytest.raises(UnsupportedModelError, match="SOFTMAX"):
        make_policy(data, None, backend)


@pytest.mark.parametrize("case", ["broadcast", "float output"])
def test_pure_kernel_refuses_mul_it_cannot_run(case):
    """MUL runs same-shape int8 tensors only: a broadcast operand or a float output is refused at
    load with the operator named, not computed wrongly."""
    from harness.training.tflite_builder import TfliteBuilder
    b = TfliteBuilder()
    x1 = b.add_tensor("a", [1, 4], "int8", scale=0.1, zero_point=0)
    if case == "broadcast":
        x2 = b.add_tensor("b", [1, 1], "int8", scale=0.1, zero_point=0)
        y = b.add_tensor("y", [1, 4], "int8", scale=0.1, zero_point=0)
    else:
        x2 = b.add_tensor("b", [1, 4], "int8", scale=0.1, zero_point=0)
        y = b.add_tensor("y", [1, 4], "float32")
    b.add_op("MUL", [x1, x2], [y])
    with pytest.raises(UnsupportedModelError, match="MUL"):
        make_policy(b.finish([x1, x2], [y]), None, "pure")


def test_c_generator_refuses_what_it_cannot_emit():
    with pytest.raises(CKernelUnsupported, match="single-input|int8"):
        generate_c(op_coverage_model())
    with pytest.raises(UnsupportedModelError):
        generate_c(chain_model(extra_op="SOFTMAX"))
    with pytest.raises(CKernelUnsupported):
        HostCPolicy(op_coverage_model())


def _copy_dqn(tmp_path):
    dst = tmp_path / "m"
    shutil.copytree(DQN_DIR, dst)
    return dst


@pytest.mark.parametrize("edit,match", [
    (lambda c: c["inputs"][0].update(shape=[7]), "shape"),
    (lambda c: c["inputs"][0].update(dtype="float32"), "dtype"),
    (lambda c: c["outputs"][0]["quantization"].update(zero_point=0), "quantization"),
    (lambda c: c.update(op_set=["FULLY_CONNECTED", "TANH"]), "op_set"),
    (lambda c: c.update(schema="other"), "schema"),
    (lambda c: c.update(sha256="0" * 64), "sha256"),
    (lambda c: c["inputs"][0]["normalization"].update(std=[1.0] * 6), "normalization"),
    # malformed rather than mismatched: a clear CardMismatchError, not a TypeError from inside the check
    (lambda c: c["inputs"][0].update(shape=None), "shape must be a list"),
    (lambda c: c["inputs"][0].update(shape=[1, "7"]), "shape must be a list"),
    (lambda c: c["inputs"][0].update(shape=[1, True]), "shape must be a list"),
    (lambda c: c["inputs"][0]["normalization"].update(std=["1"] * len(c["inputs"][0]["normalization"]["std"])),
     "std must be > 0"),
    (lambda c: c["inputs"][0]["normalization"].update(std=None), "normalization needs"),
    (lambda c: c["inputs"][0].update(normalization=[0.0, 1.0]), "normalization must be an object"),
    (lambda c: c["inputs"][0]["normalization"]["mean"].__setitem__(0, None), "mean must be finite"),
    (lambda c: c["outputs"].__setitem__(0, "q_values"), "entry must be an object"),
])
def test_card_mismatch_is_refused(tmp_path, edit, match):
    d = _copy_dqn(tmp_path)
    card = json.loads((d / "card.json").read_text())
    edit(card)
    (d / "card.json").write_text(json.dumps(card))
    for backend in ("pure", "litert"):
        with pytest.raises(CardMismatchError, match=match):
            load_policy(str(d), backend)


def test_swapped_or_truncated_model_file_is_refused(tmp_path):
    d = _copy_dqn(tmp_path)
    data = (d / "model.tflite").read_bytes()
    (d / "model.tflite").write_bytes(data[:-10])
    with pytest.raises(CardMismatchError, match="bytes"):
        load_policy(str(d))
    other = chain_model()
    (d / "model.tflite").write_bytes(other)
    card = json.loads((d / "card.json").read_text())
    card.pop("size_bytes")
    card.pop("sha256")
    (d / "card.json").write_text(json.dumps(card))
    with pytest.raises(CardMismatchError, match="quantization|shape"):
        load_policy(str(d))
    (d / "card.json").write_text("{not json")
    with pytest.raises(CardMismatchError, match="JSON"):
        load_policy(str(d))
    with pytest.raises(CardMismatchError):
        load_policy(str(tmp_path / "missing"))


def test_tflite_runtime_fallback_is_probed_for_real():
    """A candidate interpreter counts only after it has run the model: one that imports but
    fails on invoke (like tflite-runtime 2.14 under numpy 2) is skipped, with the reason."""
    from onboard.policy.litert import BackendUnavailable, open_interpreter

    class BrokenInterpreter(object):       # stands in for tflite_runtime's numpy-2 failure
        def __init__(self, model_content=None, **kwargs):
            pass

        def allocate_tensors(self):
            raise RuntimeError("numpy.core.multiarray failed to import")

    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    data = chain_model()
    it, name = open_interpreter(data, True, [("tflite_runtime", BrokenInterpreter, None),
                                             ("ai_edge_litert", Interpreter, OpResolverType)])
    assert name == "ai_edge_litert"
    with pytest.raises(BackendUnavailable, match="numpy.core"):
        open_interpreter(data, False, [("tflite_runtime", BrokenInterpreter, None)])
    try:
        import tflite_runtime  # noqa: F401
    except ImportError:
        return
    # where tflite_runtime is installed (numpy < 2), the real probe decides; when it runs,
    # it must agree with the pure kernel's double rounding (measured for 2.14)
    from onboard.policy.litert import LiteRTPolicy, _candidates
    found, _ = _candidates()
    tfr = [c for c in found if c[0] == "tflite_runtime"]
    try:
        pol = LiteRTPolicy(data, None, True, tfr)
    except BackendUnavailable as exc:
        assert "tflite_runtime" in str(exc)
        return
    assert pol.rounding == "double"
    pure = make_policy(data, None, "pure", "double")
    for x in np.random.default_rng(5).integers(-128, 128, (300, 7)):
        assert pol.run([x.tolist()]) == pure.run([x.tolist()])


def test_cli_inspect_and_check(capsys):
    from harness.cli import main
    assert main(["policy", "inspect", DQN_DIR]) == 0
    out = capsys.readouterr().out
    assert "FULLY_CONNECTED" in out and "MACs 11600" in out and "arena estimate 200 B" in out
    assert main(["policy", "check", DQN_DIR, "-n", "200", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["exact"] and report["backends"]["litert"]["mismatches"] == 0
    assert report["backends"]["c-host"]["mismatches"] == 0
    assert main(["policy", "inspect", os.path.join(REPO, "README.md")]) == 2


@pytest.mark.parametrize("count", ["0", "-1", "ten"])
def test_cli_check_needs_at_least_one_input(capsys, count):
    """An agreement check over no inputs would pass without checking anything: -n must be >= 1."""
    from harness.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["policy", "check", DQN_DIR, "-n", count])
    assert exc.value.code == 2
    assert "argument -n: expected an integer in 1..100000" in capsys.readouterr().err
