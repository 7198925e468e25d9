"""C int8 kernel from a ``.tflite``: code generation, host build (ctypes) and AVR build in simavr.

``generate_c(model_bytes)`` turns a model into ``model.c``/``model.h``: weights, folded
biases, requantization multipliers/shifts and activation tables as ``PROGMEM`` arrays, and
``pi8_model_invoke(in, out)`` calling the kernel in ``firmware/policy_avr/policy_int8.c``
in order. The numbers come from the same preparation code as the pure kernel
(``onboard.policy.int8_pure.Int8Graph``), so the C kernel cannot drift from it; the tests
check it against LiteRT anyway.

C op set: a chain of FULLY_CONNECTED (per-tensor or per-channel, fused NONE/RELU/RELU6/
RELU_N1_TO_1), TANH, LOGISTIC and RESHAPE with one int8 input and one int8 output. Other
models are refused with :class:`CKernelUnsupported`.

``HostCPolicy``: the generated C compiled with the host gcc and run through ctypes (same
``Policy`` interface). ``build_avr`` / ``run_simavr``: the ATmega328P test-vector firmware.
"""
import ctypes
import hashlib
import os
import re
import shutil
import subprocess

import numpy as np

from onboard.policy.int8_pure import INT8_MAX, INT8_MIN, InputError, Int8Graph
from onboard.policy.policy_base import Policy
from onboard.policy.tflite_pure import tensor_size

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL_DIR = os.path.join(REPO_ROOT, "firmware", "policy_avr")
BUILD_ROOT = os.path.join(REPO_ROOT, "build", "policy_avr")
AVR_F_CPU_HZ = 16000000
C_OPS = ("FULLY_CONNECTED", "TANH", "LOGISTIC", "RESHAPE")
C_MAX_LENGTH = 65535        # the kernel's vector lengths (n_in, n_out, n) are uint16_t


class CKernelUnsupported(ValueError):
    """The model uses something the C kernel generator does not emit."""


def _array(ctype, name, values, per_line=16):
    body = []
    for i in range(0, len(values), per_line):
        body.append("    " + ", ".join(str(int(v)) for v in values[i:i + per_line]) + ",")
    return "static const %s %s[%d] PROGMEM = {\n%s\n};\n" % (ctype, name, len(values), "\n".join(body))


def _i32_literal(v):
    # INT32_MIN cannot be written as a plain literal in C.
    return "(-2147483647 - 1)" if v == -(1 << 31) else "%dL" % v


def _array_i32(name, values):
    lines = []
    for i in range(0, len(values), 8):
        lines.append("    " + ", ".join(_i32_literal(int(v)) for v in values[i:i + 8]) + ",")
    return "static const int32_t %s[%d] PROGMEM = {\n%s\n};\n" % (name, len(values), "\n".join(lines))


