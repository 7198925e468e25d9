"""LiteRT backend (CPython + numpy): ``ai_edge_litert``, or ``tflite_runtime`` where that works.

Bit-exactness: LiteRT's default (optimized) int8 kernels do not requantize like TFLite's
reference kernels (x86 ruy rounds ties towards +inf after a double rounding; the XNNPACK
delegate uses float requantization). ``reference=True`` (backend ``"litert"``) selects the
reference op resolver (``OpResolverType.BUILTIN_REF``), which is bit-exact with the pure
kernel on every input the tests try; ``reference=False`` (``"litert-xnnpack"``) is the
fast default path, reported separately in ``bench/policy.py``.

Fallback: ``tflite_runtime`` 2.14 imports under numpy 2 but its Interpreter then fails, so
an interpreter counts as available only after it has loaded this model, allocated and run
one inference here (:func:`open_interpreter`), never on a successful import alone.
"""
import numpy as np

from onboard.policy.int8_pure import INT8_MAX, INT8_MIN, InputError
from onboard.policy.policy_base import BackendUnavailable, Policy, spec_at

_NP_DTYPES = {"int8": np.int8, "float32": np.float32, "uint8": np.uint8, "int16": np.int16,
              "int32": np.int32}


def _candidates():
    """(module name, Interpreter class, OpResolverType or None) of installed interpreters."""
    found = []
    errors = []
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
        found.append(("ai_edge_litert", Interpreter, OpResolverType))
    except ImportError as exc:
        errors.append("ai_edge_litert: %s" % exc)
    try:
        from tflite_runtime.interpreter import Interpreter as TfrInterpreter
        try:
            from tflite_runtime.interpreter import OpResolverType as TfrResolver
        except ImportError:
            TfrResolver = None
        found.append(("tflite_runtime", TfrInterpreter, TfrResolver))
    except ImportError as exc:
        errors.append("tflite_runtime: %s" % exc)
    return found, errors


def open_interpreter(model_bytes, reference=True, candidates=None):
    """(interpreter, module name): the first interpreter that really runs this model.

    Each candidate must construct, allocate tensors and invoke once on zeros; a failure
    moves on to the next one. Raises BackendUnavailable listing why each failed.
    """
    found, errors = _candidates() if candidates is None else (candidates, [])
    for name, interpreter_cls, resolver in found:
        try:
            kwargs = {"model_content": bytes(model_bytes)}
            if resolver is not None:
                kwargs["experimental_op_resolver_type"] = (
                    resolver.BUILTIN_REF if reference else resolver.AUTO)
            elif reference:
                raise BackendUnavailable("no reference op resolver in this version")
            it = interpreter_cls(**kwargs)
            it.allocate_tensors()
            for d in it.get_input_details():
                it.set_tensor(d["index"], np.zeros(d["shape"], dtype=d["dtype"]))
            it.invoke()
            for d in it.get_output_details():
                it.get_tensor(d["index"])
            return it, name
        except Exception as exc:     # noqa: BLE001 -- any failure means "does not run here"
            errors.append("%s: %s: %s" % (name, type(exc).__name__, exc))
    raise BackendUnavailable("no working TFLite interpreter: " + "; ".join(errors))


