"""Particle filter: the pure, NumPy and Cython paths (and the C reference) agree on the same draws."""
import importlib.util
import math
import os
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 1e-12
IMPLS = ("pure", "numpy", "cython")


def _require_all_paths():
    have = impl_switch.available(pf.KERNEL_MODULES)
    missing = [i for i in IMPLS if i not in have]
    if missing:
        pytest.fail("particle-filter paths missing: %s (run `make setup` to build cython_ext)" % missing)


class RecordedDraws:
    """Numpy draws recorded once, replayed identically to every path."""

    def __init__(self, seed):
        self.gen = np.random.default_rng(seed)
        self.log = []

    def normals(self, k):
        v = self.gen.standard_normal(k)
        self.log.append(v)
        return v

    def uniforms(self, k):
        v = self.gen.random(k)
        self.log.append(v)
        return v


class Replay:
    def __init__(self, log):
        self.log = list(log)

    def normals(self, k):
        v = self.log.pop(0)
        assert len(v) == k
        return v

    uniforms = normals


def _scripted_run(kernels, draws, n, use_learned, steps=40, dropout_every=7, neff_fraction=1.0):
    f = pf.ParticleFilter({"n_particles": n, "resample_neff_fraction": neff_fraction}, kernels=kernels)
    gen = np.random.default_rng(99)       # the scenario (truth, measurements): same for every path
    x, y, yaw = 1.1, -0.7, 0.4
    f.initialize(0, math.hypot(x, y) + 0.05, draws, learned=(math.atan2(y, x) + 0.1, 0.2) if use_learned else None)
    ests = []
    t = 0
    for k in range(steps):
        vo = (0.4 * math.cos(0.2 * k), 0.3 * math.sin(0.13 * k))
        vp = (-0.3 * math.sin(0.17 * k), 0.2 * math.cos(0.1 * k))
        x += 0.1 * (math.cos(yaw) * vp[0] - math.sin(yaw) * vp[1] - vo[0])
        y += 0.1 * (math.sin(yaw) * vp[0] + math.cos(yaw) * vp[1] - vo[1])
        r = abs(math.hypot(x, y) + gen.normal(pf.UWB_RANGE_BIAS_M, math.sqrt(pf.UWB_RANGE_VAR_M2)))
        learned = (math.atan2(y, x) + gen.normal(0, 0.2), yaw + gen.normal(0, 0.3)) if use_learned else None
        if dropout_every and k % dropout_every == dropout_every - 1:
            r = None
        t += 100000
        ests.append(f.step(t, vo, vp, r, draws, learned=learned))
    return f, np.array(ests, dtype=float)


@pytest.mark.parametrize("neff_fraction", [1.0, 0.5], ids=["resample-every-step", "adaptive-resampling"])
@pytest.mark.parametrize("use_learned", [True, False], ids=["learned-refresh", "pure-pf"])
@pytest.mark.parametrize("n", [50, 400])
def test_paths_identical_on_same_draws(n, use_learned, neff_fraction):
    _require_all_paths()
    rec = RecordedDraws(5)
    f_ref, est_ref = _scripted_run(pf.kernels_for("pure"), rec, n, use_learned, neff_fraction=neff_fraction)
    if neff_fraction < 1.0:
        assert 0 < f_ref.resamples < f_ref.steps - f_ref.predict_only      # weights were carried over
    for name in ("numpy", "cython"):
        f, est = _scripted_run(pf.kernels_for(name), Replay(rec.log), n, use_learned, neff_fraction=neff_fraction)
        assert np.abs(est - est_ref).max() <= TOL, name
        for a, b in ((f.xs, f_ref.xs), (f.ys, f_ref.ys), (f.yaws, f_ref.yaws), (f.lws, f_ref.lws)):
            assert np.abs(np.asarray(a) - np.asarray(b)).max() <= TOL, name
        assert f.predict_only == f_ref.predict_only > 0
        assert f.resamples == f_ref.resamples


# every branch of a cycle: fixed / adaptive refresh, resampling every range / on low Neff, both restarts
COMPILED_CONFIGS = {
    "paper": {},
    "flights": {"resample_neff_fraction": 0.5, "reinit_after_outliers": 3, "lost_residual_m": 0.4},
    "adaptive-refresh": {"refresh_mode": "adaptive", "refresh_fraction": 0.2, "refresh_fraction_min": 0.02},
    "linear-noise": {"noise_reference_dt_s": 0.0, "reinit_after_outliers": 2},
    "spread-refresh": {"refresh_mode": "spread", "refresh_spread_rad": 0.2, "refresh_fraction_min": 0.02,
                       "resample_neff_fraction": 0.5},
}


