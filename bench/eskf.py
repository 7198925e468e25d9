"""ESKF benchmark: per-call microseconds of predict, update and a 10 predict : 1 update cycle.

Implementations, measured side by side in one run on the same workload:
- ``pure``     onboard.estimators.eskf (the MicroPython-compatible path), on CPython;
- ``cython``   cython_ext.eskf (C kernels under the pure class), one ``predict`` call per IMU sample;
- ``cython_packed`` the same build fed as the runtime's predict rate group feeds it: the 10 IMU
  samples of a cycle in one ``predict_packed(buf, 10)`` call on the group's packed queue (a flat
  ``array('d')``, layout ``onboard.estimators.eskf_packed``), then ``update_pose``; the batched path the
  goals are checked on;
- ``cython_packed_default`` the packed path again on the baseline (SSE2) build of the C kernels, where
  the CPU runs the AVX2 build (x86-64 with GCC: ``cython_ext/eskf_kernels.h`` is compiled twice, the
  AVX2 build, no FMA, chosen at import; ``kernel_variant`` in the JSON says which one the other Cython
  rows ran); same bits, measured beside it to show what the AVX2 build gains;
- ``cython_batched`` the same 10 samples as ImuSample objects in one ``predict_many`` call, then
  ``update_pose`` (the object batched path);
- ``numpy``    onboard.estimators.eskf_numpy (dense 15x15 NumPy products);
- ``filterpy`` filterpy.kalman.KalmanFilter (the common Python choice) run on the *same*
  F, H, Q, R and innovations as the ESKF produced (its predict + Joseph-form update;
  F is assigned per step, the error state reset after each update);
- ``c``        bench/eskf_ref.c, the same algorithm in plain C, block-sparse, compiled
  here with ``gcc -O2`` into a temporary folder: the practical limit;
- ``micropython`` the pure path inside MicroPython 1.27 (WebAssembly under node),
  timed there with time.ticks_us.

Python implementations are called through their public API (``predict(ImuSample)``,
``predict_many([ImuSample, ...])`` or ``predict_packed(buf, count)``, ``update_pose(PoseSample)``).
What the timed regions hold, like with like: the sample objects are built before the clock starts, and so
are the packed rows (written with ``pack_imu`` from the same objects), as FilterPy gets its F matrices
built beforehand. Where the writing goes: ``runtime_objects`` / ``runtime_packed`` time the whole
runtime path, the ``PoseEstimation`` part on a ``Node`` over the Cython build: ``on_imu`` for each of
the 10 samples (finiteness check, queueing, for the packed queue writing the row; watchdog feed), the
predict rate group (``predict_many`` of the list, ``predict_packed`` of the packed queue), ``on_pose``
and the aiding group (``EskfPoseEstimator.update_pose``); the ImuSample objects built beforehand.
Workload: the ins-eskf dozer trajectory with the ag2u sensor-fusion noise, IMU 100 Hz, aiding 10 Hz; gating off so
every update does the full work. Timing is CPU time of this process (``time.process_time``;
the C reference uses CLOCK_PROCESS_CPUTIME_ID), so other processes on a loaded machine do
not count; the implementations are timed in interleaved short batches and each figure is
the best batch's mean per call (min of N: the least disturbed estimate; compare ratios from
one run). The goals (issue acceptance: FilterPy / ours >= 25x and ours / C <= 1.0 on the
batched path, the one-call path reported beside it) are written with whether each is met. The
C reference's final state is checked against the Cython build, the packed and object batched runs'
against the one-call run's and the two runtime paths' against each other (identical), FilterPy's
covariance against the pure path's. Writes
bench/results/eskf.json (bench/results_file.py).
"""
import argparse
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

