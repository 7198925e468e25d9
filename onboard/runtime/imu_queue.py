"""The predict rate group's queue of IMU samples, packed (pure, runs on MicroPython).

A flat ``array('d')`` allocated once for ``limit`` samples in the layout of
``onboard.estimators.eskf_packed`` (time_us, dt_us, dvel_body_mps xyz, dang_body_rad xyz per sample),
filled in arrival order by :meth:`PackedImuQueue.push` and handed whole to an estimator's
``predict_packed(buf, count)``. Bounded as the object queue is: when full, the oldest sample is dropped.
"""
from onboard.estimators.eskf_packed import IMU_STRIDE, pack_imu, packed_buffer


QUEUED = 0         # outcomes of PackedImuQueue.push
DROPPED_OLDEST = 1
NOT_FINITE = 2


class PackedImuQueue:
    """``buf`` holds ``count`` packed samples, oldest first (capacity ``limit``).

    pack: ``pack(buf, k, sample) -> finite`` writing one sample (``eskf_packed.pack_imu``, or an
    estimator's compiled one with the same results)."""

    def __init__(self, limit, pack=pack_imu):
        self.limit = int(limit)
        if self.limit < 1:
            raise ValueError("IMU queue limit must be >= 1, got %d" % self.limit)
        self.buf = packed_buffer(self.limit)
        self.count = 0
        self._pack = pack
        self._row = packed_buffer(1)           # a full queue's incoming sample, packed before the shift

    def push(self, sample):
        """Append ImuSample ``sample``: QUEUED, DROPPED_OLDEST (the oldest sample dropped to make room) or
        NOT_FINITE (a NaN or infinite field: nothing queued).

        ValueError (queue unchanged) when the sample cannot be packed (``eskf_packed.pack_imu``)."""
        count = self.count
        if count < self.limit:
            if not self._pack(self.buf, count, sample):
                return NOT_FINITE              # written past ``count``: not in the queue
            self.count = count + 1
            return QUEUED
        row = self._row
        if not self._pack(row, 0, sample):     # raises before anything moved
            return NOT_FINITE
        buf = self.buf
        last = (self.limit - 1) * IMU_STRIDE
        for i in range(last):                  # drop the oldest (a rare path: the group fell behind)
            buf[i] = buf[i + IMU_STRIDE]
        for i in range(IMU_STRIDE):
            buf[last + i] = row[i]
        return DROPPED_OLDEST

    def clear(self):
        self.count = 0
