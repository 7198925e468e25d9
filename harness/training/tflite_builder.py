"""Write real fully-int8 ``.tflite`` files with the ``tflite`` schema and ``flatbuffers`` packages.

Why not TensorFlow's converter: TensorFlow is a 274 MB wheel (1.6 GB environment) that
would have to sit in every training and CI environment just to serialise a handful of
int8 tensors; the quantization itself (calibration, symmetric per-channel weights,
int32 biases) is a few lines of numpy that we want to control and test anyway. The
``tflite`` package is the schema compiled by ``flatc --python`` (so field numbers are
the schema's, not ours) and LiteRT loads what we write, which the tests check on every
model. TensorFlow stays out of every dependency list.

:class:`TfliteBuilder` is a small graph builder: add tensors (with buffers and
quantization), add builtin operators, ``finish()`` returns the file bytes.
"""
import importlib

import flatbuffers
import numpy as np


def _schema(name):
    # ``tflite/__init__.py`` star-imports every class over its submodule name, so the
    # generated module (with its builder functions) is taken from importlib.
    return importlib.import_module("tflite." + name)


_TensorType = _schema("TensorType").TensorType
_BuiltinOperator = _schema("BuiltinOperator").BuiltinOperator
_BuiltinOptions = _schema("BuiltinOptions").BuiltinOptions
_Activation = _schema("ActivationFunctionType").ActivationFunctionType
_Padding = _schema("Padding").Padding

DTYPES = {"int8": (_TensorType.INT8, np.int8), "int32": (_TensorType.INT32, np.int32),
          "float32": (_TensorType.FLOAT32, np.float32), "uint8": (_TensorType.UINT8, np.uint8),
          "int16": (_TensorType.INT16, np.int16), "int64": (_TensorType.INT64, np.int64)}
ACTIVATIONS = {"NONE": _Activation.NONE, "RELU": _Activation.RELU, "RELU6": _Activation.RELU6,
               "RELU_N1_TO_1": _Activation.RELU_N1_TO_1, "TANH": _Activation.TANH}
PADDINGS = {"SAME": _Padding.SAME, "VALID": _Padding.VALID}
# The builtin options :meth:`TfliteBuilder.add_op` serialises, per operator (any other is refused: it
# would be left out of the file).
OP_OPTIONS = {"FULLY_CONNECTED": ("activation", "keep_num_dims"),
              "CONV_2D": ("padding", "stride_w", "stride_h", "activation", "dilation_w", "dilation_h"),
              "ADD": ("activation",), "MUL": ("activation",), "SOFTMAX": ("beta",), "RESHAPE": ("new_shape",)}
# Operator versions as TensorFlow's converter writes them for int8 (per-channel FC needs >= 4).
OP_VERSIONS = {"FULLY_CONNECTED": 5, "CONV_2D": 3, "QUANTIZE": 2, "DEQUANTIZE": 2, "TANH": 2,
               "LOGISTIC": 2, "RESHAPE": 1, "ADD": 2, "MUL": 2, "SOFTMAX": 2, "RELU": 2, "RELU6": 2}


def _check_integers(name, dtype, data):
    """ValueError unless every value of ``data`` is a whole number within ``dtype``'s range."""
    values = np.asarray(data)
    if values.size == 0:
        return
    if values.dtype.kind not in "iuf":
        raise ValueError("tensor %r: %s data must be numbers, got %s" % (name, dtype, values.dtype))
    info = np.iinfo(DTYPES[dtype][1])
    if values.dtype.kind == "f":
        bad = ~np.isfinite(values) | (values != np.round(values))
        if bad.any():
            raise ValueError("tensor %r: %s data must be whole numbers, got %r"
                             % (name, dtype, values[bad].flat[0].item()))
    lo, hi = values.min().item(), values.max().item()
    if lo < info.min or hi > info.max:
        raise ValueError("tensor %r: %s data must lie in [%d, %d], got %r .. %r"
                         % (name, dtype, info.min, info.max, lo, hi))


