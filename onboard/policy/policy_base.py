"""The ``Policy`` base class every backend shares (pure module; CPython and MicroPython).

It holds what does not depend on the backend: the input checks, the float <-> int8
conversions (card normalization, then the tensor's scale/zero point), the argmax, and
``BackendUnavailable``. Backends (``policy.PurePolicy``, ``litert.LiteRTPolicy``,
``harness.training.c_kernel.HostCPolicy``) subclass ``Policy`` and implement only ``_run``.
``onboard.policy.policy`` picks and loads a backend; it imports the backends, never the
other way round, so this module imports no backend.
"""
import math

from onboard.policy import card as card_mod
from onboard.policy import tflite_pure as fb
from onboard.policy.int8_pure import (INT8_MAX, INT8_MIN, InputError, UnsupportedModelError, f32_or_none,
                                      round_half_away)


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run here (package missing, or its interpreter fails)."""


def spec_at(specs, index, what):
    """``specs[index]`` (negative indices count from the end), or InputError naming ``what`` ("input",
    "output") when ``index`` is not a whole number in range."""
    if not isinstance(index, int) or isinstance(index, bool) or index >= len(specs) or index < -len(specs):
        raise InputError("the model has %d %ss: no %s %r" % (len(specs), what, what, index))
    return specs[index]


def _spec(tensor, card_spec):
    spec = {"name": tensor["name"], "shape": list(tensor["shape"]), "dtype": tensor["dtype"],
            "size": fb.tensor_size(tensor),
            "scale": tensor["scales"][0] if tensor["scales"] else None,
            "zero_point": tensor["zero_points"][0] if tensor["zero_points"] else 0,
            "normalization": None, "actions": None}
    if card_spec is not None:
        spec["normalization"] = card_spec.get("normalization")
        spec["actions"] = card_spec.get("actions")
    return spec


class Policy(object):
    """Base of every backend. ``model_bytes``: the ``.tflite``; ``card``: its card dict or None.

    Raises ``tflite_pure.ModelFormatError`` (corrupt file), ``card.CardMismatchError``
    (file does not match its card) or ``int8_pure.UnsupportedModelError`` (op/type we
    do not run) -- all ``ValueError`` -- before any inference.
    """
    backend = "base"

    def __init__(self, model_bytes, card=None):
        self.model_bytes = model_bytes
        self.model = fb.read_model(model_bytes)
        if card is not None:
            card_mod.validate(card, self.model)
        self.card = card
        card_in = card["inputs"] if card else [None] * len(self.model["inputs"])
        card_out = card["outputs"] if card else [None] * len(self.model["outputs"])
        self.inputs = [_spec(self.model["tensors"][i], c) for i, c in zip(self.model["inputs"], card_in)]
        self.outputs = [_spec(self.model["tensors"][i], c) for i, c in zip(self.model["outputs"], card_out)]
        for spec in self.inputs:
            scale = spec["scale"]
            if spec["dtype"] == "int8" and scale is not None and not (0 < scale < math.inf):
                raise UnsupportedModelError("input %r has quantization scale %r: observations cannot be "
                                            "quantized (needs a finite scale > 0)" % (spec["name"], scale))
        self.saturated_inputs = 0     # observation values clipped to the int8 range (counted)
        self.inferences = 0

    # -- raw int8 interface ---------------------------------------------------------------
    def run(self, inputs):
        """Raw inference: one flat list per model input (int8 ints or float32 floats).

        Returns one flat list per model output. Bad inputs raise ``InputError``.
        """
        try:
            n_inputs = len(inputs)
        except TypeError:
            raise InputError("inputs must be a sequence of %d sequences (one per model input), got %s"
                             % (len(self.inputs), type(inputs).__name__))
        if n_inputs != len(self.inputs):
            raise InputError("model takes %d inputs, got %d" % (len(self.inputs), n_inputs))
        checked = []
        for spec, x in zip(self.inputs, inputs):
            try:
                values = list(x)
            except TypeError:
                raise InputError("input %r must be a sequence" % spec["name"])
            if len(values) != spec["size"]:
                raise InputError("input %r needs %d values (shape %r), got %d"
                                 % (spec["name"], spec["size"], spec["shape"], len(values)))
            for v in values:
                if spec["dtype"] == "int8":
                    if not isinstance(v, int) or isinstance(v, bool) or v < INT8_MIN or v > INT8_MAX:
                        raise InputError("input %r: %r is not an int8 value" % (spec["name"], v))
                elif not isinstance(v, (int, float)) or f32_or_none(v) is None:
                    raise InputError("input %r: %r is not a finite float32 number" % (spec["name"], v))
            checked.append(values)
        out = self._run(checked)
        self.inferences += 1
        return out

    def _run(self, inputs):
        raise NotImplementedError

    # -- float interface --------------------------------------------------------------------
    def quantize_input(self, observation, index=0):
        """Observation (SI units, card order) -> int8 list: normalize, then round(x/scale)+zp.

        InputError for an observation that is not a sequence of numbers of the input's size, a NaN or
        infinite value, or an ``index`` that names no model input."""
        spec = spec_at(self.inputs, index, "input")
        try:
            values = list(observation)
        except TypeError:
            raise InputError("observation %r must be a sequence of %d numbers, got %s"
                             % (spec["name"], spec["size"], type(observation).__name__))
        if len(values) != spec["size"]:
            raise InputError("observation %r needs %d values, got %d"
                             % (spec["name"], spec["size"], len(values)))
        norm = spec["normalization"]
        out = []
        for i, v in enumerate(values):
            try:
                v = float(v)
            except (TypeError, ValueError, OverflowError):     # None, a list, a str, an int beyond float
                raise InputError("observation %r[%d] = %r is not a number" % (spec["name"], i, v))
            if v != v or v in (math.inf, -math.inf):
                raise InputError("observation %r[%d] is %r" % (spec["name"], i, v))
            if norm is not None:
                v = (v - norm["mean"][i]) / norm["std"][i]
            if spec["dtype"] != "int8":
                out.append(v)
                continue
            if spec["scale"] is None:
                raise InputError("input %r is int8 without quantization parameters: pass its int8 codes to run()"
                                 % spec["name"])
            x = v / spec["scale"]
            if x - x != 0:          # a finite value that overflows once normalised and scaled (1e308 / 0.01)
                raise InputError("observation %r[%d] = %r overflows once normalised and scaled"
                                 % (spec["name"], i, values[i]))
            q = round_half_away(x) + spec["zero_point"]
            if q < INT8_MIN or q > INT8_MAX:
                self.saturated_inputs += 1
                q = INT8_MIN if q < INT8_MIN else INT8_MAX
            out.append(q)
        return out

    def dequantize_output(self, values, index=0):
        """int8 codes of output ``index`` -> floats (``scale * (q - zp)``; float32 outputs as floats)."""
        spec = spec_at(self.outputs, index, "output")
        if spec["dtype"] != "int8":
            return [float(v) for v in values]
        if spec["scale"] is None:
            raise InputError("output %r is int8 without quantization parameters: use run()'s codes" % spec["name"])
        return [spec["scale"] * (v - spec["zero_point"]) for v in values]

    def predict(self, *observations):
        """Float outputs for float observations (one sequence per model input).

        Returns the dequantized first output as a list of floats, or a list of such lists
        when the model has several outputs.
        """
        if len(observations) != len(self.inputs):
            raise InputError("model takes %d observations, got %d" % (len(self.inputs), len(observations)))
        q_in = [self.quantize_input(o, i) for i, o in enumerate(observations)]
        q_out = self.run(q_in)
        outs = [self.dequantize_output(v, i) for i, v in enumerate(q_out)]
        return outs[0] if len(outs) == 1 else outs

    def act(self, *observations):
        """The action index (argmax of the first output, first index on ties) when the card
        lists ``actions`` for it; otherwise the same as :meth:`predict`."""
        if self.outputs[0]["actions"] is None:
            return self.predict(*observations)
        if len(observations) != len(self.inputs):
            raise InputError("model takes %d observations, got %d" % (len(self.inputs), len(observations)))
        q_in = [self.quantize_input(o, i) for i, o in enumerate(observations)]
        return argmax(self.run(q_in)[0])

    def describe(self):
        """Short dict of backend, I/O specs and operators (for tools and logs)."""
        return {"backend": self.backend, "inputs": self.inputs, "outputs": self.outputs,
                "ops": [op["op"] for op in self.model["operators"]]}


def argmax(values):
    """Index of the largest value; the first one on ties (same rule on every backend)."""
    best = 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best = i
    return best