def generate_c(model_bytes, name="model"):
    """(model.c text, model.h text, info dict) for a chain model; raises CKernelUnsupported."""
    graph = Int8Graph(model_bytes)
    if len(graph.inputs) != 1 or len(graph.outputs) != 1:
        raise CKernelUnsupported("C kernel runs single-input single-output models")
    t_in, t_out = graph.t(graph.inputs[0]), graph.t(graph.outputs[0])
    if t_in["dtype"] != "int8" or t_out["dtype"] != "int8":
        raise CKernelUnsupported("C kernel needs int8 model input and output (got %s -> %s)"
                                 % (t_in["dtype"], t_out["dtype"]))
    cur = graph.inputs[0]
    decls, calls = [], []
    max_buf = 0
    flash_const_bytes = 0
    steps = [layer for layer in graph.layers]
    for k, layer in enumerate(steps):
        if layer.op not in C_OPS:
            raise CKernelUnsupported("operator %s is not supported by the C kernel (supported: %s)"
                                     % (layer.op, ", ".join(C_OPS)))
        if layer.src != cur:
            raise CKernelUnsupported("C kernel needs a chain of operators (op %d reads tensor %d, "
                                     "previous output is %d)" % (k, layer.src, cur))
        cur = layer.dst
    if cur != graph.outputs[0]:
        raise CKernelUnsupported("the last operator does not write the model output")
    for layer in steps:                 # the kernel's lengths are uint16_t: a larger one would wrap
        if layer.op == "RESHAPE":         # not emitted
            continue
        sizes = ((layer.n_in, layer.n_out) if layer.op == "FULLY_CONNECTED"
                 else (tensor_size(graph.t(layer.dst)),))
        if max(sizes) > C_MAX_LENGTH:
            raise CKernelUnsupported("operator %s has a length of %d; the C kernel's lengths are at most %d"
                                     % (layer.op, max(sizes), C_MAX_LENGTH))

    # Ping-pong buffers: op k reads the previous buffer and writes the other one; the
    # first op reads `in`, the last writes `out`.
    compute = [layer for layer in steps if layer.op != "RESHAPE"]
    src = "in"
    for k, layer in enumerate(compute):
        dst = "out" if k == len(compute) - 1 else ("pi8_buf_a" if src != "pi8_buf_a" else "pi8_buf_b")
        if layer.op == "FULLY_CONNECTED":
            w = [v for row in layer.rows for v in row]
            decls.append(_array("int8_t", "L%d_W" % k, w, 20))
            decls.append(_array_i32("L%d_B" % k, layer.folded_bias))
            decls.append(_array_i32("L%d_M" % k, [m for m, _ in layer.multipliers]))
            decls.append(_array("int8_t", "L%d_S" % k, [s for _, s in layer.multipliers]))
            flash_const_bytes += len(w) + 9 * layer.n_out
            calls.append("    pi8_fully_connected(%s, %s, %d, %d, L%d_W, L%d_B, L%d_M, L%d_S, %d, %d, %d);"
                         % (src, dst, layer.n_in, layer.n_out, k, k, k, k, layer.out_zp,
                            layer.act_min, layer.act_max))
            n = layer.n_out
        else:   # TANH / LOGISTIC
            decls.append(_array("int8_t", "L%d_LUT" % k, layer.table))
            flash_const_bytes += 256
            n = tensor_size(graph.t(layer.dst))
            calls.append("    pi8_lut(%s, %s, %d, L%d_LUT);" % (src, dst, n, k))
        if dst.startswith("pi8_buf"):
            max_buf = max(max_buf, n)
        src = dst
    if not compute:                     # RESHAPEs alone (or no operator): the output is the input's bytes
        calls.append("    memcpy(out, in, PI8_MODEL_INPUT_SIZE);")
    n_in = graph.input_sizes[0]
    n_out = 1
    for d in t_out["shape"]:
        n_out *= d
    guard = "PI8_MODEL_H"
    header = """/* Generated by harness/training/c_kernel.py from %(name)s -- do not edit. */
#ifndef %(guard)s
#define %(guard)s
#include <stdint.h>
#define PI8_MODEL_INPUT_SIZE %(n_in)d
#define PI8_MODEL_OUTPUT_SIZE %(n_out)d
/* Input quantization: q = round(x_model / %(in_scale).9g) + %(in_zp)d, clamped to [-128, 127].
   Output: y = %(out_scale).9g * (q - %(out_zp)d). */
#define PI8_MODEL_INPUT_ZERO_POINT %(in_zp)d
#define PI8_MODEL_OUTPUT_ZERO_POINT %(out_zp)d
void pi8_model_invoke(const int8_t *in, int8_t *out);
#ifndef __AVR__
void pi8_model_invoke_batch(const int8_t *in, int8_t *out, int32_t n);
#endif
#endif
""" % {"name": name, "guard": guard, "n_in": n_in, "n_out": n_out,
       "in_scale": t_in["scales"][0], "in_zp": t_in["zero_points"][0],
       "out_scale": t_out["scales"][0], "out_zp": t_out["zero_points"][0]}
    source = """/* Generated by harness/training/c_kernel.py from %(name)s -- do not edit.
   Operators: %(ops)s. */
%(includes)s#include "policy_int8.h"
#include "model.h"

%(decls)s
static int8_t pi8_buf_a[%(buf)d];
static int8_t pi8_buf_b[%(buf)d];

void pi8_model_invoke(const int8_t *in, int8_t *out) {
    (void)pi8_buf_a;
    (void)pi8_buf_b;
%(calls)s
}

#ifndef __AVR__
void pi8_model_invoke_batch(const int8_t *in, int8_t *out, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        pi8_model_invoke(in + i * PI8_MODEL_INPUT_SIZE, out + i * PI8_MODEL_OUTPUT_SIZE);
    }
}
#endif
""" % {"name": name, "ops": ", ".join(layer.op for layer in steps) or "none", "decls": "\n".join(decls),
       "includes": "" if compute else "#include <string.h>\n",
       "buf": max(max_buf, 1), "calls": "\n".join(calls)}
    info = {"n_in": n_in, "n_out": n_out, "macs": graph.macs, "arena_bytes": 2 * max(max_buf, 1),
            "const_bytes": flash_const_bytes}
    return source, header, info


