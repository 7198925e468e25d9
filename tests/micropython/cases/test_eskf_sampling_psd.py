"""onboard.estimators.eskf_sampling: a covariance with a zero-variance direction that still covaries clearly with
another (not positive semi-definite) raises SamplingError. Before: the zero pivot's column was skipped, the
covariance dropped silently, and poses were drawn from a matrix that is no covariance. Zero-variance directions of a
real covariance still draw no spread. Runs under CPython (pytest) and inside MicroPython."""
from onboard.estimators.eskf_sampling import SamplingError, psd_factor, sample_poses

X_EST = [1.0, 2.0, 0.0, 0.0, 0.0, 0.5]


class _Uniforms:
    """Seeded uniforms in [0, 1) through ``random()`` (MicroPython's random module has no Random class)."""

    def __init__(self, seed):
        self.state = seed * 2654435761 % 4294967296 or 1

    def random(self):
        self.state = (1664525 * self.state + 1013904223) % 4294967296
        return self.state / 4294967296.0


def _cov(diag, pairs=()):
    c = [0.0] * 36
    for i, v in enumerate(diag):
        c[i * 6 + i] = v
    for i, j, v in pairs:
        c[i * 6 + j] = v
        c[j * 6 + i] = v
    return c


def test_a_zero_variance_direction_that_covaries_is_refused():
    for cov in (_cov([0.0, 1.0, 1.0, 1e-4, 1e-4, 1e-4], [(0, 1, 0.5)]),
                _cov([1.0, 1.0, 0.0, 1e-4, 1e-4, 1e-4], [(2, 5, 1e-3)]),
                _cov([1.0, 1.0, 1.0, 1e-4, 1e-4, 1e-4], [(0, 1, 1.0), (0, 2, 0.5)])):
        try:
            sample_poses(X_EST, cov, 3, _Uniforms(1))
            raised = False
        except SamplingError:
            raised = True
        assert raised


def test_real_covariances_with_zero_spread_directions_are_taken():
    cov = _cov([0.0, 0.04, 0.0, 1e-4, 0.0, 2e-4], [(1, 5, 5e-5)])
    low = psd_factor(cov, 6)
    assert low[0] == 0.0 and low[2 * 6 + 2] == 0.0
    for pose in sample_poses(X_EST, cov, 20, _Uniforms(2)):
        assert pose[0] == 1.0 and pose[2] == 0.0               # no spread north or down
    # a rank-one covariance: the second direction is fully correlated with the first
    rank1 = _cov([1.0, 4.0, 0.0, 0.0, 0.0, 0.0], [(0, 1, 2.0)])
    for pose in sample_poses(X_EST, rank1, 10, _Uniforms(3)):
        assert abs((pose[1] - 2.0) - 2.0 * (pose[0] - 1.0)) < 1e-9
