"""Part: an estimator fed by IMU and aiding-pose entry points (pure, runs on MicroPython).

Entry points called by drivers (real or simulated alike): ``on_imu(ImuSample)``,
``on_pose(PoseSample)`` (recorded on ``/app/in/imu`` and ``/app/in/aiding`` while the node records). Samples are queued (bounded: the oldest is dropped and counted)
and consumed by two rate groups:

- ``predict`` (imu_rate_hz): IMU samples -> ``estimator.predict``, or the whole queue at once to
  ``estimator.predict_packed(buf, count)`` where the estimator has one (the queue is then a flat
  ``array('d')`` written by ``on_imu``, :mod:`onboard.runtime.imu_queue`) or else to
  ``estimator.predict_many`` (same results; both return how many they refused)
- ``aiding`` (aiding_rate_hz): pose samples -> ``estimator.update_pose``

Watched inputs ``imu`` and ``aiding`` are fed with each accepted sample's time. A
non-finite sample (with the packed queue also one whose fields are no numbers) is rejected at the
entry point (never queued, never feeds the watchdog); a sample the estimator refuses
(:class:`EstimatorInputError`) is counted and the estimator keeps its state. The estimator is any object following
``onboard.estimators.base``.
"""
from onboard.estimators.base import EstimatorInputError
from onboard.estimators.eskf_packed import pack_imu
from onboard.runtime.imu_queue import DROPPED_OLDEST, NOT_FINITE, PackedImuQueue

IMU_INPUT = "imu"
AIDING_INPUT = "aiding"


class PoseEstimation:
    def __init__(self, estimator, imu_rate_hz, aiding_rate_hz, imu_timeout_us, aiding_timeout_us,
                 queue_limit=64):
        self.estimator = estimator
        self.imu_rate_hz = imu_rate_hz
        self.aiding_rate_hz = aiding_rate_hz
        self.imu_timeout_us = imu_timeout_us
        self.aiding_timeout_us = aiding_timeout_us
        self.queue_limit = queue_limit
        self._imu_queue = []
        # packed queue for an estimator that reads one (chosen once, here); else the list of samples
        # (written by the estimator's own pack_imu where it has one: the Cython build's reads in C)
        self._imu_packed = (PackedImuQueue(queue_limit, getattr(estimator, "pack_imu", None) or pack_imu)
                            if getattr(estimator, "predict_packed", None) is not None else None)
        self._pose_queue = []
        self.dropped_samples = 0
        self.rejected_samples = 0
        self._node = None
        self.on_imu = self._on_imu
        self.on_pose = self._on_pose

    def attach(self, node):
        self._node = node
        self.on_imu = node.entry(IMU_INPUT, self._on_imu)
        self.on_pose = node.entry(AIDING_INPUT, self._on_pose)
        node.watch(IMU_INPUT, self.imu_timeout_us)
        node.watch(AIDING_INPUT, self.aiding_timeout_us)
        node.every("predict", self.imu_rate_hz, self._predict)
        node.every("aiding", self.aiding_rate_hz, self._aiding)

    # ------------------------------------------------------------ driver entry points
    def _on_imu(self, sample):
        packed = self._imu_packed
        if packed is None:
            self._enqueue(self._imu_queue, sample, IMU_INPUT)
            return
        try:
            outcome = packed.push(sample)       # checks finiteness on the packed values (as is_finite)
        except ValueError:                      # a field that is no number: refused here, as non-finite ones
            outcome = NOT_FINITE
        if outcome == NOT_FINITE:
            self.rejected_samples += 1          # never fused, never feeds the watchdog
            return
        if outcome == DROPPED_OLDEST:
            self.dropped_samples += 1
        self._node.feed(IMU_INPUT, sample.time_us)

    def _on_pose(self, sample):
        self._enqueue(self._pose_queue, sample, AIDING_INPUT)

    def _enqueue(self, queue, sample, stream):
        if not sample.is_finite():
            self.rejected_samples += 1          # never fused, never feeds the watchdog
            return
        if len(queue) >= self.queue_limit:
            queue.pop(0)
            self.dropped_samples += 1
        queue.append(sample)
        self._node.feed(stream, sample.time_us)

    # ------------------------------------------------------------ rate groups
    def _predict(self, now_us):
        packed = self._imu_packed
        if packed is not None:                  # the packed queue in one call (returns the count refused)
            count = packed.count
            packed.clear()
            self.rejected_samples += self.estimator.predict_packed(packed.buf, count)
            return
        queue = self._imu_queue
        self._imu_queue = []
        predict_many = getattr(self.estimator, "predict_many", None)
        if predict_many is not None:            # the whole queue in one call (returns the count refused)
            self.rejected_samples += predict_many(queue)
            return
        for s in queue:
            try:
                self.estimator.predict(s)
            except EstimatorInputError:
                self.rejected_samples += 1

    def _aiding(self, now_us):
        queue = self._pose_queue
        self._pose_queue = []
        for s in queue:
            try:
                self.estimator.update_pose(s)
            except EstimatorInputError:
                self.rejected_samples += 1

    def report(self):
        return {"estimator": self.estimator.counters(), "rejected_samples": self.rejected_samples,
                "dropped_samples": self.dropped_samples}
