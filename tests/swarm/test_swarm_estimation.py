"""Relative-pose conventions end to end: simulator truth == particle-filter motion model, and the
filter converges to the true relative pose when its inputs are right (pocket IV-B).

These are the checks that tell a frame/sign mismatch (own vs neighbour frame, yaw sign, velocity
frames, error metric) apart from a weak learned estimator: with exact ranges and a perfect
learned estimate the hybrid filter must sit on the truth; with exact ranges and exciting
motion the pure filter must find it on its own.
"""
import math

import numpy as np
import pytest

from harness.sim.swarm_arena import SwarmBatch, relative_pose_body, rot, to_body
from onboard import impl as impl_switch
from onboard.estimators import particle_filter as pf
from onboard.estimators.particle_filter_numpy import NumpyDraws

BIAS_M = pf.UWB_RANGE_BIAS_M


def _flight(seed, steps, frame_skip=5, arena_m=4.0):
    """Two drones under random accelerations: per period truth (x, y, rel_yaw) of 1 in 0's frame,
    body velocities of both, true range. Random yaws, so frames differ."""
    rng = np.random.default_rng(seed)
    sim = SwarmBatch(1, 2, rng, {"arena_m": arena_m, "frame_skip": frame_skip})
    sim.pos[0] = [[-0.8, 0.3], [0.9, -0.4]]
    out = []
    action = np.zeros((1, 2), int)
    for k in range(steps):
        if k % 15 == 0:
            action = rng.integers(0, 8, (1, 2))
        sim.step(action)
        rel, ryaw = relative_pose_body(sim.pos[0, 0], sim.yaw[0, 0], sim.pos[0, 1], sim.yaw[0, 1])
        vb = sim.vel_body()[0]
        out.append((float(rel[0]), float(rel[1]), float(ryaw), tuple(vb[0]), tuple(vb[1]),
                    float(math.hypot(rel[0], rel[1]))))
    return out


def test_truth_convention_is_the_filter_motion_model():
    """d/dt of the truth == R(rel_yaw) v_peer_body - v_own_body (pocket IV-B), exactly for the sim's
    trapezoidal substep; the relative yaw is the one that maps the peer's body frame into ours."""
    rng = np.random.default_rng(0)
    sim = SwarmBatch(3, 2, rng, {"arena_m": 20.0, "frame_skip": 1})
    for _ in range(40):
        rel0, ryaw = relative_pose_body(sim.pos[:, 0], sim.yaw[:, 0], sim.pos[:, 1], sim.yaw[:, 1])
        vb0 = sim.vel_body()
        sim.step(rng.integers(0, 9, (3, 2)))
        rel1, ryaw1 = relative_pose_body(sim.pos[:, 0], sim.yaw[:, 0], sim.pos[:, 1], sim.yaw[:, 1])
        vb1 = sim.vel_body()
        v_own = 0.5 * (vb0[:, 0] + vb1[:, 0])
        v_peer = 0.5 * (vb0[:, 1] + vb1[:, 1])
        v_peer_in_own = np.einsum("bij,bj->bi", rot(ryaw), v_peer)
        assert np.allclose(rel1 - rel0, sim.cfg["physics_dt_s"] * (v_peer_in_own - v_own), atol=1e-12)
        assert np.allclose(ryaw, ryaw1)                      # drones hold their yaw
    # the truth's orientation really is yaw_peer - yaw_own: it maps the peer's world velocity
    assert np.allclose(to_body(sim.yaw[:, 0], sim.vel[:, 1]),
                       np.einsum("bij,bj->bi", rot(ryaw), sim.vel_body()[:, 1]), atol=1e-12)


def _run_filter(traj, kernels, n, learned_fn, seed=3):
    draws = NumpyDraws(np.random.default_rng(seed))
    f = pf.make_filter({"n_particles": n}, kernels=kernels)
    x, y, ryaw, _, _, r = traj[0]
    f.initialize(100000, r + BIAS_M, draws, learned=learned_fn(traj[0]))
    errs = []
    for k, (x, y, ryaw, v_own, v_peer, r) in enumerate(traj[1:], start=2):
        est = f.step(k * 100000, v_own, v_peer, r + BIAS_M, draws, learned=learned_fn((x, y, ryaw)))
        errs.append((math.hypot(est[0] - x, est[1] - y), abs(math.degrees(math.remainder(est[2] - ryaw, 2 * math.pi)))))
    return np.array(errs)


def _perfect(t):
    return (math.atan2(t[1], t[0]), t[2])


