"""Packed IMU samples: the flat ``array('d')`` layout of the runtime's IMU queue (pure, runs on MicroPython).

One sample is ``IMU_STRIDE`` consecutive doubles, the fields of ``onboard.core.samples.ImuSample``
in order (q_v and q_t of ag2u eqs. 2a-2b)::

    [time_us, dt_us, dvel_x, dvel_y, dvel_z (body FRD, m/s), dang_x, dang_y, dang_z (body FRD, rad)]

Times are integer microseconds held as doubles (exact up to 2**53 us, about 285 years; beyond it only the
whole numbers a double holds exactly are taken, see :func:`pack_imu`). Sample k starts
at ``k * IMU_STRIDE``. Written by :func:`pack_imu` (the runtime's ``on_imu`` entry point) and read by
``Eskf.predict_packed(buf, count)`` on every implementation.
"""
from array import array

IMU_TIME_US = 0
IMU_DT_US = 1
IMU_DVEL_BODY_MPS = 2     # x, y, z at IMU_DVEL_BODY_MPS + 0, 1, 2
IMU_DANG_BODY_RAD = 5     # x, y, z at IMU_DANG_BODY_RAD + 0, 1, 2
IMU_STRIDE = 8            # doubles per sample
EXACT_US = 9007199254740992.0   # 2**53: every whole number of us up to it is a double (and 2**53 + 1 rounds to it)


def _rounded(x, v):
    """True when ``v`` is a whole number that its double ``x = float(v)`` does not hold exactly."""
    if x - x != 0.0 or isinstance(v, float):
        return False
    try:
        return int(v) == v and int(x) != v
    except (TypeError, ValueError, OverflowError):
        return False


def packed_buffer(n_samples):
    """A zeroed ``array('d')`` for ``n_samples`` packed IMU samples (allocated once by its owner)."""
    return array("d", [0.0] * (n_samples * IMU_STRIDE))


def pack_imu(buf, k, sample):
    """Write ImuSample ``sample`` into slot ``k`` of ``buf``; True when every value written is finite
    (what ``sample.is_finite()`` says of an ImuSample; a non-finite row is written all the same).

    Raises ValueError for a field that is not a number, a vector that is not 3 numbers, or a whole-number
    ``time_us`` / ``dt_us`` beyond 2**53 us that a double cannot hold exactly (it would be read back as
    another time, e.g. 2**53 + 1 as 2**53); IndexError when slot ``k`` is past the end; ``buf`` is
    unchanged in every case. The Cython build (``cython_ext.eskf.pack_imu``, offered as
    ``Eskf.pack_imu``) writes the same values and raises the same errors.
    """
    b = k * IMU_STRIDE
    if k < 0 or b + IMU_STRIDE > len(buf):
        raise IndexError("packed IMU buffer has no slot %d" % k)
    dvel = sample.dvel_body_mps
    dang = sample.dang_body_rad
    try:
        if len(dvel) != 3 or len(dang) != 3:
            raise ValueError("IMU sample vectors must have 3 entries")
        t = float(sample.time_us)
        dt = float(sample.dt_us)
        v0 = float(dvel[0])
        v1 = float(dvel[1])
        v2 = float(dvel[2])
        a0 = float(dang[0])
        a1 = float(dang[1])
        a2 = float(dang[2])
    except (TypeError, OverflowError):
        raise ValueError("IMU sample fields must be numbers and 3-vectors")
    if ((t >= EXACT_US or t <= -EXACT_US) and _rounded(t, sample.time_us)) or (
            (dt >= EXACT_US or dt <= -EXACT_US) and _rounded(dt, sample.dt_us)):
        raise ValueError("IMU sample time_us=%r / dt_us=%r: a whole number of us beyond 2**53 that a double "
                         "cannot hold exactly" % (sample.time_us, sample.dt_us))
    buf[b + IMU_TIME_US] = t
    buf[b + IMU_DT_US] = dt
    buf[b + IMU_DVEL_BODY_MPS] = v0
    buf[b + IMU_DVEL_BODY_MPS + 1] = v1
    buf[b + IMU_DVEL_BODY_MPS + 2] = v2
    buf[b + IMU_DANG_BODY_RAD] = a0
    buf[b + IMU_DANG_BODY_RAD + 1] = a1
    buf[b + IMU_DANG_BODY_RAD + 2] = a2
    # x - x is 0.0 for a finite x, NaN for NaN and +-inf: the sum is 0.0 only when all eight are finite
    return ((t - t) + (dt - dt) + (v0 - v0) + (v1 - v1) + (v2 - v2) + (a0 - a0) + (a1 - a1) + (a2 - a2)) == 0.0
