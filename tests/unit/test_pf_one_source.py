"""Particle filter, one source: the Cython build is the pure class over a kernel type (no second copy).

cython_ext/pf_kernels.pyx holds the numeric kernels and :class:`PfKernel`, the particles in C arrays behind
the pure class's state hooks; configuration, input checks, initialisation, the cycle's decisions, state
access and counters are onboard/estimators/particle_filter.py's code. These tests pin that layout and that
the kernel's fast input path and the pure checks give the same filter, bit for bit.
"""
import math
import os
import re

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYX = os.path.join(REPO, "cython_ext", "pf_kernels.pyx")
PURE_MODULES = [os.path.join(REPO, "onboard", "estimators", name)
                for name in ("particle_filter.py", "particle_filter_numpy.py")]
# what the kernel type may define: the pure class's state hooks, the hot entry point and the state it holds
KERNEL_HOOKS = {"_setup_state", "_spawn", "_predict", "_resample", "_spread_m", "step",
                "xs", "ys", "yaws", "ws", "lws", "est", "time_us"}
# the numeric kernels, the only places a run of lines may repeat the pure module's
NUMERIC_KERNELS = {"_predict_weight", "_resample", "_refresh", "_init_ring", "_weighted_spread", "_wrap_pi",
                   "predict_weight", "resample", "refresh", "init_ring", "weighted_spread"}
WINDOW = 6


def _cython():
    if "cython" not in impl_switch.available(pf.KERNEL_MODULES):
        pytest.fail("cython_ext.pf_kernels missing (run `make setup` to build cython_ext)")
    return pf.kernels_for("cython")


def test_the_cython_filter_is_the_pure_class_over_a_kernel_type():
    k = _cython()
    cls = k.filter_class
    assert cls.__mro__[1:] == (k.PfKernel, pf.ParticleFilter, object)
    own = {name for name in vars(k.PfKernel) if not (name.startswith("__") and name.endswith("__"))}
    pure_attributes = set(vars(pf.ParticleFilter({"n_particles": 2})))
    assert own <= KERNEL_HOOKS | pure_attributes, own - KERNEL_HOOKS - pure_attributes
    # besides the hooks, only slots for the pure class's own attributes (settings it derives, counters)
    assert not [name for name in own - KERNEL_HOOKS if callable(getattr(k.PfKernel, name))]
    for name in ("__init__", "initialize", "_cycle", "_restart", "_refresh_count", "estimate", "neff",
                 "_check_vel", "_check_range", "_check_learned"):
        assert getattr(cls, name) is getattr(pf.ParticleFilter, name), name
    assert set(vars(cls)) <= {"__module__", "__doc__", "__qualname__", "__dict__", "__weakref__"}


def _code_lines(path):
    """(line number, white-space-folded text) of the code lines: blank and comment lines dropped."""
    out = []
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            text = " ".join(line.split())
            if text and not text.startswith("#"):
                out.append((number, text))
    return out


def _enclosing_function(path):
    """line number -> name of the top-level def / cdef function or class holding it."""
    owner, name = {}, None
    with open(path) as fh:
        for number, line in enumerate(fh, 1):
            m = re.match(r"(?:cdef|cpdef|def|class)\b[^(:]*?\b(\w+)\s*[(:]", line)
            if m:
                name = m.group(1)
            elif line.strip() and not line[0].isspace() and not line.startswith(("@", "#", ")")):
                name = None
            owner[number] = name
    return owner


def test_no_run_of_six_lines_is_shared_outside_the_numeric_kernels():
    pyx = _code_lines(PYX)
    owner = _enclosing_function(PYX)
    shared = []
    for path in PURE_MODULES:
        lines = _code_lines(path)
        windows = {tuple(t for _, t in lines[j:j + WINDOW]) for j in range(len(lines) - WINDOW + 1)}
        for i in range(len(pyx) - WINDOW + 1):
            if tuple(t for _, t in pyx[i:i + WINDOW]) in windows:
                shared.append((pyx[i][0], owner[pyx[i][0]], os.path.basename(path)))
    outside = [s for s in shared if s[1] not in NUMERIC_KERNELS]
    assert not outside, "runs shared with the pure modules outside the kernels (pyx line, function, file): %s" % (
        outside,)
    assert {s[1] for s in shared} <= NUMERIC_KERNELS and shared          # the kernels do repeat the arithmetic


