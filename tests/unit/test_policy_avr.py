"""AVR C kernel in simavr (ATmega328P, 16 MHz): bit-exact with LiteRT on vectors baked into flash,
>= 50 inferences/s, fits the chip; the plain-C build agrees too (only slower)."""
import os
import shutil

import numpy as np
import pytest

from harness.training.c_kernel import AVR_F_CPU_HZ, build_avr, run_simavr
from harness.training.fixtures import chain_model
from onboard.policy.policy import load_model_dir, make_policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DQN_DIR = os.path.join(REPO, "models", "pocket-dqn")
FLASH_BYTES = 32 * 1024
RAM_BYTES = 2 * 1024


@pytest.fixture(scope="module", autouse=True)
def _toolchain():
    missing = [t for t in ("avr-gcc", "avr-size", "simavr") if shutil.which(t) is None]
    if missing:
        pytest.fail("missing %s: run `make setup` (gcc-avr, avr-libc, simavr)" % ", ".join(missing))


def _vectors(n_in, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, n_in))
    x[0] = 127
    x[1] = -128
    x[2] = 0
    x[3:8] = rng.choice([-128, 127], (5, n_in))
    return x


def test_dqn_on_avr_bit_exact_fast_enough_and_fits():
    data, card = load_model_dir(DQN_DIR)
    x = _vectors(7, 48, 1)
    elf, size = build_avr(data, x)
    out, cycles = run_simavr(elf, len(x), 9)
    ref = make_policy(data, card, "litert").run_batch_q(x)
    assert np.array_equal(out, ref)
    per_s = AVR_F_CPU_HZ / max(cycles)
    assert per_s >= 50.0, "%.1f inferences/s (%d cycles)" % (per_s, max(cycles))
    assert size["flash_bytes"] < FLASH_BYTES and size["ram_bytes"] < RAM_BYTES


@pytest.mark.parametrize("plain_c", [False, True])
@pytest.mark.parametrize("lut", [None, "TANH", "LOGISTIC"])
def test_chain_models_on_avr_bit_exact(plain_c, lut):
    data = chain_model("RELU6", lut, per_channel=not plain_c, last_activation="RELU_N1_TO_1")
    x = _vectors(7, 24, 2)
    elf, _ = build_avr(data, x, plain_c=plain_c)
    out, _ = run_simavr(elf, len(x), 5)
    assert np.array_equal(out, make_policy(data, None, "litert").run_batch_q(x))