from harness.sim.micropython import available as mp_available, onboard_files, run_micropython  # noqa: E402
from harness.sim.rng import RunRandom  # noqa: E402
from harness.scenarios.ins_eskf import filter_config  # noqa: E402
from harness.sim.sensors.ins_errors import ImuErrors, aiding_pose, initial_conditions, noise_setting  # noqa: E402
from harness.sim.trajectory import dozer_legs, generate  # noqa: E402
from onboard.core.samples import ImuSample, PoseSample  # noqa: E402
from onboard.estimators.eskf import N_STATE, make_config, make_eskf  # noqa: E402
from onboard.estimators.eskf_packed import pack_imu, packed_buffer  # noqa: E402
from onboard.estimators.eskf_pose import EskfPoseEstimator  # noqa: E402
from onboard.runtime.estimation import PoseEstimation  # noqa: E402
from onboard.runtime.node import Node  # noqa: E402
from results_file import judged_goal, write_results  # noqa: E402

C_SOURCE = os.path.join(REPO, "bench", "eskf_ref.c")
RATIO = 10                      # IMU samples per aiding update (100 Hz : 10 Hz)
N_CYCLES = 300                  # per timed batch, compiled implementations (cython, c)
N_CYCLES_SLOW = 30              # per timed batch, pure, numpy, filterpy
N_CYCLES_MP = 20                # inside MicroPython (one batch)
ROUNDS = 40                     # batches per implementation, interleaved; the best batch counts
GOALS = {"filterpy_over_ours_batched_min": 25.0, "ours_batched_over_c_max": 1.0}
BATCHED = "cython_packed"       # the batched path the goals are checked on
clock = time.process_time       # CPU time of this process: other agents' load on the host does not count


def make_workload(n_cycles, seed=1):
    """IMU samples, aiding poses (10:1), the initial filter state and the ESKF settings."""
    setting = noise_setting("sensor_fusion")
    duration_s = n_cycles * RATIO / 100.0
    traj = generate(dozer_legs(max(duration_s, 20.0)), 100)
    rnd = RunRandom(seed)
    dvel, dang = traj.clean_increments()
    dvel, dang = ImuErrors.draw(setting["imu"], rnd.stream("imu")).apply(dvel, dang, 0.01, rnd.stream("imu-noise"))
    cfg = filter_config(setting)
    cfg["gate_nis"] = 0.0
    cfg = make_config(cfg)              # every setting, as the filters see them
    imus = [ImuSample(int(traj.t_us[k + 1]), traj.dt_us, dvel[k].tolist(), dang[k].tolist())
            for k in range(n_cycles * RATIO)]
    aid = rnd.stream("aiding")
    poses = []
    for c in range(n_cycles):
        k = (c + 1) * RATIO
        pos, euler = aiding_pose(traj.pos_ned_m[k], traj.euler_rad[k], setting, aid)
        poses.append(PoseSample(int(traj.t_us[k]), pos, euler))
    pos0, vel0, euler0, _ = initial_conditions(traj.pos_ned_m[0], traj.vel_ned_mps[0], traj.euler_rad[0],
                                               setting, rnd.stream("ic"))
    f = make_eskf(cfg, impl="pure")
    f.initialize(0, pos0, vel0, euler0)
    return imus, poses, f.get_state(), cfg


def _best(best, key, value):
    best[key] = min(best.get(key, float("inf")), value)


def fresh_samples(samples):
    """New sample objects equal to ``samples``: every timed call sees an object it has not seen,
    as in a running system (CPython 3.11 builds an instance's attribute dict lazily)."""
    return [type(s)(**s.as_dict()) for s in samples]


def packed_rows(samples):
    """The packed rows of ``samples`` (``array('d')``, layout onboard.estimators.eskf_packed)."""
    buf = packed_buffer(len(samples))
    for k, s in enumerate(samples):
        pack_imu(buf, k, s)
    return buf