def _flight(f, draws, mistyped):
    """A scripted flight with ranges, dropouts and learned estimates; mistyped: the same values as lists and
    ints, which the kernel's fast path leaves to the pure checks."""
    gen = np.random.default_rng(23)
    x, y, yaw = 1.5, -0.8, 0.3
    f.initialize(0, math.hypot(x, y), draws, learned=(math.atan2(y, x), yaw))
    ests = []
    for k in range(60):
        vo = (0.4 * math.cos(0.2 * k), -0.3 * math.sin(0.1 * k))
        vp = (0.25 * math.sin(0.15 * k), 0.3 * math.cos(0.05 * k))
        x += 0.1 * (math.cos(yaw) * vp[0] - math.sin(yaw) * vp[1] - vo[0])
        y += 0.1 * (math.sin(yaw) * vp[0] + math.cos(yaw) * vp[1] - vo[1])
        r = abs(math.hypot(x, y) + gen.normal(pf.UWB_RANGE_BIAS_M, math.sqrt(pf.UWB_RANGE_VAR_M2)))
        learned = (math.atan2(y, x) + gen.normal(0, 0.2), yaw + gen.normal(0, 0.3))
        if 35 <= k < 40:
            r += 4.0 * (k - 34)                         # outliers (refreshed particles miss too): restarts
        if k % 8 == 7:
            r = None
        if mistyped:
            vo, vp, learned = list(vo), list(vp), list(learned)
            r = r if r is None or k % 2 else np.float64(r)
        ests.append(f.step(100000 * (k + 1), vo, vp, r, draws, learned))
    return np.array(ests)


@pytest.mark.parametrize("config", [{}, dict(pf.DEFAULTS, resample_neff_fraction=0.5, reinit_after_outliers=3,
                                             lost_residual_m=0.4, refresh_mode="spread", refresh_fraction_min=0.01),
                                    {"refresh_mode": "adaptive", "refresh_fraction_min": 0.02}],
                         ids=["paper", "swarm-flights", "adaptive"])
def test_fast_input_path_and_pure_checks_give_the_same_filter(config, monkeypatch):
    """The kernel's step skips the pure checks only for the runtime's usual types; lists, NumPy scalars
    and ints take the pure checks. Either way the filter is the pure class's, bit for bit."""
    k = _cython()
    cfg = dict(config, n_particles=80)
    checked = []
    check_vel = pf.ParticleFilter._check_vel
    monkeypatch.setattr(pf.ParticleFilter, "_check_vel", lambda self, v, who: checked.append(who) or check_vel(
        self, v, who))
    runs = []
    for cls_kernels, mistyped in ((None, False), (k, False), (k, True)):
        f = pf.make_filter(cfg, kernels=cls_kernels)
        del checked[:]
        est = _flight(f, NumpyDraws(np.random.default_rng(31)), mistyped)
        assert len(checked) == (0 if cls_kernels is k and not mistyped else 2 * len(est))
        runs.append((est, [np.array(a, dtype=float) for a in (f.xs, f.ys, f.yaws, f.ws, f.lws)],
                     {c: getattr(f, c) for c in ("steps", "rejected", "outliers", "predict_only", "resamples",
                                                 "reinitializations", "lost_restarts", "last_refresh",
                                                 "residual_lp_m", "w_slow", "w_fast", "time_us")}))
    ref = runs[0]
    assert ref[2]["outliers"] > 0 and ref[2]["predict_only"] > 0 and ref[2]["resamples"] > 0
    if config.get("reinit_after_outliers"):
        assert ref[2]["reinitializations"] > 0
    for est, arrays, counters in runs[1:]:
        assert np.array_equal(est, ref[0])
        assert all(np.array_equal(a, b) for a, b in zip(arrays, ref[1]))
        assert counters == ref[2]
        assert all(type(v) in (int, float, type(None)) for v in counters.values())   # no NumPy scalars leak


def test_kernel_state_reads_as_the_pure_class_does():
    """est is a list of floats, time_us None before initialize and an int after, on both builds."""
    k = _cython()
    for f in (pf.ParticleFilter({"n_particles": 20}), pf.make_filter({"n_particles": 20}, kernels=k)):
        assert f.time_us is None and not f.initialized
        d = NumpyDraws(np.random.default_rng(1))
        f.initialize(5, 2.0, d)
        assert f.time_us == 5 and type(f.time_us) is int
        x, y, yaw = f.step(100005, (0.0, 0.0), (0.0, 0.0), 2.0, d)
        e = f.est
        assert [type(v) for v in e] == [float] * pf.EST_LEN and (e[pf.EST_X], e[pf.EST_Y], e[pf.EST_YAW]) == (x, y, yaw)
        assert f.neff() == e[pf.EST_NEFF] and f.estimate() == (x, y, yaw)