def _eventful_run(f, draws, use_learned, steps=70):
    """A scripted flight with dropouts, a burst of ranges 3-9 m too long (outliers, restarts) and ranges
    stamped several times per period; returns the estimates and the particles refreshed at each step."""
    gen = np.random.default_rng(17)
    x, y, yaw = 1.3, 0.6, -0.5
    f.initialize(0, math.hypot(x, y), draws, learned=(math.atan2(y, x) - 0.2, yaw) if use_learned else None)
    ests, refreshed = [], []
    t = 0
    for k in range(steps):
        vo = (0.5 * math.cos(0.15 * k), -0.3 * math.sin(0.11 * k))
        vp = (0.2 * math.sin(0.19 * k), 0.35 * math.cos(0.07 * k))
        dt_s = 0.02 if k % 5 else 0.1
        x += dt_s * (math.cos(yaw) * vp[0] - math.sin(yaw) * vp[1] - vo[0])
        y += dt_s * (math.sin(yaw) * vp[0] + math.cos(yaw) * vp[1] - vo[1])
        r = abs(math.hypot(x, y) + gen.normal(pf.UWB_RANGE_BIAS_M, math.sqrt(pf.UWB_RANGE_VAR_M2)))
        if 30 <= k < 40:
            r += 3.0 * (1 + k % 3)          # 3, 6, 9 m: the particles refreshed at the last range miss too
        learned = (math.atan2(y, x) + gen.normal(0, 0.3), yaw + gen.normal(0, 0.4)) if use_learned else None
        if k % 9 == 8:
            r = None
        t += int(dt_s * 1e6)
        ests.append(f.step(t, vo, vp, r, draws, learned=learned))
        refreshed.append(f.last_refresh)
    return np.array(ests, dtype=float), refreshed


COUNTERS = ("steps", "rejected", "outliers", "predict_only", "resamples", "reinitializations", "lost_restarts",
            "last_refresh", "residual_lp_m", "w_slow", "w_fast", "time_us", "initialized", "n", "n_refresh")


@pytest.mark.parametrize("use_learned", [True, False], ids=["learned-refresh", "pure-pf"])
@pytest.mark.parametrize("config", sorted(COMPILED_CONFIGS))
def test_compiled_filter_equals_the_pure_class_on_the_same_draws(config, use_learned):
    """make_filter on the Cython kernels is the compiled filter; on the same draws it computes what the
    pure ParticleFilter computes, bit for bit, and takes the same decisions (counters)."""
    _require_all_paths()
    cfg = dict(COMPILED_CONFIGS[config], n_particles=120)
    rec = RecordedDraws(11)
    f_ref = pf.ParticleFilter(cfg)
    est_ref, refreshed_ref = _eventful_run(f_ref, rec, use_learned)
    f = pf.make_filter(cfg, kernels=pf.kernels_for("cython"))
    assert type(f) is not pf.ParticleFilter and type(f).__module__ == "cython_ext.pf_kernels"
    est, refreshed = _eventful_run(f, Replay(rec.log), use_learned)
    assert np.array_equal(est, est_ref) and refreshed == refreshed_ref
    for a, b in ((f.xs, f_ref.xs), (f.ys, f_ref.ys), (f.yaws, f_ref.yaws), (f.lws, f_ref.lws), (f.ws, f_ref.ws)):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    assert {c: getattr(f, c) for c in COUNTERS} == {c: getattr(f_ref, c) for c in COUNTERS}
    assert f.neff() == f_ref.neff() and f.estimate() == f_ref.estimate()
    assert f_ref.outliers > 0 and f_ref.predict_only > 0                     # the run went through those paths
    if config in ("flights", "linear-noise"):
        assert f_ref.reinitializations > 0
    if config == "adaptive-refresh" and use_learned:
        assert f_ref.w_slow is not None
    if config == "spread-refresh" and use_learned:
        assert {12, 2} <= set(refreshed_ref)            # 10 % while unsure of the bearing, 2 % once sure


def test_weighted_spread_kernels_agree():
    _require_all_paths()
    gen = np.random.default_rng(4)
    xs, ys, ws = gen.normal(1.0, 0.4, 300), gen.normal(-2.0, 0.7, 300), gen.random(300)
    mx, my, sw = float((ws * xs).sum() / ws.sum()), float((ws * ys).sum() / ws.sum()), float(ws.sum())
    want = math.sqrt(float((ws * ((xs - mx) ** 2 + (ys - my) ** 2)).sum()) / sw)
    for name in IMPLS:
        k = pf.kernels_for(name)
        got = k.weighted_spread(k.as_buffer(xs), k.as_buffer(ys), k.as_buffer(ws), 300, mx, my, sw)
        assert got == pytest.approx(want, rel=1e-12), name
    assert want == pytest.approx(math.hypot(0.4, 0.7), rel=0.1)          # the positions' spread