def time_python(impl, cfg, imus, poses, state, best, batched=None):
    """One timed batch of predict-only, update-only and 10:1 cycles; keeps the best per call in ``best``.

    batched: None, one ``predict`` call per sample; "objects", the IMU samples go in through
    ``predict_many`` (all at once for the predict-only figure, the RATIO samples of each cycle at once in
    the cycle); "packed", the same through ``predict_packed`` of packed rows written beforehand, as the
    runtime's predict rate group hands over its queue. Returns the filter state after the cycles.
    """
    def fresh_filter():
        f = make_eskf(cfg, impl=impl)
        f.set_state(state)
        return f

    f = fresh_filter()
    batch = fresh_samples(imus)
    if batched == "packed":
        rows = packed_rows(batch)
        predict_packed = f.predict_packed
        t0 = clock()
        predict_packed(rows, len(batch))
    elif batched == "objects":
        predict_many = f.predict_many
        t0 = clock()
        predict_many(batch)
    else:
        predict = f.predict
        t0 = clock()
        for s in batch:
            predict(s)
    _best(best, "predict_us", (clock() - t0) * 1e6 / len(imus))
    f = fresh_filter()
    update = f.update_pose
    batch = fresh_samples(poses)
    t0 = clock()
    for p in batch:
        update(p)
    _best(best, "update_us", (clock() - t0) * 1e6 / len(poses))
    f = fresh_filter()
    predict = f.predict
    predict_many = f.predict_many
    predict_packed = f.predict_packed
    update = f.update_pose
    batch = fresh_samples(imus)
    chunks = [batch[k * RATIO:(k + 1) * RATIO] for k in range(len(poses))]
    packed = [packed_rows(chunk) for chunk in chunks]
    batch_poses = fresh_samples(poses)
    if batched == "packed":
        t0 = clock()
        for rows, p in zip(packed, batch_poses):
            predict_packed(rows, RATIO)
            update(p)
    elif batched == "objects":
        t0 = clock()
        for chunk, p in zip(chunks, batch_poses):
            predict_many(chunk)
            update(p)
    else:
        t0 = clock()
        for chunk, p in zip(chunks, batch_poses):
            for s in chunk:
                predict(s)
            update(p)
    _best(best, "cycle_us", (clock() - t0) * 1e6 / len(poses))
    return f.get_state()


def time_runtime(cfg, imus, poses, state, best, packed):
    """One timed batch of 10:1 cycles through the runtime's PoseEstimation part on a Node (Cython build):
    ``on_imu`` per sample, the predict group, ``on_pose``, the aiding group; ``packed`` picks the queue
    (the packed one feeding ``predict_packed``, else the list feeding ``predict_many``)."""
    est = EskfPoseEstimator(cfg, impl="cython")
    est.eskf.set_state(state)
    if not packed:
        est.predict_packed = None               # the runtime then keeps its list of ImuSample objects
    group = Node("bench").add("estimation", PoseEstimation(est, 100, 10, 10 ** 12, 10 ** 12))
    assert (group._imu_packed is not None) == packed
    batch = fresh_samples(imus)
    chunks = [batch[k * RATIO:(k + 1) * RATIO] for k in range(len(poses))]
    batch_poses = fresh_samples(poses)
    on_imu, predict_group, on_pose, aiding_group = group.on_imu, group._predict, group.on_pose, group._aiding
    t0 = clock()
    for chunk, p in zip(chunks, batch_poses):
        for s in chunk:
            on_imu(s)
        predict_group(p.time_us)
        on_pose(p)
        aiding_group(p.time_us)
    _best(best, "cycle_us", (clock() - t0) * 1e6 / len(poses))
    return est.eskf.get_state()


