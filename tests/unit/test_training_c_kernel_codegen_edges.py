"""The C kernel generator (``c_kernel.generate_c`` / ``build_host_library``) on edge models: a model whose
operators are RESHAPEs alone (or that has none) copies its input to its output, as the pure kernel does (the
generated ``pi8_model_invoke`` wrote nothing: gcc -Werror refused the unused parameters on the host, the AVR
build returned whatever was in ``out``); a vector longer than the kernel's uint16_t lengths is refused
(70000 inputs were passed as 70000 and wrapped to 4464 in C); the host library is cached under a digest of
the generated code too (a change of the generator reused the library built from the old code); a failing
gcc is a RuntimeError that ``policy check`` reports, not a CalledProcessError traceback."""
import shutil
import subprocess

import numpy as np
import pytest

from harness.training import c_kernel
from harness.training.fixtures import chain_model
from harness.training.tflite_builder import TfliteBuilder
from onboard.policy.policy import make_policy

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc needed for the host build of the C kernel")


def _reshape_only():
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 4], "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", [2, 2], "int8", scale=0.1, zero_point=0)
    b.add_op("RESHAPE", [x], [y], new_shape=[2, 2])
    return b.finish([x], [y])


def _no_operator():
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 5], "int8", scale=0.1, zero_point=3)
    return b.finish([x], [x])


@needs_gcc
@pytest.mark.parametrize("make", [_reshape_only, _no_operator])
def test_a_model_without_compute_operators_copies_its_input(make):
    data = make()
    pure = make_policy(data, None, "pure")
    policy = c_kernel.HostCPolicy(data)
    rows = np.random.default_rng(4).integers(-128, 128, (5, pure.inputs[0]["size"]))
    for row in rows:
        assert policy.run([row.tolist()]) == pure.run([row.tolist()]) == [row.tolist()]
    assert np.array_equal(policy.run_batch_q(rows), rows)


@pytest.mark.parametrize("n_in,n_out", [(70000, 1), (65536, 2)])
def test_a_vector_longer_than_the_kernels_uint16_lengths_is_refused(n_in, n_out):
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, n_in], "int8", scale=0.1, zero_point=0)
    w = b.add_tensor("w", [n_out, n_in], "int8", data=np.ones((n_out, n_in), dtype=np.int8), scale=0.01)
    bias = b.add_tensor("b", [n_out], "int32", data=np.zeros(n_out, dtype=np.int32), scale=0.001)
    y = b.add_tensor("y", [1, n_out], "int8", scale=10.0, zero_point=0)
    b.add_op("FULLY_CONNECTED", [x, w, bias], [y])
    with pytest.raises(c_kernel.CKernelUnsupported, match="at most 65535"):
        c_kernel.generate_c(b.finish([x], [y]))


def test_a_lut_longer_than_the_kernels_uint16_length_is_refused():
    b = TfliteBuilder()
    x = b.add_tensor("x", [1, 70000], "int8", scale=0.1, zero_point=0)
    y = b.add_tensor("y", [1, 70000], "int8", scale=1.0 / 128, zero_point=0)
    b.add_op("TANH", [x], [y])
    with pytest.raises(c_kernel.CKernelUnsupported, match="TANH has a length of 70000"):
        c_kernel.generate_c(b.finish([x], [y]))


@needs_gcc
def test_the_host_library_is_rebuilt_when_the_generated_code_changes(tmp_path, monkeypatch):
    data = chain_model()
    first = c_kernel.build_host_library(data, str(tmp_path))
    assert c_kernel.build_host_library(data, str(tmp_path)) == first          # cached
    real = c_kernel.generate_c

    def edited_generator(model_bytes, name="model"):                        # stands for an edit of the generator
        source, header, info = real(model_bytes, name)
        return source + "/* generator changed */\n", header, info
    monkeypatch.setattr(c_kernel, "generate_c", edited_generator)
    second = c_kernel.build_host_library(data, str(tmp_path))
    assert second != first
    with open(second.replace("libpi8model.so", "model.c")) as fh:
        assert "generator changed" in fh.read()


@needs_gcc
def test_a_failing_compile_is_a_runtime_error(tmp_path, monkeypatch):
    real = c_kernel.generate_c

    def broken_generator(model_bytes, name="model"):
        source, header, info = real(model_bytes, name)
        return source + "this is not C;\n", header, info
    monkeypatch.setattr(c_kernel, "generate_c", broken_generator)
    with pytest.raises(RuntimeError, match=r"host build of the generated C failed \(gcc exit 1\)") as err:
        c_kernel.build_host_library(chain_model(), str(tmp_path))
    assert not isinstance(err.value, subprocess.CalledProcessError)


@pytest.mark.skipif(any(shutil.which(t) is None for t in ("avr-gcc", "avr-size", "make", "simavr")),
                    reason="avr-gcc, avr-libc and simavr needed for the AVR build")
def test_a_model_without_compute_operators_copies_its_input_on_avr(tmp_path):
    data = _reshape_only()
    x = np.random.default_rng(1).integers(-128, 128, (3, 4))
    elf, _ = c_kernel.build_avr(data, x, build_root=str(tmp_path))
    out, _ = c_kernel.run_simavr(elf, 3, 4, timeout_s=60)
    assert np.array_equal(out, x)
