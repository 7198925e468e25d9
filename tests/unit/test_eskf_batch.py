"""ESKF ``predict_many``: on every implementation, bit for bit what one ``predict`` per sample gives.

The batches mix well-formed samples with ones the filter must refuse (NaN, out of order, dt
too long) and ones the Cython fast path leaves to the pure parser (lists, integral floats);
before initialisation samples are skipped. The runtime's predict rate group hands its queue
to ``predict_many`` and must count the same refusals and leave the same state.
"""
import math
import random

import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError, make_eskf
from onboard.estimators.eskf_pose import EskfPoseEstimator
from onboard.estimators.planar_ekf import PlanarEkf
from onboard.runtime.estimation import PoseEstimation
from onboard.runtime.node import Node

IMPLS = impl_switch.available(IMPL_MODULES)
G = 9.80665
DT_US = 10000


class LooseImu:
    """A duck-typed IMU sample (lists, float times): valid for the pure parser, not for a C fast path."""

    def __init__(self, time_us, dt_us, dvel, dang):
        self.time_us = float(time_us)
        self.dt_us = float(dt_us)
        self.dvel_body_mps = list(dvel)
        self.dang_body_rad = list(dang)


def _workload(seed, n_cycles=12, ratio=10):
    """(chunks of IMU samples, poses): a noisy turning trajectory with refused and loose samples."""
    rnd = random.Random(seed)
    chunks, poses = [], []
    t = 0
    for c in range(n_cycles):
        chunk = []
        for k in range(ratio):
            t += DT_US
            dvel = (rnd.gauss(0.0, 0.02), rnd.gauss(0.0, 0.02), -G * 0.01 + rnd.gauss(0.0, 0.01))
            dang = (rnd.gauss(0.0, 0.002), rnd.gauss(0.0, 0.002), 0.003 + rnd.gauss(0.0, 0.002))
            kind = rnd.random()
            if kind < 0.05:
                chunk.append(ImuSample(t, DT_US, (math.nan, 0.0, 0.0), dang))       # refused: NaN
            elif kind < 0.08:
                chunk.append(ImuSample(t - 5 * DT_US, DT_US, dvel, dang))           # refused: out of order
            elif kind < 0.10:
                chunk.append(ImuSample(t, 5000000, dvel, dang))                     # refused: dt too long
            elif kind < 0.15:
                chunk.append(LooseImu(t, DT_US, dvel, dang))
            else:
                chunk.append(ImuSample(t, DT_US, dvel, dang))
        chunks.append(chunk)
        poses.append(PoseSample(t, (1.0 + 0.1 * c + rnd.gauss(0.0, 0.05), 2.0 + rnd.gauss(0.0, 0.05), -0.5),
                                (0.01, -0.02, 0.3 + 0.03 * c + rnd.gauss(0.0, 0.01))))
    return chunks, poses


def _refuses(f, sample):
    """One predict call; True when the filter refused the sample."""
    try:
        f.predict(sample)
    except EskfInputError:
        return True
    return False


def _one_by_one(f, samples):
    return sum(1 for s in samples if _refuses(f, s))


def _run(impl, seed, batched, skip_init=False):
    f = make_eskf({"gate_nis": 0.0} if seed % 2 else None, impl=impl)
    chunks, poses = _workload(seed)
    refused = []
    for k, (chunk, pose) in enumerate(zip(chunks, poses)):
        refused.append(f.predict_many(chunk) if batched else _one_by_one(f, chunk))
        if k > 0 or not skip_init:
            f.update_pose(pose)
    return f.get_state(), refused


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_predict_many_is_bit_identical_to_one_call_per_sample(impl, seed):
    one, refused_one = _run(impl, seed, batched=False)
    many, refused_many = _run(impl, seed, batched=True)
    assert refused_many == refused_one
    assert sum(refused_many) > 0 and many["predicts"] > 0
    assert many == one                         # every list entry exactly equal, counters included


