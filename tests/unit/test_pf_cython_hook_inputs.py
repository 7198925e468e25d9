"""The Cython particle filter's state hooks refuse what would take its kernels outside the particle arrays:
``_resample(n_new, ...)`` with n_new outside 0..n-1 is a ValueError with nothing drawn or changed (it wrote
before and past the arrays: heap corruption, run in a child interpreter), and the ``time_us`` setter converts
its value before it changes anything (an int too large for a C time left ``time_us`` at 0 instead of None).
A filter whose ``__init__`` never ran (``__new__``, or a copy of one) has no particle arrays: its estimate, spread
and prediction are a RuntimeError (they dereferenced NULL: segfault), and ``__setstate__`` refuses a state with
only some of the arrays."""
import subprocess
import sys

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws

pytestmark = pytest.mark.skipif("cython" not in impl_switch.available(pf.KERNEL_MODULES),
                                reason="cython_ext.pf_kernels not built (make setup)")

CHILD = """
import numpy as np
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws
f = pf.make_filter({"n_particles": 8}, kernels=pf.kernels_for("cython"))
d = NumpyDraws(np.random.default_rng(1))
f.initialize(0, 2.0, d, learned=(0.3, 0.1))
before = (list(f.xs), list(f.ys), list(f.yaws), list(f.lws), d.get_state()["state"])
for n_new in (8, 20, -1, -5, 1 << 40):
    try:
        f._resample(n_new, 2.0, (0.1, 0.2), d)
    except ValueError:
        print("refused", n_new)
    else:
        print("taken", n_new)
print("unchanged", (list(f.xs), list(f.ys), list(f.yaws), list(f.lws), d.get_state()["state"]) == before)
"""


def test_resample_refuses_a_refresh_count_outside_the_particles():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:6] == ["refused 8", "refused 20", "refused -1", "refused -5",
                                          "refused 1099511627776", "unchanged True"]


def test_resample_in_range_is_the_pure_filter():
    draws = [NumpyDraws(np.random.default_rng(4)) for _ in range(2)]
    filters = [pf.make_filter({"n_particles": 8}, kernels=k) for k in (pf.PURE, pf.kernels_for("cython"))]
    for f, d in zip(filters, draws):
        f.initialize(0, 2.0, d, learned=(0.3, 0.1))
        f.step(100000, (0.1, 0.0), (0.0, 0.2), 2.1, d)
        f._resample(7, 2.0, (0.1, 0.2), d)
    assert [list(filters[1].xs), list(filters[1].yaws)] == [list(filters[0].xs), list(filters[0].yaws)]


def test_time_setter_refuses_before_it_changes_anything():
    f = pf.make_filter({"n_particles": 8}, kernels=pf.kernels_for("cython"))
    assert f.time_us is None
    with pytest.raises(OverflowError):
        f.time_us = 1 << 64
    assert f.time_us is None
    f.initialize(500, 2.0, NumpyDraws(np.random.default_rng(1)))
    with pytest.raises(OverflowError):
        f.time_us = -(1 << 64)
    assert f.time_us == 500


UNINIT_CHILD = """
import copy
import numpy as np
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws
k = pf.kernels_for("cython")
f = k.ParticleFilter.__new__(k.ParticleFilter)
d = NumpyDraws(np.random.default_rng(0))
calls = [lambda: f.est, lambda: f._spread_m(), lambda: f._predict(0.1, 0.0, 0.0, 0.0, 0.0, None, d, 0.1, 0.1),
         lambda: f._resample(1, 2.0, (0.1, 0.2), d), lambda: copy.deepcopy(f).est]
for call in calls:
    try:
        call()
    except RuntimeError:
        print("refused")
    else:
        print("taken")
g = pf.make_filter({"n_particles": 4}, kernels=k)
fields, inst, name = g.__reduce__()[2]
fields = list(fields)
fields[21] = (None,) + tuple(fields[21][1:])
h = k.ParticleFilter.__new__(k.ParticleFilter)
try:
    h.__setstate__((tuple(fields), inst, name))
except ValueError:
    print("refused state")
try:
    h.est
except RuntimeError:
    print("still without arrays")
"""


def test_a_filter_without_arrays_refuses_in_a_child():
    out = subprocess.run([sys.executable, "-c", UNINIT_CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:7] == ["refused"] * 5 + ["refused state", "still without arrays"]