def test_compiled_filter_takes_list_draws():
    """PureDraws hand lists (the MicroPython path's draws); the compiled filter converts them."""
    _require_all_paths()
    ests = []
    for f in (pf.ParticleFilter({"n_particles": 40}), pf.make_filter({"n_particles": 40},
                                                                      kernels=pf.kernels_for("cython"))):
        d = pf.PureDraws(5)
        f.initialize(0, 1.0, d)
        ests.append([f.step(100000 * k, (0.1, 0.0), (0.0, 0.2), 1.0 + 0.01 * k, d, learned=(0.2, 0.1))
                     for k in range(1, 6)])
    assert ests[0] == ests[1]


@pytest.mark.parametrize("impl", ["pure", "cython"])
def test_bad_input_rejected_and_state_kept(impl):
    """Non-finite, negative, mistyped or late input: PfInputError, counted, particles and clock untouched;
    both the pure class and the compiled filter."""
    if impl not in impl_switch.available(pf.KERNEL_MODULES):
        pytest.fail("particle-filter path %s missing (make setup builds cython_ext)" % impl)
    f = pf.make_filter({"n_particles": 30}, kernels=pf.kernels_for(impl))
    d = NumpyDraws(np.random.default_rng(2))
    with pytest.raises(pf.PfInputError, match="before initialize"):
        f.step(0, (0.0, 0.0), (0.0, 0.0), 1.0, d)
    with pytest.raises(pf.PfInputError, match="range is needed"):
        f.initialize(0, None, d)
    f.initialize(1000, 1.0, d, learned=(0.5, 0.0))
    f.step(2000, (0.1, 0.0), (0.0, 0.0), 1.0, d)
    before = [np.array(a, dtype=float) for a in (f.xs, f.ys, f.yaws, f.lws)] + [f.time_us, f.steps]
    bad_calls = [
        (3000, (float("nan"), 0.0), (0.0, 0.0), 1.0, None, "own velocity not finite"),
        (3000, (0.0, 0.0), (0.0, float("inf")), 1.0, None, "peer velocity not finite"),
        (3000, (0.0, 0.0), (0.0, 0.0), float("nan"), None, "range must be"),
        (3000, (0.0, 0.0), (0.0, 0.0), -0.5, None, "range must be"),
        (3000, (0.0, 0.0), (0.0, 0.0), "1.0", None, "range must be"),
        (3000, (0.0,), (0.0, 0.0), 1.0, None, "own velocity must be"),
        (3000, None, (0.0, 0.0), 1.0, None, "own velocity must be"),
        (3000, (0.0, 0.0), (0.0, 0.0), 1.0, (float("nan"), 0.0), "learned estimate not finite"),
        (3000, (0.0, 0.0), (0.0, 0.0), 1.0, (0.1,), "learned estimate must be"),
        (1500, (0.0, 0.0), (0.0, 0.0), 1.0, None, "time went backwards"),
    ]
    for now_us, vo, vp, r, learned, message in bad_calls:
        with pytest.raises(pf.PfInputError, match=message):
            f.step(now_us, vo, vp, r, d, learned=learned)
    after = [np.array(a, dtype=float) for a in (f.xs, f.ys, f.yaws, f.lws)] + [f.time_us, f.steps]
    assert all(np.array_equal(a, b) for a, b in zip(before[:4], after[:4])) and before[4:] == after[4:]
    assert f.rejected == len(bad_calls) + 1                                   # + the range-less initialize
    x, y, _ = f.step(3000, (0.0, 0.0), (0.0, 0.0), 1.0, d)                  # and it goes on
    assert math.isfinite(x) and math.isfinite(y) and f.steps == 2


def test_make_filter_picks_the_compiled_class_only_for_cython():
    _require_all_paths()
    assert type(pf.make_filter(None, kernels=pf.kernels_for("pure"))) is pf.ParticleFilter
    assert type(pf.make_filter(None, kernels=pf.kernels_for("numpy"))) is pf.ParticleFilter
    assert type(pf.make_filter(None)) is pf.ParticleFilter
    assert type(pf.make_filter(None, kernels=pf.kernels_for("cython"))) is pf.kernels_for("cython").filter_class
    with pytest.raises(ValueError, match="unknown ParticleFilter setting"):
        pf.make_filter({"n_partcles": 10}, kernels=pf.kernels_for("cython"))


def test_impl_switch_picks_kernels(monkeypatch):
    _require_all_paths()
    monkeypatch.setenv("ONBOARD_IMPL", "cython")
    assert pf.kernels_for().name == "cython"
    monkeypatch.setenv("ONBOARD_IMPL", "numpy")
    assert pf.kernels_for().name == "numpy"
    assert pf.kernels_for("pure") is pf.PURE
    with pytest.raises(ValueError):
        pf.kernels_for("fortran")