def filterpy_inputs(cfg, imus, poses, state):
    """The F of every IMU step, Q, H, R and the innovations, from a pure-path run of the 10:1 cycle."""
    f = make_eskf(cfg, impl="pure")
    f.set_state(state)
    Fs, zs = [], []
    k = 0
    dt = imus[0].dt_us * 1e-6
    for p in poses:
        for _ in range(RATIO):
            s = imus[k]
            k += 1
            ba = np.array(f.accel_bias_mps2)
            f.predict(s)
            R = np.array(f.get_state()["D_ned_to_body"]).reshape(3, 3).T
            dv = R @ (np.array(s.dvel_body_mps) - ba * dt)
            F = np.eye(N_STATE)
            F[0:3, 6:9] = np.eye(3) * dt
            F[3:6, 12:15] = -R * dt
            F[6:9, 3:6] = [[0.0, dv[2], -dv[1]], [-dv[2], 0.0, dv[0]], [dv[1], -dv[0], 0.0]]
            F[6:9, 9:12] = -R * dt
            Fs.append(F)
        f.update_pose(p)
        zs.append(np.array(f.last_innovation).reshape(6, 1))
    qa = cfg["accel_noise_mps_per_sqrt_s"] ** 2 * dt
    Q = np.zeros((N_STATE, N_STATE))
    for i in range(3):
        Q[i, i] = qa * dt * dt
        Q[i, 6 + i] = Q[6 + i, i] = qa * dt
        Q[6 + i, 6 + i] = qa
        Q[3 + i, 3 + i] = cfg["gyro_noise_rad_per_sqrt_s"] ** 2 * dt
        Q[9 + i, 9 + i] = cfg["accel_bias_walk_mps2_per_sqrt_s"] ** 2 * dt
        Q[12 + i, 12 + i] = cfg["gyro_bias_walk_radps_per_sqrt_s"] ** 2 * dt
    H = np.zeros((6, N_STATE))
    H[:, 0:6] = np.eye(6)
    Rm = np.diag([v * v for v in cfg["pose_pos_sigma_m"] + cfg["pose_att_sigma_rad"]])
    return Fs, Q, H, Rm, zs


class FilterPyRun:
    """filterpy.kalman.KalmanFilter on the ESKF's own F, Q, H, R and innovations."""

    def __init__(self, cfg, imus, poses, state):
        self.Fs, self.Q, self.H, self.Rm, self.zs = filterpy_inputs(cfg, imus, poses, state)
        self.P0 = np.array(state["P"]).reshape(N_STATE, N_STATE)
        self.P_final = None

    def fresh(self):
        from filterpy.kalman import KalmanFilter

        kf = KalmanFilter(dim_x=N_STATE, dim_z=6)
        kf.x = np.zeros((N_STATE, 1))
        kf.P = self.P0.copy()
        kf.Q = self.Q
        kf.H = self.H
        kf.R = self.Rm
        return kf

    def time_batch(self, best):
        Fs, zs = self.Fs, self.zs
        kf = self.fresh()
        t0 = clock()
        for F in Fs:
            kf.F = F
            kf.predict()
        _best(best, "predict_us", (clock() - t0) * 1e6 / len(Fs))
        kf = self.fresh()
        t0 = clock()
        for z in zs:
            kf.update(z)
            kf.x[:] = 0.0
        _best(best, "update_us", (clock() - t0) * 1e6 / len(zs))
        kf = self.fresh()
        t0 = clock()
        k = 0
        for z in zs:
            for _ in range(RATIO):
                kf.F = Fs[k]
                k += 1
                kf.predict()
            kf.update(z)
            kf.x[:] = 0.0                  # error-state reset after injection
        _best(best, "cycle_us", (clock() - t0) * 1e6 / len(zs))
        self.P_final = kf.P