class LiteRTPolicy(Policy):
    """Policy on LiteRT (reference kernels by default; see the module docstring)."""

    def __init__(self, model_bytes, card=None, reference=True, candidates=None):
        Policy.__init__(self, model_bytes, card)   # validates file and card before LiteRT sees it
        from onboard.policy.int8_pure import Int8Graph
        Int8Graph(model_bytes)   # same op/type checks as the pure kernel: same models accepted
        self.backend = "litert" if reference else "litert-xnnpack"
        self.interpreter, self.runtime = open_interpreter(model_bytes, reference, candidates)
        # Requantization rounding of the runtime's reference kernels: LiteRT 2.x is built with
        # TFLITE_SINGLE_ROUNDING; tflite-runtime 2.14 (numpy < 2 only) is not -- measured:
        # its BUILTIN_REF output equals the pure kernel with rounding="double".
        self.rounding = "double" if self.runtime == "tflite_runtime" else "single"
        self._in = [(d["index"], d["shape"], d["dtype"]) for d in self.interpreter.get_input_details()]
        self._out = [d["index"] for d in self.interpreter.get_output_details()]
        # preallocated input buffers: one copy per call, no array construction
        self._in_bufs = [np.zeros(shape, dtype=dtype) for _, shape, dtype in self._in]
        # the float interface in NumPy only where it pays: for a few values Policy's loops are faster
        self._vectorised = sum(spec["size"] for spec in self.inputs) >= VECTORISED_MIN_VALUES
        # the card's normalisation per input as arrays ((mean, std) or None), for _quantize
        self._norms = [None if spec["normalization"] is None else
                       (np.asarray(spec["normalization"]["mean"], dtype=np.float64),
                        np.asarray(spec["normalization"]["std"], dtype=np.float64)) for spec in self.inputs]

    def _run(self, inputs):
        return [out.tolist() for out in self._invoke(inputs)]

    def _invoke(self, inputs):
        """One inference on checked inputs (flat lists or arrays); the outputs as flat arrays."""
        it = self.interpreter
        for (index, _, _), buf, x in zip(self._in, self._in_bufs, inputs):
            buf.flat[:] = x
            it.set_tensor(index, buf)
        it.invoke()
        return [it.get_tensor(i).ravel() for i in self._out]

    # -- float interface, vectorised: the values, counters and errors of Policy's element loops
    # (policy_base stays loop-only because it runs on MicroPython; quantizing the swarm's 134-value
    # estimator input takes ~60 us in the loops, twice LiteRT's inference, and ~20-30 us here)
    def _quantize(self, observation, index):
        """Policy.quantize_input as an array (int8 inputs: int64 values in [-128, 127]); anything
        that is not a flat, finite, right-sized sequence of numbers, or whose scaled values overflow,
        goes through Policy's loop, which raises its error (after the same counts)."""
        spec = self.inputs[index]
        try:
            v = None if isinstance(observation, np.ma.MaskedArray) else np.asarray(observation, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):     # OverflowError: an int beyond float
            v = None
        if v is None or v.ndim != 1 or v.size != spec["size"] or not np.isfinite(v).all():
            return np.asarray(Policy.quantize_input(self, observation, index))
        norm = self._norms[index]
        with np.errstate(over="ignore", invalid="ignore"):
            if norm is not None:
                v = (v - norm[0]) / norm[1]
            if spec["dtype"] != "int8":
                return v
            x = v / spec["scale"]
        if not np.isfinite(x).all():
            return np.asarray(Policy.quantize_input(self, observation, index))
        q = round_half_away(x) + spec["zero_point"]
        low, high = q < INT8_MIN, q > INT8_MAX
        saturated = int(np.count_nonzero(low | high))
        if saturated:
            self.saturated_inputs += saturated
            q = np.clip(q, INT8_MIN, INT8_MAX)
        return q.astype(np.int64)

    def _dequantize(self, values, index):
        spec = self.outputs[index]
        if spec["dtype"] != "int8":
            return values.astype(np.float64)
        return spec["scale"] * (values.astype(np.float64) - spec["zero_point"])

    def quantize_input(self, observation, index=0):
        if not self._vectorised:
            return Policy.quantize_input(self, observation, index)
        spec_at(self.inputs, index, "input")                  # InputError for an index naming no input
        return self._quantize(observation, index).tolist()

    def predict(self, *observations):
        if not self._vectorised or len(observations) != len(self.inputs):
            return Policy.predict(self, *observations)       # the loops, or their InputError
        outs = self._invoke([self._quantize(o, i) for i, o in enumerate(observations)])
        self.inferences += 1
        outs = [self._dequantize(v, i).tolist() for i, v in enumerate(outs)]
        return outs[0] if len(outs) == 1 else outs

    def act(self, *observations):
        if not self._vectorised or self.outputs[0]["actions"] is None or len(observations) != len(self.inputs):
            return Policy.act(self, *observations)           # the loops, predict, or their InputError
        outs = self._invoke([self._quantize(o, i) for i, o in enumerate(observations)])
        self.inferences += 1
        return int(np.argmax(outs[0]))                        # the first index on ties, as argmax

    def run_codes(self, codes):
        """One inference on int8 codes a caller already holds (one flat sequence per input, each of its
        input's size and dtype, e.g. a model output fed back as a recurrent state: not checked again); the
        outputs' raw codes as flat arrays (copies). Counts the inference."""
        outs = self._invoke(codes)
        self.inferences += 1
        return outs

    def run_batch_q(self, x_q):
        """Fast path for benchmarks/tests: int8 numpy array [n, features] -> int8 array [n, outs] (a one-input
        model's first output). ``InputError`` (as ``HostCPolicy.run_batch_q``) for a model of several inputs or
        an ``x_q`` that is not an [n, features] array (of whole numbers in [-128, 127] for an int8 input: a
        wider value would wrap to int8 here, a float be truncated)."""
        if len(self._in) != 1:
            raise InputError("run_batch_q runs one-input models; this one takes %d inputs" % len(self._in))
        n_in = self.inputs[0]["size"]
        try:
            x = np.asarray(x_q)
        except ValueError as exc:                       # ragged rows
            raise InputError("run_batch_q needs an [n, %d] array: %s" % (n_in, exc))
        if x.ndim != 2 or x.shape[1] != n_in:
            raise InputError("run_batch_q needs an [n, %d] array, got shape %r" % (n_in, x.shape))
        if self.inputs[0]["dtype"] == "int8" and x.size and \
                (x.dtype.kind not in "iu" or x.min() < INT8_MIN or x.max() > INT8_MAX):
            raise InputError("run_batch_q needs whole numbers in [%d, %d] (dtype %s, values %r .. %r)"
                             % (INT8_MIN, INT8_MAX, x.dtype, x.min(), x.max()))
        it = self.interpreter
        (index, shape, dtype), out_index = self._in[0], self._out[0]
        out = []
        for row in x.astype(dtype):
            it.set_tensor(index, row.reshape(shape))
            it.invoke()
            out.append(it.get_tensor(out_index).reshape(-1))
        return np.array(out)


# Inputs (values over all model inputs) from which the NumPy float interface beats Policy's loops: measured
# on the committed models, the 7-value DQN's act 12-20 us in the loops against 20-35 us in NumPy (the
# array set-up dominates), the 134-value estimator's predict 85-91 against 55 us
VECTORISED_MIN_VALUES = 32


def round_half_away(x):
    """int8_pure.round_half_away on an array of floats (``std::round``: halves away from zero), as
    float64 integers: |x| - floor(|x|) is exact, so the tie test is the scalar one's."""
    a = np.abs(x)
    f = np.floor(a)
    return np.copysign(f + (a - f >= 0.5), x)