def test_c_reference_computes_the_same_step():
    """bench/pf_ref.c (the benchmark's C baseline) equals the Cython path bit for bit-ish."""
    _require_all_paths()
    if shutil.which("gcc") is None:
        pytest.fail("gcc missing (Debian build-essential, installed by `make setup`)")
    spec = importlib.util.spec_from_file_location("bench_pf", os.path.join(REPO, "bench", "pf.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        exe = bench.build_c(tmp)
        work = bench.make_workload(200, 30)
        _, cx, cy, cyaw, c_est = bench.run_c(exe, work, tmp, repeats=1)
    _, f, est = bench.run_filter("cython", work)
    assert np.abs(np.asarray(f.xs) - cx).max() <= TOL
    assert np.abs(np.asarray(f.yaws) - cyaw).max() <= TOL
    assert np.abs(est - c_est).max() <= TOL
    _, f_pure, est_pure = bench.run_filter("pure", work)
    assert np.abs(est_pure - c_est).max() <= TOL


@given(weights=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=30).filter(lambda w: sum(w) > 1e-6),
       n_keep=st.integers(1, 60), u0=st.floats(0.0, 0.999999))
def test_resample_low_variance_property(weights, n_keep, u0):
    """Each particle is copied floor or ceil of n_keep * w_i / sum(w) times (+-1 at exact ties); zero weights never."""
    n = len(weights)
    xs = np.arange(n, dtype=float)
    outs = {}
    for name in IMPLS:
        k = pf.kernels_for(name) if name != "pure" else pf.PURE
        out = [k.alloc(n_keep) for _ in range(3)]
        buf = k.as_buffer(xs)
        k.resample(buf, buf, buf, k.as_buffer(weights), n, n_keep, u0, out[0], out[1], out[2])
        outs[name] = np.asarray(out[0])
    assert np.array_equal(outs["pure"], outs["numpy"]) and np.array_equal(outs["pure"], outs["cython"])
    total = sum(weights)
    for i, w in enumerate(weights):
        cnt = int(np.sum(outs["pure"] == i))
        expect = n_keep * w / total
        if w == 0.0:
            assert cnt == 0
        else:
            assert math.floor(expect) - 1 <= cnt <= math.ceil(expect) + 1


def test_numpy_draws_drive_the_filter():
    f = pf.ParticleFilter({"n_particles": 100}, kernels=pf.kernels_for("numpy"))
    d = NumpyDraws(np.random.default_rng(3))
    f.initialize(0, 1.0, d, learned=(0.3, 0.0))
    x, y, _ = f.step(100000, (0.0, 0.0), (0.0, 0.0), 1.0, d, learned=(0.3, 0.0))
    assert abs(math.hypot(x, y) - (1.0 - pf.UWB_RANGE_BIAS_M)) < 0.15
    assert abs(math.atan2(y, x) - 0.3) < 0.15


@pytest.mark.parametrize("reference_s", [0.1, 0.0])
def test_process_noise_is_a_random_walk_whatever_the_step_count(reference_s):
    """Ten predictions of 10 ms spread the particles as much as one of 100 ms (variance linear in dt):
    a filter fed every range of a fast ranging link must diffuse as much per second as one fed once per
    period. The old model (sigmas linear in dt, noise_reference_dt_s 0) diffused sqrt(10) times less."""
    def spread(steps):
        f = pf.ParticleFilter({"n_particles": 4000, "noise_reference_dt_s": reference_s,
                               "pos_noise_floor_m": 0.0})
        draws = NumpyDraws(np.random.default_rng(8))
        f.initialize(0, 1.0, draws, learned=(0.0, 0.0))
        x0, yaw0 = np.array(f.xs), np.array(f.yaws)
        dt_us = 100000 // steps
        for k in range(1, steps + 1):
            f.step(k * dt_us, (0.0, 0.0), (0.0, 0.0), None, draws)          # predict only
        return float(np.std(np.array(f.xs) - x0)), float(np.std(np.array(f.yaws) - yaw0))

    one, ten = spread(1), spread(10)
    ratio_x, ratio_yaw = ten[0] / one[0], ten[1] / one[1]
    if reference_s > 0.0:
        assert ratio_x == pytest.approx(1.0, abs=0.05) and ratio_yaw == pytest.approx(1.0, abs=0.05)
        assert one[1] == pytest.approx(0.5 * 0.1, rel=0.05)                 # yaw_noise_radps * ref
    else:
        assert ratio_x == pytest.approx(10 ** -0.5, rel=0.05) and ratio_yaw == pytest.approx(10 ** -0.5, rel=0.05)


def test_noise_reference_is_checked():
    with pytest.raises(ValueError, match="noise_reference_dt_s"):
        pf.ParticleFilter({"noise_reference_dt_s": -0.1})
