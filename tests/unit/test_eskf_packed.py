"""ESKF ``predict_packed``: a packed IMU queue (flat ``array('d')``) gives, on every implementation, bit for
bit the state, counters and refusals of ``predict_many`` and of one ``predict`` per sample; the Cython
build's packed path equals the pure one. Refused rows (NaN, out of order, dt too long or below 1 us)
leave the filter as it was; rows the Cython fast path leaves to the pure code (fractional times) agree.
The runtime's packed queue drops and refuses exactly what its list of samples does.
"""
import math
import random
from array import array

import numpy as np
import pytest

from onboard import impl as impl_switch
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import IMPL_MODULES, EskfInputError, make_eskf
from onboard.estimators.eskf_packed import (IMU_DANG_BODY_RAD, IMU_DT_US, IMU_DVEL_BODY_MPS, IMU_STRIDE,
                                            IMU_TIME_US, pack_imu, packed_buffer)
from onboard.estimators.eskf_pose import EskfPoseEstimator
from onboard.runtime.estimation import PoseEstimation
from onboard.runtime.imu_queue import PackedImuQueue
from onboard.runtime.node import Node

IMPLS = impl_switch.available(IMPL_MODULES)
G = 9.80665
DT_US = 10000


class RowImu:
    """One packed row as a duck-typed IMU sample (floats as stored), for the object paths."""

    def __init__(self, row):
        self.time_us = row[IMU_TIME_US]
        self.dt_us = row[IMU_DT_US]
        self.dvel_body_mps = tuple(row[IMU_DVEL_BODY_MPS:IMU_DVEL_BODY_MPS + 3])
        self.dang_body_rad = tuple(row[IMU_DANG_BODY_RAD:IMU_DANG_BODY_RAD + 3])


def _workload(seed, n_cycles=12, ratio=10):
    """(list of packed rows per cycle, poses): a noisy turning motion with rows the filter must refuse."""
    rnd = random.Random(seed)
    cycles, poses = [], []
    t = 0
    for c in range(n_cycles):
        rows = []
        for _ in range(ratio):
            t += DT_US
            dvel = [rnd.gauss(0.0, 0.02), rnd.gauss(0.0, 0.02), -G * 0.01 + rnd.gauss(0.0, 0.01)]
            dang = [rnd.gauss(0.0, 0.002), rnd.gauss(0.0, 0.002), 0.003 + rnd.gauss(0.0, 0.002)]
            row = [float(t), float(DT_US)] + dvel + dang
            kind = rnd.random()
            if kind < 0.04:
                row[IMU_DVEL_BODY_MPS + rnd.randrange(3)] = math.nan             # refused: NaN
            elif kind < 0.06:
                row[IMU_DANG_BODY_RAD + rnd.randrange(3)] = -math.inf            # refused: infinite
            elif kind < 0.09:
                row[IMU_TIME_US] = float(t - 5 * DT_US)                          # refused: out of order
            elif kind < 0.11:
                row[IMU_DT_US] = 5e6                                             # refused: dt too long
            elif kind < 0.12:
                row[IMU_DT_US] = 0.5                                             # refused: int(dt) == 0
            elif kind < 0.13:
                row[IMU_TIME_US] = math.nan                                      # refused: no integer time
            elif kind < 0.17:
                row[IMU_TIME_US] = t + 0.75                                      # fractional: int() truncates
                row[IMU_DT_US] = DT_US + 0.25
            rows.append(row)
        cycles.append(rows)
        poses.append(PoseSample(t, (1.0 + 0.1 * c + rnd.gauss(0.0, 0.05), 2.0 + rnd.gauss(0.0, 0.05), -0.5),
                                (0.01, -0.02, 0.3 + 0.03 * c + rnd.gauss(0.0, 0.01))))
    return cycles, poses


def _packed(rows, kind="array"):
    flat = [v for row in rows for v in row]
    if kind == "numpy":
        return np.array(flat, dtype=np.float64)
    if kind == "list":
        return flat
    return array("d", flat)


def _one_by_one(f, rows):
    refused = 0
    for row in rows:
        try:
            f.predict(RowImu(row))
        except EskfInputError:
            refused += 1
    return refused


