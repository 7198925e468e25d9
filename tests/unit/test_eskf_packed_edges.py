"""ESKF packed IMU queues at the edges, every implementation against the pure one: a sample count or a slot that
does not fit the buffer (huge ints included), and buffers that are not one flat run of doubles (a 2-D or strided
NumPy array, a read-only one) give the pure code's answer (the same refusal, class and message, the filter and the
buffer untouched; or the same samples read).

Before, on the Cython build: ``predict_packed(buf, 2**62)`` passed the bounds check (``count * 8`` wrapped to 0 in C)
and read rows past the end of the buffer, running the buffer's samples and then failing with IndexError; a count
beyond Py_ssize_t raised OverflowError; a 2-D array was read flat (the pure code refuses it: ``len`` is its rows);
a strided array raised NumPy's ValueError from the buffer request; ``pack_imu(buf, 2**61 + 1, s)`` wrote slot 1 of a
two-slot buffer (the pure function raises IndexError) and a slot beyond Py_ssize_t raised OverflowError."""
from array import array

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample
from onboard.estimators.eskf import IMPL_MODULES, make_eskf
from onboard.estimators.eskf_packed import IMU_STRIDE, pack_imu

IMPLS = impl_switch.available(IMPL_MODULES)
G = 9.80665


def _imu(k):
    return ImuSample(1000 * k, 1000, (0.001 * k, 0.0, -G * 0.001), (0.0, 0.0001, 0.00002 * k))


def _buffer(n):
    buf = array("d", [0.0] * (IMU_STRIDE * n))
    for k in range(n):
        pack_imu(buf, k, _imu(k + 1))
    return buf


def _fresh(impl):
    f = make_eskf(impl=impl)
    f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    return f


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - the outcome itself is compared
        return (type(exc).__name__, str(exc))


def _same_as_pure(impl, run):
    """run(filter) on a fresh filter of ``impl`` and of the pure build: the same outcome and final state."""
    got = []
    for path in ("pure", impl):
        f = _fresh(path)
        out = _outcome(lambda: run(f))
        state = f.get_state()
        if path == "numpy":        # sums its matrix products in another order (test_eskf_impls: 1e-8)
            state.pop("P")
        got.append((out, state))
    if impl == "numpy":
        got[0][1].pop("P")
    assert got[1] == got[0]
    return got[0]


COUNTS = [1 << 62, (1 << 61) + 1, 1 << 70, -(1 << 70), -1, 3, 2, np.int64(2), True, 2.0, None]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("count", COUNTS, ids=repr)
def test_any_count_gives_the_pure_answer(impl, count):
    (out, state) = _same_as_pure(impl, lambda f: f.predict_packed(_buffer(2), count))
    if isinstance(count, int) and not 0 <= count <= 2:
        assert out[0] == "EskfInputError" and state["predicts"] == 0 and state["time_us"] == 0


BUFFERS = {
    "2-D array": lambda: np.frombuffer(_buffer(2), dtype=np.float64).reshape(2, IMU_STRIDE).copy(),
    "strided array": lambda: np.repeat(np.frombuffer(_buffer(2), dtype=np.float64), 2)[::2],
    "read-only array": lambda: _read_only(np.frombuffer(_buffer(2), dtype=np.float64).copy()),
    "float32 array": lambda: np.frombuffer(_buffer(2), dtype=np.float64).astype(np.float32),
}


def _read_only(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", sorted(BUFFERS))
def test_buffers_that_are_not_flat_doubles_give_the_pure_answer(impl, kind):
    _same_as_pure(impl, lambda f: f.predict_packed(BUFFERS[kind](), 2))
    _same_as_pure(impl, lambda f: f.predict_packed(BUFFERS[kind](), 1))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("k", [(1 << 61) + 1, 1 << 61, 1 << 70, -(1 << 70), 2, -1, 1, np.int64(1), True],
                         ids=repr)
def test_pack_imu_at_any_slot_gives_the_pure_answer(impl, k):
    want_buf, got_buf = _buffer(2), _buffer(2)
    want = _outcome(lambda: pack_imu(want_buf, k, _imu(9)))
    got = _outcome(lambda: make_eskf(impl=impl).pack_imu(got_buf, k, _imu(9)))
    assert got == want and got_buf == want_buf
    if isinstance(k, int) and not 0 <= k <= 1:
        assert want[0] == "IndexError" and want_buf == _buffer(2)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ["strided array", "read-only array", "2-D array"])
def test_pack_imu_into_buffers_that_are_not_flat_doubles_gives_the_pure_answer(impl, kind):
    want_buf, got_buf = BUFFERS[kind](), BUFFERS[kind]()
    want = _outcome(lambda: pack_imu(want_buf, 1, _imu(9)))
    got = _outcome(lambda: make_eskf(impl=impl).pack_imu(got_buf, 1, _imu(9)))
    assert got[0] == want[0] and np.array_equal(got_buf, want_buf)