def write_generated(model_bytes, out_dir, name="model", vectors=None):
    """Write model.c, model.h (and vectors.h when ``vectors`` [n, n_in] int8 is given), each whole
    (``write_whole``: a temporary file renamed), so a compiler reading them while another process (a second
    test worker building the same model into the same folder) writes them sees a complete file, never a
    truncated one."""
    from harness.report.run_report import write_whole
    source, header, info = generate_c(model_bytes, name)
    os.makedirs(out_dir, exist_ok=True)
    write_whole(os.path.join(out_dir, "model.c"), source)
    write_whole(os.path.join(out_dir, "model.h"), header)
    if vectors is not None:
        vectors = np.asarray(vectors, dtype=np.int64)
        rows = ["    {" + ", ".join(str(int(v)) for v in row) + "}," for row in vectors]
        write_whole(os.path.join(out_dir, "vectors.h"),
                    "/* Generated test vectors (int8 model inputs) -- do not edit. */\n"
                    "#include <avr/pgmspace.h>\n#include \"model.h\"\n"
                    "#define PI8_N_VECTORS %d\n"
                    "static const int8_t pi8_vectors[%d][PI8_MODEL_INPUT_SIZE] PROGMEM = {\n%s\n};\n"
                    % (len(vectors), len(vectors), "\n".join(rows)))
    return info


def _digest(model_bytes, extra=""):
    h = hashlib.sha256(model_bytes)
    for fn in ("policy_int8.c", "policy_int8.h", "avr_bench.c", "Makefile"):
        with open(os.path.join(KERNEL_DIR, fn), "rb") as fh:
            h.update(fh.read())
    h.update(extra.encode())
    return h.hexdigest()[:16]


def build_host_library(model_bytes, build_root=BUILD_ROOT):
    """Compile the generated C + kernel with the host gcc into a shared library; returns its path. The
    library is kept under a digest of the model, the kernel's sources and the generated model.c / model.h,
    so a change of the generator (or of the preparation code it takes its numbers from) builds a new one.
    RuntimeError (with the compiler's first lines) when gcc fails."""
    if shutil.which("gcc") is None:
        raise RuntimeError("gcc is not installed (needed for the host build of the C kernel)")
    source, header, _ = generate_c(model_bytes)
    out_dir = os.path.join(build_root, "host-" + _digest(model_bytes, source + header))
    lib = os.path.join(out_dir, "libpi8model.so")
    if os.path.exists(lib):
        return lib
    write_generated(model_bytes, out_dir)
    tmp = lib + ".%d.tmp" % os.getpid()
    try:
        subprocess.run(["gcc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                        "-I", KERNEL_DIR, "-I", out_dir, os.path.join(KERNEL_DIR, "policy_int8.c"),
                        os.path.join(out_dir, "model.c"), "-o", tmp],
                       check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        lines = [line for line in (exc.stderr or "").splitlines() if line.strip()][:3]
        raise RuntimeError("the host build of the generated C failed (gcc exit %d): %s"
                           % (exc.returncode, " / ".join(lines) or "no message"))
    os.replace(tmp, lib)
    return lib


class HostCPolicy(Policy):
    """The AVR C kernel compiled for this host (gcc) and called through ctypes."""
    backend = "c-host"

    def __init__(self, model_bytes, card=None):
        Policy.__init__(self, model_bytes, card)
        _, _, self.c_info = generate_c(model_bytes)   # refuses unsupported models up front
        self.lib = ctypes.CDLL(build_host_library(model_bytes))
        self.lib.pi8_model_invoke.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.pi8_model_invoke_batch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32]
        self._in_buf = (ctypes.c_int8 * self.c_info["n_in"])()
        self._out_buf = (ctypes.c_int8 * self.c_info["n_out"])()

    def _run(self, inputs):
        for i, v in enumerate(inputs[0]):
            self._in_buf[i] = v
        self.lib.pi8_model_invoke(self._in_buf, self._out_buf)
        return [list(self._out_buf)]

    def run_batch_q(self, x_q):
        """int8 [n, n_in] -> int8 [n, n_out] in one C call. ``InputError`` when ``x_q`` is not an [n, n_in]
        array of whole numbers in [-128, 127] (the C code reads n * n_in bytes: a narrower array would be
        read past its end, and a value outside int8 would wrap)."""
        x = np.asarray(x_q)
        if x.ndim != 2 or x.shape[1] != self.c_info["n_in"]:
            raise InputError("run_batch_q needs an [n, %d] array, got shape %r" % (self.c_info["n_in"], x.shape))
        if x.size and (x.dtype.kind not in "iu" or x.min() < INT8_MIN or x.max() > INT8_MAX):
            raise InputError("run_batch_q needs whole numbers in [%d, %d] (dtype %s, values %r .. %r)"
                             % (INT8_MIN, INT8_MAX, x.dtype, x.min(), x.max()))
        x = np.ascontiguousarray(x, dtype=np.int8)
        out = np.zeros((x.shape[0], self.c_info["n_out"]), dtype=np.int8)
        self.lib.pi8_model_invoke_batch(x.ctypes.data, out.ctypes.data, x.shape[0])
        return out