@pytest.mark.parametrize("impl", ["pure", "numpy", "cython"])
def test_hybrid_filter_converges_with_exact_ranges_and_perfect_learned_estimate(impl):
    if impl not in impl_switch.available(pf.KERNEL_MODULES):
        pytest.fail("particle-filter path %s missing (make setup builds cython_ext)" % impl)
    traj = _flight(1, 80)
    errs = _run_filter(traj, pf.kernels_for(impl), 100, _perfect)
    late = errs[20:]
    # refreshed particles are spread 10 deg in bearing (half a bin) at ranges up to ~6 m, hence ~0.1 m
    assert late[:, 0].mean() < 0.15, late[:, 0].mean()
    assert late[:, 1].mean() < 5.0, late[:, 1].mean()


def test_hybrid_filter_is_not_fooled_by_a_mirrored_learned_estimate():
    """A learned estimate with the wrong yaw sign (a convention error) must be visible as a large error:
    the metric and the filter really depend on that sign."""
    traj = _flight(2, 80)
    mirrored = _run_filter(traj, pf.kernels_for("numpy"), 100, lambda t: (math.atan2(t[1], t[0]), -t[2]))
    right = _run_filter(traj, pf.kernels_for("numpy"), 100, _perfect)
    assert mirrored[20:, 1].mean() > 5 * right[20:, 1].mean()


def test_pure_filter_finds_the_pose_from_exact_ranges_and_motion():
    """No learned estimate (pocket figs. 5-6 'PF' configuration): uninformed ring start, exact ranges,
    drones accelerating in changing directions -> the filter converges on its own."""
    traj = _flight(3, 150)
    errs = _run_filter(traj, pf.kernels_for("numpy"), 2000, lambda t: None)
    assert errs[-40:, 0].mean() < 0.2, errs[-40:, 0].mean()
    assert errs[-40:, 1].mean() < 6.0, errs[-40:, 1].mean()


def test_adaptive_refresh_quiet_while_tracking_and_fires_when_lost():
    """Augmented-MCL refresh: almost no learned particles while the ranges agree with the filter,
    up to refresh_fraction of them when the ranges stop agreeing (here: the peer 'teleports')."""
    traj = _flight(4, 120)
    cfg = {"n_particles": 500, "refresh_mode": "adaptive", "refresh_fraction": 0.2}
    counts = {}
    for impl in ("pure", "numpy", "cython"):
        f = pf.make_filter(cfg, kernels=pf.kernels_for(impl))
        draws = NumpyDraws(np.random.default_rng(9))
        x, y, ryaw, _, _, r = traj[0]
        f.initialize(100000, r + BIAS_M, draws, learned=_perfect(traj[0]))
        got = []
        for k, (x, y, ryaw, v_own, v_peer, r) in enumerate(traj[1:], start=2):
            if k >= 80:
                r = r + 2.0                        # from here on the ranges disagree with every particle
            f.step(k * 100000, v_own, v_peer, r + BIAS_M, draws, learned=_perfect((x, y, ryaw)))
            got.append(f.last_refresh)
        counts[impl] = got
    assert counts["pure"] == counts["numpy"] == counts["cython"]     # same draws, same decisions
    got = np.array(counts["numpy"])
    assert got[30:78].mean() < 0.02 * 500, got[30:78]                 # tracking: quiet
    assert got[78:84].max() >= 0.15 * 500, got[78:84]                  # lost: refresh (max 0.2 N = 100)


def test_spread_refresh_injects_while_unconverged_and_little_after():
    """refresh_mode "spread": the full refresh_fraction of learned particles while the filter's position
    spread is above refresh_spread_rad times the estimate's distance (the uninformed ring start),
    refresh_fraction_min once it has converged; every path decides alike on the same draws."""
    traj = _flight(4, 120)
    cfg = {"n_particles": 500, "refresh_mode": "spread", "refresh_spread_rad": 0.25, "refresh_fraction_min": 0.02}
    counts, errs = {}, {}
    for impl in ("pure", "numpy", "cython"):
        f = pf.make_filter(cfg, kernels=pf.kernels_for(impl))
        draws = NumpyDraws(np.random.default_rng(9))
        f.initialize(100000, traj[0][5] + BIAS_M, draws)                  # ring: bearing unknown
        got, err = [], []
        for k, (x, y, ryaw, v_own, v_peer, r) in enumerate(traj[1:], start=2):
            est = f.step(k * 100000, v_own, v_peer, r + BIAS_M, draws, learned=_perfect((x, y, ryaw)))
            got.append(f.last_refresh)
            err.append(math.hypot(est[0] - x, est[1] - y))
        counts[impl], errs[impl] = got, err
    assert counts["pure"] == counts["numpy"] == counts["cython"]
    got = np.array(counts["pure"])
    assert (got[:3] == 50).all(), got[:10]                                # ring: spread ~ range, 10 %
    assert (got[40:] == 10).mean() > 0.9, got[40:]                         # converged: 2 %
    assert np.mean(errs["pure"][40:]) < 0.2
    with pytest.raises(ValueError, match="refresh_spread_rad"):
        pf.ParticleFilter({"refresh_spread_rad": 0.0})


