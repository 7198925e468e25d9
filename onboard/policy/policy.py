"""One ``Policy`` interface over every backend that runs an int8 ``.tflite`` (pure module).

Backends (``load_policy(model_dir, backend=...)``):

- ``"pure"``: :mod:`onboard.policy.int8_pure`, TFLite reference-kernel arithmetic in plain
  Python; runs on CPython and MicroPython.
- ``"litert"``: LiteRT (``ai_edge_litert``) with its *reference* kernels (bit-exact with
  ``"pure"``); falls back to ``tflite_runtime`` only when that interpreter actually runs.
- ``"litert-xnnpack"``: LiteRT's default optimized path (XNNPACK delegate): faster, but its
  requantization is not TFLite's reference arithmetic, so it is *not* guaranteed bit-exact.
- The C kernel of ``firmware/policy_avr`` runs on the host through
  ``harness.training.c_kernel.HostCPolicy`` (same interface) and on the AVR in simavr.

Every backend shares one base class, ``policy_base.Policy`` (also importable from here):
the same input checks, the same float <-> int8 conversions (card normalization, then the
tensor's scale/zero point), the same argmax. Only ``_run`` differs, so backends agree
bit-exactly whenever their int8 cores do.

Usage::

    from onboard.policy import load_policy
    policy = load_policy("models/pocket-dqn", backend="pure")
    action = policy.act([vx_mps, vy_mps, dx_m, dy_m, ox_m, oy_m, dt_s])   # int action index
    q = policy.predict(obs)                                              # dequantized floats
    q_int8 = policy.run([[...7 int8...]])[0]                             # raw int8 in/out
"""
import json

from onboard.policy import card as card_mod
from onboard.policy import tflite_pure as fb
from onboard.policy.int8_pure import Int8Graph
# The shared base lives in policy_base (so litert.py need not import this module); its names
# stay importable from here.
from onboard.policy.policy_base import BackendUnavailable, Policy, argmax  # noqa: F401

BACKENDS = ("pure", "litert", "litert-xnnpack")


class PurePolicy(Policy):
    """The pure-Python int8 kernel (CPython and MicroPython).

    ``rounding``: "single" (default) matches LiteRT 2.x; "double" matches runtimes built
    without TFLITE_SINGLE_ROUNDING (tflite-runtime 2.14; see ``LiteRTPolicy.rounding``).
    """
    backend = "pure"

    def __init__(self, model_bytes, card=None, rounding="single"):
        Policy.__init__(self, model_bytes, card)
        self.graph = Int8Graph(model_bytes, rounding)

    def _run(self, inputs):
        return self.graph.invoke(inputs)


def _join(a, b):
    return a.rstrip("/") + "/" + b


def _sha256_hex(data):
    try:
        import hashlib
    except ImportError:
        return None
    h = hashlib.sha256(data)
    d = h.digest()
    return "".join("%02x" % b for b in d)


def load_model_dir(model_dir):
    """(model bytes, card dict) of ``models/<name>/``; checks the file's size and sha256."""
    card_path = _join(model_dir, "card.json")
    try:
        with open(card_path) as fh:
            card = json.load(fh)
    except OSError as exc:
        raise card_mod.CardMismatchError("cannot read %s: %s" % (card_path, exc))
    except ValueError as exc:
        raise card_mod.CardMismatchError("%s is not valid JSON: %s" % (card_path, exc))
    except RuntimeError:            # RecursionError (CPython): arrays / objects nested thousands deep
        raise card_mod.CardMismatchError("%s is not valid JSON: nested too deeply" % card_path)
    card_mod.check_card_fields(card)
    name = card.get("file", "model.tflite")
    if not isinstance(name, str):
        raise card_mod.CardMismatchError("card 'file' must be str")
    path = _join(model_dir, name)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except (OSError, ValueError) as exc:        # ValueError: a name with a NUL byte
        raise fb.ModelFormatError("cannot read %s: %s" % (path, exc))
    if "size_bytes" in card and len(data) != card["size_bytes"]:
        raise card_mod.CardMismatchError("%s has %d bytes, the card says %r (truncated or replaced)"
                                         % (path, len(data), card["size_bytes"]))
    digest = _sha256_hex(data)
    if digest is not None and "sha256" in card and digest != card["sha256"]:
        raise card_mod.CardMismatchError("%s sha256 %s differs from the card's %s (corrupt or "
                                         "replaced file)" % (path, digest[:16], str(card["sha256"])[:16]))
    return data, card


def make_policy(model_bytes, card=None, backend="pure", rounding="single"):
    """A Policy of ``backend`` for in-memory model bytes (and optional card). ``rounding`` ("single" or
    "double", else ValueError) applies to "pure"; the LiteRT backends round as their runtime is built
    (``LiteRTPolicy.rounding``)."""
    if not isinstance(rounding, str) or rounding not in ("single", "double"):
        raise ValueError("rounding must be 'single' (LiteRT 2.x) or 'double' (tflite-runtime 2.14), got %r"
                         % (rounding,))
    if backend == "pure":
        return PurePolicy(model_bytes, card, rounding)
    if backend in ("litert", "litert-xnnpack"):
        from onboard.policy.litert import LiteRTPolicy
        return LiteRTPolicy(model_bytes, card, reference=(backend == "litert"))
    raise ValueError("unknown policy backend %r (choose from %s; the host C kernel is "
                     "harness.training.c_kernel.HostCPolicy)" % (backend, ", ".join(BACKENDS)))


def load_policy(model_dir, backend="pure", rounding="single"):
    """Load ``models/<name>/`` (model.tflite + card.json), validate, return a Policy."""
    data, card = load_model_dir(model_dir)
    return make_policy(data, card, backend, rounding)