def build_avr(model_bytes, vectors, plain_c=False, build_root=BUILD_ROOT):
    """Build the ATmega328P test-vector firmware; returns (elf path, avr-size dict)."""
    for tool in ("avr-gcc", "avr-size", "make"):
        if shutil.which(tool) is None:
            raise RuntimeError("%s is not installed (make setup installs gcc-avr, avr-libc)" % tool)
    vectors = np.asarray(vectors, dtype=np.int64)
    tag = _digest(model_bytes, "%s%r" % (plain_c, vectors.tobytes()))
    out_dir = os.path.join(build_root, "avr-" + tag)
    write_generated(model_bytes, out_dir, vectors=vectors)
    cmd = ["make", "-s", "-C", KERNEL_DIR, "GEN=" + out_dir]
    if plain_c:
        cmd.append("PLAIN_C=1")
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return os.path.join(out_dir, "policy_bench.elf"), parse_avr_size(os.path.join(out_dir, "size.txt"))


def parse_avr_size(path):
    """{'flash_bytes', 'ram_bytes'} from ``avr-size --format=avr`` output."""
    with open(path) as fh:
        text = fh.read()
    prog = re.search(r"Program:\s+(\d+) bytes", text)
    data = re.search(r"Data:\s+(\d+) bytes", text)
    if not prog or not data:
        raise RuntimeError("cannot parse avr-size output:\n" + text)
    return {"flash_bytes": int(prog.group(1)), "ram_bytes": int(data.group(1))}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_simavr(elf, n_vectors, n_out, timeout_s=120):
    """Run the firmware in simavr; returns (outputs int8 [n, n_out], cycles per vector list)."""
    if shutil.which("simavr") is None:
        raise RuntimeError("simavr is not installed (make setup)")
    proc = subprocess.run(["simavr", "-m", "atmega328p", "-f", str(AVR_F_CPU_HZ), elf],
                          capture_output=True, text=True, timeout=timeout_s)
    text = _ANSI.sub("", proc.stdout + proc.stderr)
    outputs, cycles = {}, []
    done = False
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("."):        # simavr shows the UART's newline as '.'
            line = line[:-1]
        if line.startswith("V "):
            _, idx, hexs = line.split(" ", 2)
            raw = bytes.fromhex(hexs)
            outputs[int(idx)] = [b - 256 if b > 127 else b for b in raw]
        elif line.startswith("C "):
            cycles.append(int(line[2:]))
        elif line == "DONE":
            done = True
    if not done or len(outputs) != n_vectors:
        raise RuntimeError("simavr run incomplete (%d of %d vectors, DONE=%s):\n%s"
                           % (len(outputs), n_vectors, done, text[-2000:]))
    out = np.array([outputs[i] for i in range(n_vectors)], dtype=np.int8).reshape(n_vectors, n_out)
    return out, cycles
