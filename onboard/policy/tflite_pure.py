"""Tiny bounds-checked reader of ``.tflite`` flatbuffers (pure: runs on MicroPython).

Why parse the ``.tflite`` itself instead of having the exporter write a second, simpler
weights blob: the ``.tflite`` is the one artifact LiteRT runs, so the bit-exactness tests
compare the *same bytes* in every backend, and nothing can drift between a model and a
side file. The reader is ~250 lines of ``struct.unpack_from`` (MicroPython has it; the
``flatbuffers`` package needs CPython), reads only what the int8 kernel needs, and checks
every offset against the file size, so a corrupt or truncated file raises
:class:`ModelFormatError` (a ``ValueError``) instead of crashing or hanging. The AVR
code generator reads models with this same reader.

Field numbers follow TensorFlow Lite's ``schema.fbs`` (the ``tflite`` package is the
same schema compiled by ``flatc``; a test checks this reader against it).

``read_model(data)`` returns a plain-dict description::

    {"version": int, "description": str,
     "opcodes": [{"builtin": int, "name": str, "custom": str or None, "version": int}],
     "tensors": [{"name", "shape": [int], "dtype": "int8"|..., "buffer": int,
                  "scales": [float], "scale_bits": [uint32], "zero_points": [int],
                  "quantized_dimension": int}],
     "inputs": [int], "outputs": [int],
     "operators": [{"opcode": int, "op": str, "inputs": [int], "outputs": [int],
                    "options": {...}}],
     "buffers": [(offset, length)]}   # byte range of each buffer's data inside ``data``
"""
import struct

FILE_IDENTIFIER = b"TFL3"

# TensorType enum of the schema.
TENSOR_TYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string",
                6: "bool", 7: "int16", 9: "int8"}
DTYPE_SIZES = {"float32": 4, "float16": 2, "int32": 4, "uint8": 1, "int64": 8, "bool": 1,
               "int16": 2, "int8": 1}
# BuiltinOperator codes of the schema (names of the ones we may meet; others print as numbers).
BUILTIN_NAMES = {0: "ADD", 1: "AVERAGE_POOL_2D", 2: "CONCATENATION", 3: "CONV_2D",
                 4: "DEPTHWISE_CONV_2D", 6: "DEQUANTIZE", 9: "FULLY_CONNECTED", 14: "LOGISTIC",
                 16: "LSTM", 17: "MAX_POOL_2D", 18: "MUL", 19: "RELU", 21: "RELU6",
                 22: "RESHAPE", 25: "SOFTMAX", 28: "TANH", 32: "CUSTOM",
                 44: "UNIDIRECTIONAL_SEQUENCE_LSTM", 49: "SQUEEZE", 114: "QUANTIZE"}
ACTIVATION_NAMES = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH",
                    5: "SIGN_BIT"}
PADDING_NAMES = {0: "SAME", 1: "VALID"}
# BuiltinOptions union tags we decode.
_OPT_CONV2D = 1
_OPT_FULLY_CONNECTED = 8
_OPT_ADD = 11
_OPT_MUL = 21

MAX_VECTOR = 1 << 24   # no model of ours has a vector this long; guards against garbage lengths


class ModelFormatError(ValueError):
    """The bytes are not a readable TFLite flatbuffer (corrupt, truncated, or not a model)."""


