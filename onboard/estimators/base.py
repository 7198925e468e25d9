"""The one estimator contract: what every pose estimator fed by the runtime provides (pure).

The runtime (``onboard.runtime.estimation.PoseEstimation``, ``GroundRobotRuntime``) and the
harness talk to an estimator only through this interface, so any estimator below can stand
in for another. Plain duck typing (no ``abc``/``typing``: this module runs on MicroPython 1.27).

``initialized``
    bool (attribute or property): True once the estimator has a state to report (the first
    aiding pose initialises it).
``predict(imu)``
    propagate with one ``onboard.core.samples.ImuSample`` (increments over ``imu.dt_us``,
    ag2u eqs. 2a-2b). Returns True when propagated, False when ignored (before initialisation).
``update_pose(pose)``
    fuse one aiding ``onboard.core.samples.PoseSample`` (ag2u eq. 5b). Returns True when fused
    (or when it initialised / restarted the filter), False when gated as an outlier. Other
    aiding sources get their own ``update_*`` methods later (e.g. ``update_gnss``).
``nav_state()``
    ``onboard.core.samples.NavState`` at the last processed sample (NED position m, NED
    velocity m/s, Z-Y-X Euler attitude rad).
``pose_covariance()``
    flat row-major 3x3 covariance (a list of 9 floats, symmetric, diagonal >= 0) of the planar
    pose (north_m, east_m, yaw_rad), units m^2 / m rad / rad^2: Sigma of ag2u eq. 1. Element
    (i, j) is ``cov[i * POSE_DIM + j]`` with the slots ``POSE_NORTH``, ``POSE_EAST``,
    ``POSE_YAW`` below; :func:`pose_variances` reads its diagonal.
``counters()``
    dict with at least ``predicts``, ``updates``, ``gated`` (outliers not fused) and
    ``rejected`` (bad input refused); an estimator may add its own (``resets``, ...).

Bad input (non-finite or malformed samples, time going backwards, ...) raises
:class:`EstimatorInputError` (a ``ValueError``; an estimator may raise a subclass of it),
counts ``rejected`` and leaves the state untouched: ``nav_state()``, ``pose_covariance()``
and every other counter are as they were.

Who follows it, and how:

- ``onboard.estimators.planar_ekf.PlanarEkf`` (6-state planar EKF): directly.
- The 15-state ES-EKF (ag2u III-C) in its three implementations - pure
  (``onboard.estimators.eskf``), Cython (``cython_ext.eskf``), NumPy
  (``onboard.estimators.eskf_numpy``) - through the adapter
  ``onboard.estimators.eskf_pose.EskfPoseEstimator``. The bare ``Eskf`` has the same method
  names but its ``pose_covariance()`` is the 6x6 of (dp_ned_m, dpsi_ned_rad) and a non-positive
  definite innovation raises ``EskfNumericError``; the adapter projects the 6x6 to the 3x3 above
  and turns both errors into :class:`EstimatorInputError` (``EskfInputError`` is a subclass).
- ``onboard.estimators.particle_filter`` (a neighbour's relative pose from UWB ranges, pocket
  IV-B, pure/NumPy/Cython kernels) is not a pose estimator of this kind: it has one
  ``step(now_us, v_own, v_peer, range_m, draws, learned)`` instead of predict/update and keeps
  its own counters as attributes. It shares the error contract only: its ``PfInputError`` is
  a subclass of :class:`EstimatorInputError`, raised with the particles untouched.
"""

# Slots of the 3x3 pose covariance returned by pose_covariance() (no magic indexes elsewhere).
POSE_NORTH = 0          # north_m
POSE_EAST = 1           # east_m
POSE_YAW = 2            # yaw_rad
POSE_DIM = 3

# Counters every estimator's counters() reports.
COUNTER_KEYS = ("predicts", "updates", "gated", "rejected")


# Times (time_us, now_us) an estimator takes: a signed 64-bit integer. The Cython builds keep times in C
# ``long long`` fields, so a later time would be taken by the pure build and overflow in the compiled one; every
# build refuses it as bad input.
TIME_US_MIN = -(1 << 63)
TIME_US_MAX = (1 << 63) - 1


class EstimatorInputError(ValueError):
    """A sample handed to an estimator is malformed or non-finite; the state was not changed."""


def pose_variances(cov):
    """(var_north_m2, var_east_m2, var_yaw_rad2): the diagonal of a flat 3x3 pose covariance."""
    return (cov[POSE_NORTH * POSE_DIM + POSE_NORTH], cov[POSE_EAST * POSE_DIM + POSE_EAST],
            cov[POSE_YAW * POSE_DIM + POSE_YAW])