def _run(impl, seed, mode, skip_init=False, kind="array"):
    f = make_eskf({"gate_nis": 0.0} if seed % 2 else None, impl=impl)
    cycles, poses = _workload(seed)
    refused = []
    for k, (rows, pose) in enumerate(zip(cycles, poses)):
        if mode == "packed":
            refused.append(f.predict_packed(_packed(rows, kind), len(rows)))
        elif mode == "many":
            refused.append(f.predict_many([RowImu(r) for r in rows]))
        else:
            refused.append(_one_by_one(f, rows))
        if k > 0 or not skip_init:
            f.update_pose(pose)
    return f.get_state(), refused


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_predict_packed_is_bit_identical_to_predict_many_and_one_call_per_sample(impl, seed):
    packed, refused_packed = _run(impl, seed, "packed")
    many, refused_many = _run(impl, seed, "many")
    one, refused_one = _run(impl, seed, "one")
    assert refused_packed == refused_many == refused_one
    assert sum(refused_packed) > 0 and packed["predicts"] > 0 and packed["rejected"] == sum(refused_packed)
    assert packed == many == one                 # every list entry exactly equal, counters included


@pytest.mark.parametrize("impl", IMPLS)
def test_predict_packed_before_initialisation_skips(impl):
    packed, _ = _run(impl, 4, "packed", skip_init=True)
    one, _ = _run(impl, 4, "one", skip_init=True)
    assert packed == one and packed["skipped"] > 0


def test_cython_packed_matches_pure_packed():
    """On every build of the kernels this CPU runs (AVX2 without FMA, baseline): the pure path's values."""
    if "cython" not in IMPLS:
        pytest.skip("cython_ext not built")
    module = impl_switch.load(IMPL_MODULES, "cython")
    before = module.kernel_variant()
    try:
        for variant in module.KERNEL_VARIANTS:
            module.use_kernel_variant(variant)
            for seed in (5, 6):
                assert _run("cython", seed, "packed") == _run("pure", seed, "packed")
    finally:
        module.use_kernel_variant(before)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("kind", ["numpy", "list"])
def test_other_containers_of_doubles_give_the_same_result(impl, kind):
    assert _run(impl, 7, "packed", kind=kind) == _run(impl, 7, "packed")


@pytest.mark.parametrize("impl", IMPLS)
def test_refused_rows_leave_the_state_as_it_was(impl):
    f = make_eskf(impl=impl)
    f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.1))
    good = [float(DT_US), float(DT_US), 0.0, 0.0, -G * 0.01, 0.0, 0.0, 0.001]
    assert f.predict_packed(array("d", good), 1) == 0
    before = f.get_state()
    bad = [list(good) for _ in range(4)]
    bad[0][IMU_DVEL_BODY_MPS + 1] = math.nan
    bad[1][IMU_TIME_US] = float(DT_US)              # not after the previous sample
    bad[2][IMU_DT_US] = 2e6                         # longer than max_imu_dt_us
    bad[3][IMU_DANG_BODY_RAD + 2] = math.inf
    assert f.predict_packed(_packed(bad), 4) == 4
    after = f.get_state()
    assert after.pop("rejected") == before.pop("rejected") + 4
    assert after == before


@pytest.mark.parametrize("impl", IMPLS)
def test_a_count_past_the_buffer_is_refused_before_anything_runs(impl):
    f = make_eskf(impl=impl)
    f.initialize(0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.1))
    buf = packed_buffer(2)
    before = f.get_state()
    for count in (3, -1):
        with pytest.raises(EskfInputError):
            f.predict_packed(buf, count)
    assert f.get_state() == before
    assert f.predict_packed(buf, 0) == 0


