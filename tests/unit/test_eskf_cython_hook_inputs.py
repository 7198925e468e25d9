"""The Cython ES-EKF's state hooks and setters read every argument before they change anything: a sequence of
the wrong length is an EskfInputError (the kernel is compiled without bounds checks: a short list handed to
``_set_nominal`` read past its end and crashed the interpreter), an out-of-range state index an IndexError
(``_set_variance(100, v)`` wrote far outside P), a value that is no number a TypeError with P unchanged (the P
setter stopped part-way), and an int too large for a C time an OverflowError with ``last_imu_us`` unchanged.
Crash cases run in a child interpreter."""
import subprocess
import sys

import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError, make_eskf

pytestmark = pytest.mark.skipif("cython" not in impl_switch.available(IMPL_MODULES),
                                reason="cython_ext.eskf not built (make setup)")

CHILD = """
from cython_ext import eskf as ce
k = ce.Eskf()
k.initialize(0, (1.0, 2.0, 3.0), (0.0, 0.0, 0.0), (0.1, 0.2, 0.3))
before = (k._nominal(), k.P)
calls = [lambda: k._set_nominal([1.0, 2.0], [0.0] * 3, [1.0] * 9, [0.0] * 3, [0.0] * 3),
         lambda: k._set_nominal([1.0] * 3, [0.0] * 3, [1.0] * 4, [0.0] * 3, []),
         lambda: k._reset_nominal((1.0,), (0.0,) * 3, (0.0,) * 3, (0.0,) * 3, (0.0,) * 3),
         lambda: k._step(0.01, (0.0,), (0.0, 0.0, 0.0)),
         lambda: k._fuse((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), [1.0] * 2),
         lambda: k._set_variance(100, 5.0),
         lambda: k._set_variance(-1, 5.0),
         lambda: k._set_variance(15, 5.0)]
for call in calls:
    try:
        call()
    except Exception as exc:
        print("refused", type(exc).__name__)
    else:
        print("taken")
print("unchanged", (k._nominal(), k.P) == before)
"""


def test_short_arguments_and_bad_indexes_are_refused_in_a_child():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:9] == ["refused EskfInputError"] * 5 + ["refused IndexError"] * 3 + ["unchanged True"]


def _filter():
    f = make_eskf(impl="cython")
    f.initialize(0, (1.0, 2.0, 3.0), (0.0, 0.0, 0.0), (0.1, 0.2, 0.3))
    f.predict(ImuSample(1000, 1000, (0.001, 0.0, -0.0098), (0.0, 0.0001, 0.0)))
    return f


def test_p_setter_reads_all_values_before_it_writes():
    f = _filter()
    before = f.P
    with pytest.raises(TypeError):
        f.P = [1.0] * 100 + ["x"] + [1.0] * 124
    with pytest.raises(EskfInputError, match="P needs 225 values, got 224"):
        f.P = [1.0] * 224
    assert f.P == before
    f.P = [float(i) for i in range(225)]
    assert f.P == [float(i) for i in range(225)]


def test_nominal_setter_with_a_bad_value_changes_nothing():
    f = _filter()
    before = f.get_state()
    with pytest.raises(TypeError):
        f._set_nominal((9.0, 9.0, 9.0), (9.0, 9.0, 9.0), (1.0,) * 9, (0.0, 0.0, 0.0), (0.0, None, 0.0))
    assert f.get_state() == before
    f._set_nominal((9.0, 8.0, 7.0), (1.0, 2.0, 3.0), tuple(range(9)), (0.5, 0.5, 0.5), (0.1, 0.2, 0.3))
    assert f._nominal() == ((9.0, 8.0, 7.0), (1.0, 2.0, 3.0), tuple(float(i) for i in range(9)),
                            (0.5, 0.5, 0.5), (0.1, 0.2, 0.3))


def test_last_imu_us_setter_refuses_before_it_changes_anything():
    f = _filter()
    assert f.last_imu_us == 1000
    with pytest.raises(OverflowError):
        f.last_imu_us = 1 << 70
    assert f.last_imu_us == 1000
    f.last_imu_us = None
    with pytest.raises(OverflowError):
        f.last_imu_us = -(1 << 70)
    assert f.last_imu_us is None          # not 0: the flag is set only with a value