class _Reader(object):
    """Bounds-checked little-endian reads of flatbuffer tables, vectors and strings."""

    def __init__(self, data):
        self.data = data
        self.size = len(data)

    def _check(self, pos, n, what):
        if pos < 0 or n < 0 or pos + n > self.size:
            raise ModelFormatError("truncated or corrupt model: %s at byte %d (+%d) is outside "
                                   "the %d-byte file" % (what, pos, n, self.size))

    def u8(self, pos, what="byte"):
        self._check(pos, 1, what)
        return self.data[pos]

    def u16(self, pos, what="uint16"):
        self._check(pos, 2, what)
        return struct.unpack_from("<H", self.data, pos)[0]

    def i32(self, pos, what="int32"):
        self._check(pos, 4, what)
        return struct.unpack_from("<i", self.data, pos)[0]

    def u32(self, pos, what="uint32"):
        self._check(pos, 4, what)
        return struct.unpack_from("<I", self.data, pos)[0]

    def i64(self, pos, what="int64"):
        self._check(pos, 8, what)
        return struct.unpack_from("<q", self.data, pos)[0]

    def table(self, pos, what):
        """(table position, vtable position, vtable field count) of the table at ``pos``."""
        self._check(pos, 4, what)
        vt = pos - self.i32(pos, what)
        vt_size = self.u16(vt, what + " vtable")
        if vt_size < 4 or vt_size & 1:
            raise ModelFormatError("corrupt model: bad vtable size %d for %s" % (vt_size, what))
        self._check(vt, vt_size, what + " vtable")
        return (pos, vt, (vt_size - 4) // 2)

    def field(self, tab, slot):
        """Byte position of field ``slot`` of a table, or None when absent."""
        pos, vt, n = tab
        if slot >= n:
            return None
        off = self.u16(vt + 4 + 2 * slot)
        return None if off == 0 else pos + off

    def scalar(self, tab, slot, fmt, default):
        p = self.field(tab, slot)
        if p is None:
            return default
        size = struct.calcsize(fmt)
        self._check(p, size, "scalar field")
        return struct.unpack_from("<" + fmt, self.data, p)[0]

    def indirect(self, tab, slot, what):
        """Target position of an offset field (table/vector/string), or None when absent."""
        p = self.field(tab, slot)
        if p is None:
            return None
        return p + self.u32(p, what)

    def vector(self, tab, slot, elem_size, what):
        """(first element position, length) of a vector field, or (0, 0) when absent."""
        start = self.indirect(tab, slot, what)
        if start is None:
            return (0, 0)
        n = self.u32(start, what + " length")
        if n > MAX_VECTOR:
            raise ModelFormatError("corrupt model: %s claims %d elements" % (what, n))
        self._check(start + 4, n * elem_size, what)
        return (start + 4, n)

    def scalars(self, tab, slot, fmt, what):
        pos, n = self.vector(tab, slot, struct.calcsize(fmt), what)
        if n == 0:
            return []
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.data, pos))

    def tables(self, tab, slot, what):
        pos, n = self.vector(tab, slot, 4, what)
        out = []
        for i in range(n):
            p = pos + 4 * i
            out.append(self.table(p + self.u32(p, what), what))
        return out

    def string(self, tab, slot, what):
        pos, n = self.vector(tab, slot, 1, what)
        if pos == 0:
            return None
        try:
            return bytes(self.data[pos:pos + n]).decode("utf-8")
        except Exception:
            raise ModelFormatError("corrupt model: %s is not UTF-8" % what)


def f32_from_bits(bits):
    """The float value of an IEEE-754 binary32 bit pattern (exact on CPython and MicroPython)."""
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _quantization(r, tensor_tab):
    q_pos = r.indirect(tensor_tab, 4, "tensor quantization")
    if q_pos is None:
        return [], [], [], 0
    q = r.table(q_pos, "quantization")
    if r.scalar(q, 4, "B", 0) != 0:
        raise ModelFormatError("unsupported model: custom quantization details")
    scale_bits = r.scalars(q, 2, "I", "quantization scales")
    zero_points = r.scalars(q, 3, "q", "quantization zero points")
    qdim = r.scalar(q, 6, "i", 0)
    return [f32_from_bits(b) for b in scale_bits], scale_bits, zero_points, qdim


def _options(r, op_tab, op_name):
    """Decoded builtin options of the operators the kernels know (others: {})."""
    opt_type = r.scalar(op_tab, 3, "B", 0)
    pos = r.indirect(op_tab, 4, "operator options")
    if pos is None:
        opt_type = 0
    tab = r.table(pos, "operator options") if pos is not None else None
    if op_name == "FULLY_CONNECTED":
        if tab is not None and opt_type != _OPT_FULLY_CONNECTED:
            raise ModelFormatError("corrupt model: FULLY_CONNECTED with options type %d" % opt_type)
        act = r.scalar(tab, 0, "b", 0) if tab else 0
        return {"activation": ACTIVATION_NAMES.get(act, str(act)),
                "weights_format": r.scalar(tab, 1, "b", 0) if tab else 0,
                "keep_num_dims": bool(r.scalar(tab, 2, "B", 0)) if tab else False,
                "asymmetric_quantize_inputs": bool(r.scalar(tab, 3, "B", 0)) if tab else False}
    if op_name == "CONV_2D":
        if tab is None or opt_type != _OPT_CONV2D:
            raise ModelFormatError("corrupt model: CONV_2D without Conv2DOptions")
        act = r.scalar(tab, 3, "b", 0)
        pad = r.scalar(tab, 0, "b", 0)
        return {"padding": PADDING_NAMES.get(pad, str(pad)),
                "stride_w": r.scalar(tab, 1, "i", 0), "stride_h": r.scalar(tab, 2, "i", 0),
                "activation": ACTIVATION_NAMES.get(act, str(act)),
                "dilation_w": r.scalar(tab, 4, "i", 1), "dilation_h": r.scalar(tab, 5, "i", 1)}
    if op_name in ("ADD", "MUL"):
        if tab is not None and opt_type != (_OPT_ADD if op_name == "ADD" else _OPT_MUL):
            raise ModelFormatError("corrupt model: %s with options type %d" % (op_name, opt_type))
        act = r.scalar(tab, 0, "b", 0) if tab else 0
        return {"activation": ACTIVATION_NAMES.get(act, str(act))}
    return {}