def test_pack_imu_writes_the_fields_in_order_and_refuses_what_is_no_number():
    buf = packed_buffer(2)
    s = ImuSample(123456, 10000, (0.1, -0.2, 0.3), (0.01, 0.02, -0.03))
    pack_imu(buf, 1, s)
    assert list(buf[IMU_STRIDE:]) == [123456.0, 10000.0, 0.1, -0.2, 0.3, 0.01, 0.02, -0.03]
    assert list(buf[:IMU_STRIDE]) == [0.0] * IMU_STRIDE
    bad = ImuSample(1, 1, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    bad.dvel_body_mps = (0.0, "x", 0.0)
    with pytest.raises(ValueError):
        pack_imu(buf, 0, bad)
    bad.dvel_body_mps = (0.0, 0.0)
    with pytest.raises(ValueError):
        pack_imu(buf, 0, bad)
    with pytest.raises(IndexError):
        pack_imu(buf, 2, s)
    assert list(buf[:IMU_STRIDE]) == [0.0] * IMU_STRIDE


def test_full_queue_drops_the_oldest_sample():
    q = PackedImuQueue(3)
    samples = [ImuSample(DT_US * (k + 1), DT_US, (k, 0.0, 0.0), (0.0, 0.0, 0.0)) for k in range(5)]
    dropped = [q.push(s) for s in samples]
    assert dropped == [False, False, False, True, True] and q.count == 3
    assert [q.buf[k * IMU_STRIDE + IMU_TIME_US] for k in range(3)] == [30000.0, 40000.0, 50000.0]
    assert [q.buf[k * IMU_STRIDE + IMU_DVEL_BODY_MPS] for k in range(3)] == [2.0, 3.0, 4.0]
    with pytest.raises(ValueError):
        PackedImuQueue(0)


@pytest.mark.parametrize("impl", IMPLS)
def test_runtime_packed_queue_drops_and_refuses_as_the_object_queue(impl):
    """Through the entry points of a Node: NaN samples refused at the entry point (no watchdog feed), a
    queue of 4 overflowing (oldest dropped), refusals by the filter, all counted alike."""
    rnd = random.Random(11)
    groups = []
    for packed in (True, False):
        est = EskfPoseEstimator(impl=impl)
        if not packed:
            est.predict_packed = None
        node = Node("eskf")
        group = node.add("estimation", PoseEstimation(est, 100, 10, 50000, 500000, queue_limit=4))
        assert (group._imu_packed is not None) == packed
        groups.append((node, group))
    t = 0
    for c in range(10):
        samples = []
        for k in range(3 + c % 4):                  # 3..6 samples per group call: overflows at 5, 6
            t += DT_US
            dvel = (rnd.gauss(0.0, 0.02), rnd.gauss(0.0, 0.02), -G * 0.01)
            dang = (0.0, 0.0, 0.002 + rnd.gauss(0.0, 0.001))
            if k == 1 and c % 3 == 0:
                dvel = (math.nan, 0.0, 0.0)
            samples.append(ImuSample(t if k != 2 or c % 4 != 1 else t - 3 * DT_US, DT_US, dvel, dang))
        pose = PoseSample(t, (0.1 * c, 0.0, 0.0), (0.0, 0.0, 0.002 * c))
        for node, group in groups:
            for s in samples:
                group.on_imu(s)
            group._predict(t)
            group.on_pose(pose)
            group._aiding(t)
    (node_p, packed), (node_o, obj) = groups
    assert packed.report() == obj.report()
    assert packed.dropped_samples > 0 and packed.rejected_samples > 0
    assert packed.report()["estimator"]["rejected"] > 0
    assert packed.estimator.eskf.get_state() == obj.estimator.eskf.get_state()
    assert node_p.watchdog.report() == node_o.watchdog.report()


class LooseImu:
    """A duck-typed IMU sample (lists, float times): left to the pure packer by the Cython one."""

    def __init__(self, time_us, dt_us, dvel, dang):
        self.time_us = time_us
        self.dt_us = dt_us
        self.dvel_body_mps = dvel
        self.dang_body_rad = dang


def test_cython_pack_imu_writes_what_the_pure_one_writes():
    if "cython" not in IMPLS:
        pytest.skip("cython_ext not built")
    from cython_ext import eskf as cy

    assert make_eskf(impl="cython").pack_imu is cy.pack_imu
    samples = [ImuSample(2 ** 53 + 2, 10000, (0.1, -0.2, 0.3), (1e-300, 2.5, -3.0)),   # exact as a double
               ImuSample(7, 3, (math.nan, 0.0, 0.0), (0.0, 0.0, 0.0)),
               ImuSample(8, 3, (0.0, 0.0, 0.0), (0.0, -math.inf, 0.0)),
               LooseImu(9.5, 10000.25, [0.1, 0.2, 0.3], (1, 2, 3)),
               LooseImu(10, 10000, (1, 2, 3), [0.0, math.nan, 0.0])]
    for k, s in enumerate(samples):
        pure_buf, cy_buf = packed_buffer(len(samples)), packed_buffer(len(samples))
        finite_pure = pack_imu(pure_buf, k, s)
        assert cy.pack_imu(cy_buf, k, s) is finite_pure
        assert finite_pure == (k in (0, 3))
        assert [str(v) for v in cy_buf] == [str(v) for v in pure_buf]      # NaN-safe exact comparison
    for bad, error in ((LooseImu(1, 1, (0.0, "x", 0.0), (0.0, 0.0, 0.0)), ValueError),
                       (LooseImu(1, 1, (0.0, 0.0), (0.0, 0.0, 0.0)), ValueError),
                       (samples[0], IndexError)):
        buf = packed_buffer(1)
        for packer in (pack_imu, cy.pack_imu):
            with pytest.raises(error):
                packer(buf, 1 if error is IndexError else 0, bad)
        assert list(buf) == [0.0] * IMU_STRIDE