def test_adaptive_refresh_settings_are_checked():
    with pytest.raises(ValueError):
        pf.ParticleFilter({"refresh_mode": "sometimes"})
    with pytest.raises(ValueError):
        pf.ParticleFilter({"refresh_fraction": 0.1, "refresh_fraction_min": 0.2})
    with pytest.raises(ValueError):
        pf.ParticleFilter({"alpha_slow": 0.5, "alpha_fast": 0.1})


@pytest.mark.parametrize("impl", ["pure", "cython"])
def test_lost_filter_restarts_after_consecutive_outlier_ranges(impl):
    """A filter sure of the wrong pose (particles around (3, 0) m, the object really 0.5 m away): with
    reinit_after_outliers=3 the third range in a row that no particle explains restarts it on a ring at
    the measured range; one stray outlier does not; off (0, the paper) it never restarts."""
    kernels = pf.kernels_for(impl)
    for setting, restarts in ((3, 1), (0, 0)):
        draws = NumpyDraws(np.random.default_rng(4))
        f = pf.make_filter({"n_particles": 200, "reinit_after_outliers": setting}, kernels=kernels)
        f.initialize(100000, 3.0, draws, learned=(0.0, 0.0))
        t = 100000
        for r in (3.0, 0.5, 3.0, 0.5, 0.5):          # a stray miss, back on track, then a run of misses
            t += 100000
            f.step(t, (0.0, 0.0), (0.0, 0.0), r, draws)
        assert f.outliers == 3 and f.reinitializations == 0
        t += 100000
        est = f.step(t, (0.0, 0.0), (0.0, 0.0), 0.5, draws)
        assert f.reinitializations == restarts
        if restarts:
            radii = np.hypot(np.asarray(f.xs, float), np.asarray(f.ys, float))
            assert abs(float(np.median(radii)) - 0.5) < 0.1 and math.hypot(est[0], est[1]) < 0.5
            f.step(t + 100000, (0.0, 0.0), (0.0, 0.0), 0.5, draws)      # tracking again: no more misses
            assert f.outliers == 4 and f.reinitializations == 1
    with pytest.raises(ValueError):
        pf.ParticleFilter({"reinit_after_outliers": -1})
    with pytest.raises(ValueError):
        pf.ParticleFilter({"reinit_after_outliers": 2.5})


@pytest.mark.parametrize("impl", ["pure", "numpy", "cython"])
def test_lost_filter_restarts_when_the_estimate_stays_farther_than_the_ranges(impl):
    """Particles around (2, 0) m, the object really 1.2 m away: each range is 0.8 m = 3.2 sigma short of
    the particles (no 5-sigma outlier, so reinit_after_outliers never fires), but the low-passed residual
    range - |estimate| falls below -lost_residual_m within a few ranges and the filter restarts at the
    measured range. Off (0, the paper) it stays lost; a ring posterior (mean inside the ring, positive
    residual) never restarts."""
    kernels = pf.kernels_for(impl)
    for setting, restarts in ((0.4, 1), (0.0, 0)):
        draws = NumpyDraws(np.random.default_rng(4))
        f = pf.make_filter({"n_particles": 200, "reinit_after_outliers": 3, "lost_residual_m": setting,
                               "refresh_range_sigma_m": 0.05}, kernels=kernels)
        f.initialize(100000, 2.0, draws, learned=(0.0, 0.0))
        t = 100000
        steps_to_restart = None
        for k in range(12):
            t += 100000
            f.step(t, (0.0, 0.0), (0.0, 0.0), 1.2, draws)
            if f.lost_restarts and steps_to_restart is None:
                steps_to_restart = k + 1
        assert f.outliers == 0 and f.lost_restarts == restarts and f.reinitializations == restarts
        if restarts:
            assert 6 <= steps_to_restart <= 12     # |residual| <= ~0.9 m: 0.9 (1 - 0.9^k) > 0.4 needs k >= 6
            radii = np.hypot(np.asarray(f.xs, float), np.asarray(f.ys, float))
            assert abs(float(np.median(radii)) - 1.2) < 0.15
    # an uninformed ring at the true range: the weighted mean is near the centre, residual ~ +range
    draws = NumpyDraws(np.random.default_rng(5))
    f = pf.make_filter({"n_particles": 500, "lost_residual_m": 0.4}, kernels=kernels)
    f.initialize(100000, 1.5, draws)
    for k in range(20):
        f.step(200000 + k * 100000, (0.0, 0.0), (0.0, 0.0), 1.5, draws)
    assert f.lost_restarts == 0
    with pytest.raises(ValueError):
        pf.ParticleFilter({"lost_residual_m": -0.1})
    with pytest.raises(ValueError):
        pf.ParticleFilter({"lost_residual_alpha": 0.0})