def read_model(data):
    """Parse a ``.tflite`` (bytes) into the plain-dict description above; raises ModelFormatError."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ModelFormatError("model data must be bytes, got %s" % type(data).__name__)
    r = _Reader(data)
    if r.size < 8:
        raise ModelFormatError("truncated model: %d bytes" % r.size)
    if bytes(data[4:8]) != FILE_IDENTIFIER:
        raise ModelFormatError("not a TFLite model: file identifier %r (expected %r)"
                               % (bytes(data[4:8]), FILE_IDENTIFIER))
    root = r.table(r.u32(0, "root offset"), "model")
    model = {"version": r.scalar(root, 0, "I", 0),
             "description": r.string(root, 3, "model description") or ""}
    if model["version"] != 3:
        raise ModelFormatError("unsupported TFLite schema version %d (expected 3)" % model["version"])

    opcodes = []
    for oc in r.tables(root, 1, "operator codes"):
        dep = r.scalar(oc, 0, "b", 0)
        code = r.scalar(oc, 3, "i", 0)
        code = max(code, dep)   # files from old writers only fill the deprecated byte
        opcodes.append({"builtin": code, "name": BUILTIN_NAMES.get(code, "BUILTIN_%d" % code),
                        "custom": r.string(oc, 1, "custom op name"),
                        "version": r.scalar(oc, 2, "i", 1)})

    buffers = []
    for bt in r.tables(root, 4, "buffers"):
        if r.scalar(bt, 1, "Q", 0) > 1:
            raise ModelFormatError("unsupported model: buffer stored outside the flatbuffer")
        pos, n = r.vector(bt, 0, 1, "buffer data")
        buffers.append((pos, n))

    subgraphs = r.tables(root, 2, "subgraphs")
    if len(subgraphs) != 1:
        raise ModelFormatError("unsupported model: %d subgraphs (expected 1)" % len(subgraphs))
    sg = subgraphs[0]

    tensors = []
    for tt in r.tables(sg, 0, "tensors"):
        type_code = r.scalar(tt, 1, "b", 0)
        if type_code not in TENSOR_TYPES:
            raise ModelFormatError("unsupported tensor type code %d" % type_code)
        scales, scale_bits, zps, qdim = _quantization(r, tt)
        buf = r.scalar(tt, 2, "I", 0)
        if buf >= len(buffers):
            raise ModelFormatError("corrupt model: tensor refers to buffer %d of %d" % (buf, len(buffers)))
        shape = r.scalars(tt, 0, "i", "tensor shape")
        for d in shape:
            if d < 0:
                raise ModelFormatError("unsupported model: dynamic tensor shape %r" % (shape,))
        tensors.append({"name": r.string(tt, 3, "tensor name") or "", "shape": shape,
                        "dtype": TENSOR_TYPES[type_code], "buffer": buf, "scales": scales,
                        "scale_bits": scale_bits, "zero_points": zps,
                        "quantized_dimension": qdim})

    def tensor_indices(values, what):
        for v in values:
            if v < -1 or v >= len(tensors):
                raise ModelFormatError("corrupt model: %s refers to tensor %d of %d"
                                       % (what, v, len(tensors)))
        return values

    model["inputs"] = tensor_indices(r.scalars(sg, 1, "i", "subgraph inputs"), "subgraph input")
    model["outputs"] = tensor_indices(r.scalars(sg, 2, "i", "subgraph outputs"), "subgraph output")
    operators = []
    for ot in r.tables(sg, 3, "operators"):
        idx = r.scalar(ot, 0, "I", 0)
        if idx >= len(opcodes):
            raise ModelFormatError("corrupt model: operator code index %d of %d" % (idx, len(opcodes)))
        name = opcodes[idx]["name"]
        operators.append({"opcode": idx, "op": name,
                          "inputs": tensor_indices(r.scalars(ot, 1, "i", "op inputs"), name + " input"),
                          "outputs": tensor_indices(r.scalars(ot, 2, "i", "op outputs"), name + " output"),
                          "options": _options(r, ot, name)})
    model["opcodes"] = opcodes
    model["tensors"] = tensors
    model["operators"] = operators
    model["buffers"] = buffers
    return model


def tensor_size(tensor):
    """Number of elements of a tensor (product of its shape; 1 for a scalar)."""
    n = 1
    for d in tensor["shape"]:
        n *= d
    return n


def buffer_bytes(model, data, tensor):
    """The constant data of ``tensor`` (bytes slice of ``data``), or None for activations."""
    pos, n = model["buffers"][tensor["buffer"]]
    if n == 0:
        return None
    want = tensor_size(tensor) * DTYPE_SIZES.get(tensor["dtype"], 1)
    if n != want:
        raise ModelFormatError("corrupt model: tensor %r has %d bytes of data, shape needs %d"
                               % (tensor["name"], n, want))
    return data[pos:pos + n]