class CReference:
    """bench/eskf_ref.c compiled with gcc -O2 in a temporary folder, fed the workload as a file."""

    def __init__(self, tmp, cfg, imus, poses, state):
        self.error = None
        self.exe = os.path.join(tmp, "eskf_ref")
        self.path = os.path.join(tmp, "workload.bin")
        self.final = None
        gcc = shutil.which("gcc")
        if gcc is None:
            self.error = "gcc not found"
            return
        proc = subprocess.run([gcc, "-O2", "-std=c99", "-D_POSIX_C_SOURCE=199309L", "-o", self.exe, C_SOURCE,
                               "-lm"], capture_output=True, text=True)
        if proc.returncode != 0:
            self.error = "gcc failed: " + proc.stderr[-2000:]
            return
        write_workload(self.path, cfg, imus, poses, state)

    def time_batch(self, best, repeats=3):
        proc = subprocess.run([self.exe, self.path, str(repeats)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError("eskf_ref failed: " + proc.stderr[-2000:])
        res = json.loads(proc.stdout)
        for key in ("predict_us", "update_us", "cycle_us"):
            _best(best, key, res[key])
        self.final = res


def write_workload(path, cfg, imus, poses, state):
    """The binary workload eskf_ref.c reads (layout in its header comment)."""
    r = [v * v for v in cfg["pose_pos_sigma_m"] + cfg["pose_att_sigma_rad"]]
    # the same per-second variances the Python builds use (products, not pow)
    header = [cfg["gravity_mps2"]] + [cfg[k] * cfg[k] for k in (
        "accel_noise_mps_per_sqrt_s", "gyro_noise_rad_per_sqrt_s", "accel_bias_walk_mps2_per_sqrt_s",
        "gyro_bias_walk_radps_per_sqrt_s")] + [cfg["gate_nis"]] + r
    st = (state["pos_ned_m"] + state["vel_ned_mps"] + state["D_ned_to_body"] + state["accel_bias_mps2"]
          + state["gyro_bias_radps"] + state["P"])
    with open(path, "wb") as fh:
        fh.write(struct.pack("<3i", len(imus), len(poses), RATIO))
        fh.write(struct.pack("<12d", *header))
        fh.write(struct.pack("<%dd" % len(st), *st))
        for s in imus:
            fh.write(struct.pack("<7d", s.dt_us * 1e-6, *s.dvel_body_mps, *s.dang_body_rad))
        for p in poses:
            fh.write(struct.pack("<6d", *p.pos_ned_m, *p.euler_rad))


MP_CODE = r"""
import time, json
from onboard.core.samples import ImuSample, PoseSample
from onboard.estimators.eskf import Eskf
f = Eskf(CFG)
f.set_state(STATE)
imus = [ImuSample(t, d, v, a) for (t, d, v, a) in IMUS]
poses = [PoseSample(t, p, e) for (t, p, e) in POSES]
t0 = time.ticks_us()
for s in imus:
    f.predict(s)
predict = time.ticks_diff(time.ticks_us(), t0) / len(imus)
t0 = time.ticks_us()
for p in poses:
    f.update_pose(p)
update = time.ticks_diff(time.ticks_us(), t0) / len(poses)
f.set_state(STATE)
t0 = time.ticks_us()
k = 0
for p in poses:
    for j in range(RATIO):
        f.predict(imus[k])
        k += 1
    f.update_pose(p)
cycle = time.ticks_diff(time.ticks_us(), t0) / len(poses)
print("RESULT " + json.dumps({"predict_us": predict, "update_us": update, "cycle_us": cycle,
                              "pos_ned_m": f.get_state()["pos_ned_m"], "P0": f.get_state()["P"][0]}))
"""


def run_mp(cfg, imus, poses, state):
    if not mp_available():
        return None, "MicroPython (node + npm package) not installed"
    imus = imus[:N_CYCLES_MP * RATIO]
    poses = poses[:N_CYCLES_MP]
    code = ("CFG = %r\nSTATE = %r\nRATIO = %d\nIMUS = %r\nPOSES = %r\n" % (
        cfg, state, RATIO, [(s.time_us, s.dt_us, s.dvel_body_mps, s.dang_body_rad) for s in imus],
        [(p.time_us, p.pos_ned_m, p.euler_rad) for p in poses])) + MP_CODE
    out = run_micropython(code, onboard_files(), timeout_s=600)
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):]), None
    return None, "no result from MicroPython: " + out[-500:]


def _max_rel_diff(a, b):
    worst = 0.0
    for key in ("pos_ned_m", "vel_ned_mps", "D_ned_to_body", "accel_bias_mps2", "gyro_bias_radps", "P"):
        for x, y in zip(a[key], b[key]):
            worst = max(worst, abs(x - y) / max(1.0, abs(x)))
    return worst


def _goal(value, limit, kind, why=None):
    """results_file.judged_goal of value >= limit (kind "min") or <= limit ("max"); ``why`` a row not run."""
    return judged_goal(value, ">=" if kind == "min" else "<=", limit, why or "not measured")