class TfliteBuilder(object):
    """Collects tensors and operators of one subgraph, then serialises a TFLite model."""

    def __init__(self, description="onboard int8 policy"):
        self.description = description
        self.tensors = []      # dicts: name, shape, dtype, data (np array or None), quant
        self.ops = []          # dicts: op, inputs, outputs, options
        self.inputs = []
        self.outputs = []

    def add_tensor(self, name, shape, dtype, data=None, scale=None, zero_point=None,
                   quantized_dimension=0):
        """Add a tensor; ``scale``/``zero_point`` are a number or a per-channel list. Returns its index.
        ValueError when ``data`` of an integer ``dtype`` holds a value that is not a whole number within
        that type's range (it would be stored wrapped or truncated)."""
        if dtype not in DTYPES:
            raise ValueError("unknown dtype %r" % dtype)
        if not isinstance(name, str):
            raise ValueError("a tensor name must be a str, got %r" % (name,))
        if any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
            raise ValueError("tensor %r: the shape must be whole numbers >= 0, got %r" % (name, list(shape)))
        if data is not None:
            np_type = DTYPES[dtype][1]
            if np.issubdtype(np_type, np.integer):
                _check_integers(name, dtype, data)
            data = np.ascontiguousarray(np.asarray(data, dtype=np_type).reshape(shape))
        quant = None
        if scale is not None:
            scales = np.atleast_1d(np.asarray(scale, dtype=np.float32))
            zps = np.atleast_1d(np.asarray(0 if zero_point is None else zero_point, dtype=np.int64))
            if zps.size == 1 and scales.size > 1:
                zps = np.repeat(zps, scales.size)
            quant = {"scale": scales, "zero_point": zps, "dim": int(quantized_dimension)}
        self.tensors.append({"name": name, "shape": [int(s) for s in shape], "dtype": dtype,
                             "data": data, "quant": quant})
        return len(self.tensors) - 1

    def add_op(self, op, inputs, outputs, **options):
        """Add a builtin operator by name (``FULLY_CONNECTED``, ``CONV_2D``, ...) with the options of
        :data:`OP_OPTIONS`; ValueError for an unknown operator, option, activation or padding."""
        if not hasattr(_BuiltinOperator, op):
            raise ValueError("unknown builtin operator %r" % op)
        for role, indices in (("input", inputs), ("output", outputs)):
            for i in indices:
                if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not -1 <= i < len(self.tensors):
                    raise ValueError("%s: %s %r is not a tensor index (0..%d, or -1 for an omitted input)"
                                     % (op, role, i, len(self.tensors) - 1))
                if role == "output" and i < 0:
                    raise ValueError("%s: an output cannot be omitted (-1)" % op)
        allowed = OP_OPTIONS.get(op, ())
        unknown = sorted(k for k in options if k not in allowed)
        if unknown:
            raise ValueError("%s takes the options %s, not %s" % (op, ", ".join(allowed) or "none",
                                                                   ", ".join(unknown)))
        if options.get("activation", "NONE") not in ACTIVATIONS:
            raise ValueError("%s: unknown activation %r (one of %s)" % (op, options["activation"],
                                                                       ", ".join(ACTIVATIONS)))
        if options.get("padding", "VALID") not in PADDINGS:
            raise ValueError("%s: unknown padding %r (one of %s)" % (op, options["padding"], ", ".join(PADDINGS)))
        self.ops.append({"op": op, "inputs": list(inputs), "outputs": list(outputs),
                         "options": options})

    # -- serialisation -------------------------------------------------------------------
    def _options(self, b, op, options):
        """(options type, offset) of an operator's builtin options table."""
        act = ACTIVATIONS[options.get("activation", "NONE")]
        if op == "FULLY_CONNECTED":
            m = _schema("FullyConnectedOptions")
            m.Start(b)
            m.AddFusedActivationFunction(b, act)
            m.AddKeepNumDims(b, bool(options.get("keep_num_dims", False)))
            return _BuiltinOptions.FullyConnectedOptions, m.End(b)
        if op == "CONV_2D":
            m = _schema("Conv2DOptions")
            m.Start(b)
            m.AddPadding(b, PADDINGS[options.get("padding", "VALID")])
            m.AddStrideW(b, int(options.get("stride_w", 1)))
            m.AddStrideH(b, int(options.get("stride_h", 1)))
            m.AddFusedActivationFunction(b, act)
            m.AddDilationWFactor(b, int(options.get("dilation_w", 1)))
            m.AddDilationHFactor(b, int(options.get("dilation_h", 1)))
            return _BuiltinOptions.Conv2DOptions, m.End(b)
        if op == "ADD":
            m = _schema("AddOptions")
            m.Start(b)
            m.AddFusedActivationFunction(b, act)
            return _BuiltinOptions.AddOptions, m.End(b)
        if op == "MUL":
            m = _schema("MulOptions")
            m.Start(b)
            m.AddFusedActivationFunction(b, act)
            return _BuiltinOptions.MulOptions, m.End(b)
        if op == "SOFTMAX":
            m = _schema("SoftmaxOptions")
            m.Start(b)
            m.AddBeta(b, float(options.get("beta", 1.0)))
            return _BuiltinOptions.SoftmaxOptions, m.End(b)
        if op == "RESHAPE":
            m = _schema("ReshapeOptions")
            shape = options.get("new_shape")
            vec = b.CreateNumpyVector(np.asarray(shape, dtype=np.int32)) if shape is not None else None
            m.Start(b)
            if vec is not None:
                m.AddNewShape(b, vec)
            return _BuiltinOptions.ReshapeOptions, m.End(b)
        return 0, None

    def finish(self, inputs, outputs):
        """Serialise with ``inputs``/``outputs`` (tensor indices) as the subgraph's I/O; returns bytes.
        ValueError when one of them is not a tensor index."""
        for i in list(inputs) + list(outputs):
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < len(self.tensors):
                raise ValueError("graph input/output %r is not a tensor index (0..%d)" % (i, len(self.tensors) - 1))
        b = flatbuffers.Builder(1024)
        m_buffer = _schema("Buffer")
        m_tensor = _schema("Tensor")
        m_quant = _schema("QuantizationParameters")
        m_op = _schema("Operator")
        m_opcode = _schema("OperatorCode")
        m_sub = _schema("SubGraph")
        m_model = _schema("Model")

        # Buffers: index 0 is the conventional empty buffer; constant tensors get their own.
        buffer_offsets = []
        m_buffer.Start(b)
        buffer_offsets.append(m_buffer.End(b))
        tensor_buffer = []
        for t in self.tensors:
            if t["data"] is None:
                tensor_buffer.append(0)
                continue
            b.StartVector(1, t["data"].nbytes, 16)   # 16-byte alignment for the kernels
            raw = t["data"].tobytes()
            b.head = b.head - len(raw)
            b.Bytes[b.head:b.head + len(raw)] = raw
            vec = b.EndVector()
            m_buffer.Start(b)
            m_buffer.AddData(b, vec)
            buffer_offsets.append(m_buffer.End(b))
            tensor_buffer.append(len(buffer_offsets) - 1)

        tensor_offsets = []
        for t, buf_index in zip(self.tensors, tensor_buffer):
            name = b.CreateString(t["name"])
            shape = b.CreateNumpyVector(np.asarray(t["shape"], dtype=np.int32))
            q_off = None
            if t["quant"] is not None:
                scale_vec = b.CreateNumpyVector(t["quant"]["scale"].astype(np.float32))
                zp_vec = b.CreateNumpyVector(t["quant"]["zero_point"].astype(np.int64))
                m_quant.Start(b)
                m_quant.AddScale(b, scale_vec)
                m_quant.AddZeroPoint(b, zp_vec)
                m_quant.AddQuantizedDimension(b, t["quant"]["dim"])
                q_off = m_quant.End(b)
            m_tensor.Start(b)
            m_tensor.AddShape(b, shape)
            m_tensor.AddType(b, DTYPES[t["dtype"]][0])
            m_tensor.AddBuffer(b, buf_index)
            m_tensor.AddName(b, name)
            if q_off is not None:
                m_tensor.AddQuantization(b, q_off)
            tensor_offsets.append(m_tensor.End(b))

        op_names = []
        for o in self.ops:
            if o["op"] not in op_names:
                op_names.append(o["op"])
        op_offsets = []
        for o in self.ops:
            ins = b.CreateNumpyVector(np.asarray(o["inputs"], dtype=np.int32))
            outs = b.CreateNumpyVector(np.asarray(o["outputs"], dtype=np.int32))
            opt_type, opt_off = self._options(b, o["op"], o["options"])
            m_op.Start(b)
            m_op.AddOpcodeIndex(b, op_names.index(o["op"]))
            m_op.AddInputs(b, ins)
            m_op.AddOutputs(b, outs)
            if opt_off is not None:
                m_op.AddBuiltinOptionsType(b, opt_type)
                m_op.AddBuiltinOptions(b, opt_off)
            op_offsets.append(m_op.End(b))

        def vector_of(offsets, start_fn):
            start_fn(b, len(offsets))
            for off in reversed(offsets):
                b.PrependUOffsetTRelative(off)
            return b.EndVector()

        tensors_vec = vector_of(tensor_offsets, m_sub.StartTensorsVector)
        ops_vec = vector_of(op_offsets, m_sub.StartOperatorsVector)
        in_vec = b.CreateNumpyVector(np.asarray(inputs, dtype=np.int32))
        out_vec = b.CreateNumpyVector(np.asarray(outputs, dtype=np.int32))
        sub_name = b.CreateString("main")
        m_sub.Start(b)
        m_sub.AddTensors(b, tensors_vec)
        m_sub.AddInputs(b, in_vec)
        m_sub.AddOutputs(b, out_vec)
        m_sub.AddOperators(b, ops_vec)
        m_sub.AddName(b, sub_name)
        subgraph = m_sub.End(b)

        code_offsets = []
        for name in op_names:
            code = getattr(_BuiltinOperator, name)
            m_opcode.Start(b)
            m_opcode.AddDeprecatedBuiltinCode(b, min(code, 127))
            m_opcode.AddVersion(b, OP_VERSIONS.get(name, 1))
            m_opcode.AddBuiltinCode(b, code)
            code_offsets.append(m_opcode.End(b))

        codes_vec = vector_of(code_offsets, m_model.StartOperatorCodesVector)
        subs_vec = vector_of([subgraph], m_model.StartSubgraphsVector)
        bufs_vec = vector_of(buffer_offsets, m_model.StartBuffersVector)
        desc = b.CreateString(self.description)
        m_model.Start(b)
        m_model.AddVersion(b, 3)
        m_model.AddOperatorCodes(b, codes_vec)
        m_model.AddSubgraphs(b, subs_vec)
        m_model.AddDescription(b, desc)
        m_model.AddBuffers(b, bufs_vec)
        model = m_model.End(b)
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())