@pytest.mark.parametrize("impl", IMPLS)
def test_predict_many_before_initialisation_skips(impl):
    one, _ = _run(impl, 4, batched=False, skip_init=True)
    many, _ = _run(impl, 4, batched=True, skip_init=True)
    assert many == one
    assert many["skipped"] > 0


def test_cython_batch_matches_pure_batch():
    if "cython" not in IMPLS:
        pytest.skip("cython_ext not built")
    pure, _ = _run("pure", 5, batched=True)
    cy, _ = _run("cython", 5, batched=True)
    assert cy == pure


def test_refused_sample_in_a_batch_leaves_the_state_as_it_was():
    for impl in IMPLS:
        f = make_eskf(impl=impl)
        f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.1))
        before = f.get_state()
        assert f.predict_many([ImuSample(DT_US, DT_US, (math.inf, 0.0, 0.0), (0.0, 0.0, 0.0))]) == 1
        after = f.get_state()
        assert after.pop("rejected") == before.pop("rejected") + 1
        assert after == before


@pytest.mark.parametrize("impl", IMPLS)
def test_predict_group_hands_its_queue_over_at_once(impl):
    """PoseEstimation's predict rate group: the packed queue to predict_packed on the ES-EKF, the list to
    predict_many where the estimator has only that, a loop on the planar EKF; all leave the state and the
    refusal count of one predict per sample (samples fed through the real entry points of a Node)."""
    chunks, poses = _workload(7)
    groups = []
    for mode in ("packed", "many", "loop"):
        est = EskfPoseEstimator(impl=impl)
        if mode != "packed":
            est.predict_packed = None           # the runtime then keeps a list of sample objects
        if mode == "loop":
            est.predict_many = None             # ... and calls predict once per sample
        group = Node("eskf").add("estimation", PoseEstimation(est, 100, 10, 50000, 500000))
        assert (group._imu_packed is not None) == (mode == "packed")
        for chunk, pose in zip(chunks, poses):
            for s in chunk:
                if isinstance(s, ImuSample):    # the entry point takes ImuSample (is_finite, packing)
                    group.on_imu(s)
            group._predict(chunk[-1].time_us)
            group.on_pose(pose)
            group._aiding(pose.time_us)
        groups.append(group)
    assert groups[0].rejected_samples == groups[1].rejected_samples == groups[2].rejected_samples > 0
    state = groups[0].estimator.eskf.get_state()
    assert state == groups[1].estimator.eskf.get_state() == groups[2].estimator.eskf.get_state()
    assert state["rejected"] > 0 and state["predicts"] > 0   # refused by the filter (out of order, dt)
    planar = PoseEstimation(PlanarEkf(), 100, 10, 50000, 500000)
    assert getattr(planar.estimator, "predict_many", None) is None and planar._imu_packed is None
    alone = PlanarEkf()
    refused = 0
    for chunk in chunks:
        chunk = [s for s in chunk if isinstance(s, ImuSample)]      # the planar EKF takes ImuSample only
        planar._imu_queue = list(chunk)
        planar._predict(chunk[-1].time_us)
        for s in chunk:
            try:
                alone.predict(s)
            except EstimatorInputError:
                refused += 1
    assert planar._imu_queue == [] and planar.rejected_samples == refused
    assert planar.estimator.counters() == alone.counters()


def test_cython_kernels_behind_the_pure_entry_points():
    """The pure class's predict/update_pose run on the Cython kernels (the hooks _step, _fuse) give the
    state of the Cython fast paths, bit for bit."""
    if "cython" not in IMPLS:
        pytest.skip("cython_ext not built")
    from onboard.estimators import eskf as pure_module

    chunks, poses = _workload(8)
    fast = make_eskf(impl="cython")
    hooks = make_eskf(impl="cython")
    for chunk, pose in zip(chunks, poses):
        fast.predict_many(chunk)
        for s in chunk:
            try:
                pure_module.Eskf.predict(hooks, s)
            except EskfInputError:
                pass
        assert fast.update_pose(pose) == pure_module.Eskf.update_pose(hooks, pose)
    assert fast.get_state() == hooks.get_state()
    assert fast.counters()["updates"] > 0