NAMES = ("c", "cython_packed", "cython_packed_default", "cython_batched", "cython", "numpy", "filterpy", "pure")
RUNTIME_NAMES = ("runtime_packed", "runtime_objects")


def cython_kernels():
    """cython_ext.eskf (the kernel builds it offers), or None where it is not built."""
    try:
        import cython_ext.eskf as module
    except ImportError:
        return None
    return module


def filterpy_available():
    """None where filterpy imports here, else why not (the FilterPy row is then skipped)."""
    try:
        import filterpy.kalman  # noqa: F401
    except ImportError as exc:
        return "filterpy not installed (%s): the FilterPy row and the FilterPy goal are skipped" % exc
    return None


def _over(a, b):
    """a / b, or None where either was not measured."""
    return a / b if a is not None and b else None


def main():
    kernels = cython_kernels()
    if kernels is None:
        raise SystemExit("eskf: cython_ext.eskf is not built (run `make setup`): the Cython rows, which the goals "
                         "are judged on, cannot run; nothing written")
    variant = kernels.kernel_variant()          # the build chosen at import: every Cython row runs it
    other = "default" if variant != "default" else None
    imus, poses, state, cfg = make_workload(N_CYCLES)
    slow_imus, slow_poses = imus[:N_CYCLES_SLOW * RATIO], poses[:N_CYCLES_SLOW]
    per = {name: {} for name in NAMES}
    if other is None:
        del per["cython_packed_default"]
        notes_default = "the CPU runs only the baseline build: cython_packed is it"
    runtime = {name: {} for name in RUNTIME_NAMES}
    notes = {}
    fp_missing = filterpy_available()
    fp = FilterPyRun(cfg, slow_imus, slow_poses, state) if fp_missing is None else None
    if fp_missing is not None:
        del per["filterpy"]
        notes["filterpy"] = fp_missing
        print("eskf: " + fp_missing)
    finals = {}
    with tempfile.TemporaryDirectory(prefix="eskf_bench_") as tmp:
        cref = CReference(tmp, cfg, imus, poses, state)
        if cref.error:
            notes["c"] = cref.error
            del per["c"]
        if other is None:
            notes["cython_packed_default"] = notes_default
        for _ in range(ROUNDS):                   # interleaved, so load changes hit every implementation
            if cref.error is None:
                cref.time_batch(per["c"])
            finals["cython_packed"] = time_python("cython", cfg, imus, poses, state, per["cython_packed"],
                                                  batched="packed")
            if other is not None:
                kernels.use_kernel_variant(other)
                finals["cython_packed_default"] = time_python("cython", cfg, imus, poses, state,
                                                              per["cython_packed_default"], batched="packed")
                kernels.use_kernel_variant(variant)
            finals["cython_batched"] = time_python("cython", cfg, imus, poses, state, per["cython_batched"],
                                                   batched="objects")
            for name in RUNTIME_NAMES:
                finals[name] = time_runtime(cfg, imus, poses, state, runtime[name], name == "runtime_packed")
            finals["cython"] = time_python("cython", cfg, imus, poses, state, per["cython"])
            finals["numpy"] = time_python("numpy", cfg, slow_imus, slow_poses, state, per["numpy"])
            finals["pure"] = time_python("pure", cfg, slow_imus, slow_poses, state, per["pure"])
            if fp is not None:
                fp.time_batch(per["filterpy"])
    if cref.final is not None:
        notes["c_final_state_max_rel_diff_vs_cython"] = _max_rel_diff(finals["cython"], cref.final)
    notes["cython_batched_final_state_identical_to_one_call"] = finals["cython_batched"] == finals["cython"]
    notes["cython_packed_final_state_identical_to_one_call"] = finals["cython_packed"] == finals["cython"]
    if other is not None:
        notes["cython_packed_default_final_state_identical_to_cython_packed"] = (finals["cython_packed_default"]
                                                                                 == finals["cython_packed"])
    notes["runtime_packed_final_state_identical_to_runtime_objects"] = (finals["runtime_packed"]
                                                                        == finals["runtime_objects"])
    notes["numpy_final_state_max_rel_diff_vs_pure"] = _max_rel_diff(finals["pure"], finals["numpy"])
    if fp is not None:
        notes["filterpy_final_P_max_abs_diff_vs_pure"] = float(
            np.abs(fp.P_final - np.array(finals["pure"]["P"]).reshape(N_STATE, N_STATE)).max())
    mp, err = run_mp(cfg, imus, poses, state)
    if mp is not None:
        per["micropython"] = {k: mp[k] for k in ("predict_us", "update_us", "cycle_us")}
    else:
        notes["micropython"] = err

    us_per_cycle = {k: v["cycle_us"] for k, v in per.items()}
    c_cycle = us_per_cycle.get("c")
    fp_cycle = us_per_cycle.get("filterpy")
    ratios = {
        "filterpy_over_cython_packed": _over(fp_cycle, us_per_cycle["cython_packed"]),
        "filterpy_over_cython_batched": _over(fp_cycle, us_per_cycle["cython_batched"]),
        "filterpy_over_cython": _over(fp_cycle, us_per_cycle["cython"]),
        "cython_packed_over_c": us_per_cycle["cython_packed"] / c_cycle if c_cycle else None,
        "cython_batched_over_c": us_per_cycle["cython_batched"] / c_cycle if c_cycle else None,
        "cython_over_c": us_per_cycle["cython"] / c_cycle if c_cycle else None,
        "cython_batched_over_cython_packed": us_per_cycle["cython_batched"] / us_per_cycle["cython_packed"],
        "cython_over_cython_packed": us_per_cycle["cython"] / us_per_cycle["cython_packed"],
        "pure_over_cython_packed": us_per_cycle["pure"] / us_per_cycle["cython_packed"],
        "filterpy_over_c": _over(fp_cycle, c_cycle),
        "runtime_objects_over_runtime_packed": (runtime["runtime_objects"]["cycle_us"]
                                                / runtime["runtime_packed"]["cycle_us"]),
        "cython_packed_default_over_cython_packed": (us_per_cycle["cython_packed_default"]
                                                     / us_per_cycle["cython_packed"] if other else None),
    }
    goals = {
        "filterpy_over_ours_batched": _goal(ratios["filterpy_over_" + BATCHED],
                                            GOALS["filterpy_over_ours_batched_min"], "min", notes.get("filterpy")),
        "ours_batched_over_c": _goal(ratios[BATCHED + "_over_c"], GOALS["ours_batched_over_c_max"], "max",
                                     notes.get("c")),
        "batched_path": BATCHED,
        "beside_it": {"object_batched": {"filterpy_over_cython_batched": ratios["filterpy_over_cython_batched"],
                                         "cython_batched_over_c": ratios["cython_batched_over_c"]},
                      "one_call": {"filterpy_over_cython": ratios["filterpy_over_cython"],
                                   "cython_over_c": ratios["cython_over_c"]}},
    }
    results = {
        "us_per_cycle": us_per_cycle,
        "us_per_predict": {k: v["predict_us"] for k, v in per.items()},
        "us_per_update": {k: v["update_us"] for k, v in per.items()},
        "runtime_us_per_cycle": {k: v["cycle_us"] for k, v in runtime.items()},
        "timed_regions": {
            "cython_packed": "predict_packed(rows, 10) + update_pose(pose) per cycle; the rows written with "
                             "pack_imu before the clock starts (as the objects of the object paths are built)",
            "cython_packed_default": "as cython_packed, on the baseline build of the kernels",
            "cython_batched": "predict_many(10 ImuSample) + update_pose(pose); objects built beforehand",
            "cython": "10 x predict(ImuSample) + update_pose(pose); objects built beforehand",
            "filterpy": "10 x (kf.F = F; kf.predict()) + kf.update(z) + error-state reset; F, z built beforehand",
            "runtime_packed / runtime_objects": "the runtime path of a cycle: 10 x on_imu (finiteness check, "
                                                "queueing incl. writing the packed row, watchdog feed) + predict "
                                                "group + on_pose + aiding group (EskfPoseEstimator), Cython "
                                                "build; ImuSample objects built beforehand",
        },
        "ratios": ratios,
        "goals": goals,
        "kernel_variant": variant,
        "kernel_variants_available": list(kernels.KERNEL_VARIANTS),
        "all_goals_met": goals["filterpy_over_ours_batched"]["met"] and goals["ours_batched_over_c"]["met"],
        "notes": notes,
        "workload": {"cycles_per_batch": {"cython": N_CYCLES, "cython_batched": N_CYCLES, "c": N_CYCLES,
                                          "cython_packed": N_CYCLES, "cython_packed_default": N_CYCLES, "runtime_packed": N_CYCLES,
                                          "runtime_objects": N_CYCLES,
                                          "pure": N_CYCLES_SLOW, "numpy": N_CYCLES_SLOW,
                                          "filterpy": N_CYCLES_SLOW, "micropython": N_CYCLES_MP},
                     "batches": ROUNDS,
                     "statistic": "best batch (min of per-call means), interleaved rounds; CPU time of the "
                                  "process (time.process_time / CLOCK_PROCESS_CPUTIME_ID), MicroPython: ticks_us",
                     "imu_per_update": RATIO, "imu_rate_hz": 100, "aiding_rate_hz": 10, "gating": "off",
                     "trajectory": "ins-eskf dozer legs, ag2u sensor-fusion noise"},
        "machine": {"python": platform.python_version(), "processor": platform.machine(),
                    "cpus": os.cpu_count()},
    }
    if "micropython" in us_per_cycle:
        results["micropython_over_pure"] = us_per_cycle["micropython"] / us_per_cycle["pure"]

    print("ESKF, 15 states, 6-D pose aiding; IMU 100 Hz : aiding 10 Hz (best of %d interleaved batches, "
          "CPU microseconds)" % ROUNDS)
    print("%-21s %11s %11s %14s %9s %12s" % ("impl", "predict", "update", "10:1 cycle", "x C", "FilterPy/x"))
    for name in NAMES + ("micropython",):
        if name not in per:
            print("%-21s  (not run: %s)" % (name, notes.get(name, "")))
            continue
        v = per[name]
        xc = v["cycle_us"] / c_cycle if c_cycle else float("nan")
        fpx = fp_cycle / v["cycle_us"] if fp_cycle else float("nan")
        print("%-21s %11.3f %11.3f %14.3f %9.2f %12.2f" % (name, v["predict_us"], v["update_us"], v["cycle_us"], xc,
                                                        fpx))
    for name in RUNTIME_NAMES:
        print("%-21s %11s %11s %14.3f   (runtime path: entry points + rate groups)" % (
            name, "", "", runtime[name]["cycle_us"]))
    print("C kernels of the Cython rows: %s build (available here: %s)" % (
        variant, ", ".join(kernels.KERNEL_VARIANTS)))
    print("batched path (goals): %s" % BATCHED)
    for key in ("filterpy_over_ours_batched", "ours_batched_over_c"):
        g = goals[key]
        value = "n/a" if g["value"] is None else "%.2f" % g["value"]
        print("%-28s = %s (goal %s): %s" % (key, value, g["goal"], "met" if g["met"] else "NOT met"))

    def fmt(v):
        return "n/a" if v is None else "%.2f" % v
    print("beside it: object batched filterpy_over = %s, over_c = %s; one call filterpy_over = %s, over_c = %s" % (
        fmt(ratios["filterpy_over_cython_batched"]), fmt(ratios["cython_batched_over_c"]),
        fmt(ratios["filterpy_over_cython"]), fmt(ratios["cython_over_c"])))
    print("runtime path: objects / packed = %.2f" % ratios["runtime_objects_over_runtime_packed"])
    for k, v in notes.items():
        print("%s: %s" % (k, v))
    write_results("eskf", results)


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
