"""The Cython particle-filter kernels' bounds checks hold for any sizes: ``refresh`` with a start and count whose sum
or triple wraps around in C (``start + count`` = 2**63) refuses with its ValueError and writes nothing, where it
used to pass the checks and write at ``xs[2**62]`` (run in a child interpreter: that crashes it). The pure kernel
never writes there either (IndexError at its first slot)."""
import subprocess
import sys

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf

pytestmark = pytest.mark.skipif("cython" not in impl_switch.available(pf.KERNEL_MODULES),
                                reason="cython_ext.pf_kernels not built (make setup)")

CHILD = """
import numpy as np
from cython_ext import pf_kernels as k
xs, ys, yaws, noise = np.zeros(4), np.zeros(4), np.zeros(4), np.ones(12)
for start, count in ((1 << 62, 1 << 62), (2, (1 << 63) - 1), ((1 << 63) - 1, 1), (3, (1 << 62) + 1), (0, 5)):
    try:
        k.refresh(xs, ys, yaws, start, count, 2.0, 0.1, 0.2, 0.1, 0.1, 0.1, noise)
    except ValueError as exc:
        print("refused", start, count, exc)
    else:
        print("wrote", start, count)
print("untouched", not (xs.any() or ys.any() or yaws.any()))
"""


def test_refresh_refuses_sizes_whose_sum_wraps_in_c():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert len(lines) == 6 and all(line.startswith("refused ") for line in lines[:5]), lines
    assert lines[5] == "untouched True"


def test_the_pure_kernel_writes_nothing_for_the_same_sizes():
    xs, ys, yaws = [0.0] * 4, [0.0] * 4, [0.0] * 4
    with pytest.raises(IndexError):
        pf.refresh(xs, ys, yaws, 1 << 62, 1 << 62, 2.0, 0.1, 0.2, 0.1, 0.1, 0.1, [1.0] * 12)
    assert xs == ys == yaws == [0.0] * 4


def test_refresh_in_range_is_the_pure_kernel():
    from cython_ext import pf_kernels as k
    noise = [0.3, -1.2, 0.7, 2.0, 0.1, -0.4]
    want = [[0.0] * 5 for _ in range(3)]
    pf.refresh(want[0], want[1], want[2], 3, 2, 2.0, 0.1, 0.2, 0.1, 0.1, 0.1, noise)
    got = [np.zeros(5) for _ in range(3)]
    k.refresh(got[0], got[1], got[2], 3, 2, 2.0, 0.1, 0.2, 0.1, 0.1, 0.1, np.array(noise))
    assert [list(a) for a in got] == want
    with pytest.raises(ValueError):
        k.refresh(got[0], got[1], got[2], 4, 2, 2.0, 0.1, 0.2, 0.1, 0.1, 0.1, np.array(noise))
