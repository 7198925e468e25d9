"""Relative-pose particle filter, pure path: runs under CPython (pytest) and inside MicroPython."""
import math

from onboard.estimators import particle_filter as pf

TRUE_X_M = 1.0
TRUE_Y_M = 0.6
TRUE_YAW_RAD = 0.8
DT_US = 100000


def _motion(k):
    """Own and peer body velocities at step k (m/s): a gentle weave so the bearing is observable."""
    vo = (0.3 * math.cos(0.11 * k), 0.25 * math.sin(0.07 * k))
    vp = (0.2 * math.sin(0.09 * k), -0.2 * math.cos(0.05 * k))
    return vo, vp


def _fly(n_particles, steps, seed, learned_noise, use_learned=True, first_learned=None, config=None, on_step=None,
         ring_start=False):
    """Fly a neighbour with the pure filter; returns (filter, per-step position errors, truth)."""
    draws = pf.PureDraws(seed)
    meas = pf.PureDraws(seed + 1000)
    cfg = {"n_particles": n_particles}
    cfg.update(config or {})
    f = pf.ParticleFilter(cfg)
    x, y, yaw = TRUE_X_M, TRUE_Y_M, TRUE_YAW_RAD
    sigma = math.sqrt(pf.UWB_RANGE_VAR_M2)
    r0 = math.sqrt(x * x + y * y) + pf.UWB_RANGE_BIAS_M + sigma * meas.normals(1)[0]
    if use_learned and not ring_start:
        learned0 = first_learned or (math.atan2(y, x) + 0.2, yaw - 0.3)
        f.initialize(0, r0, draws, learned=learned0)
    else:
        f.initialize(0, r0, draws)
    errs = []
    t = 0
    for k in range(steps):
        vo, vp = _motion(k)
        dt = DT_US * 1e-6
        c = math.cos(yaw)
        s = math.sin(yaw)
        x += dt * (c * vp[0] - s * vp[1] - vo[0])
        y += dt * (s * vp[0] + c * vp[1] - vo[1])
        nz = meas.normals(3)
        r = abs(math.sqrt(x * x + y * y) + pf.UWB_RANGE_BIAS_M + sigma * nz[0])
        learned = None
        if use_learned:
            learned = (math.atan2(y, x) + learned_noise * nz[1], yaw + learned_noise * nz[2])
        t += DT_US
        ex, ey, eyaw = f.step(t, vo, vp, r, draws, learned=learned)
        errs.append(math.sqrt((ex - x) ** 2 + (ey - y) ** 2))
        if on_step is not None:
            on_step(f)
    return f, errs, (x, y, yaw)


def test_learned_refresh_tracks_neighbour():
    f, errs, truth = _fly(60, 60, 1, 0.15)
    late = errs[20:]
    assert sum(late) / len(late) < 0.3, late
    assert f.outliers == 0


def test_spread_refresh_stops_once_the_bearing_is_sure():
    """refresh_mode "spread" (particle_filter.weighted_spread): learned particles come in while the cloud
    spreads over the bearings (a ring start), none once it is tight (refresh_fraction_min 0), and it
    still tracks."""
    refreshed = []
    f, errs, truth = _fly(60, 60, 1, 0.15, config={"refresh_mode": "spread", "refresh_spread_rad": 0.25},
                          on_step=lambda flt: refreshed.append(flt.last_refresh), ring_start=True)
    late = errs[20:]
    assert sum(late) / len(late) < 0.3, late
    assert refreshed[:10] == [6] * 10, refreshed[:10]              # ring start: 10 % of 60 while unsure
    run = longest = 0
    for count in refreshed:                                         # sure: none, for a stretch
        run = run + 1 if count == 0 else 0
        longest = max(longest, run)
    assert longest >= 15, refreshed


def test_systematic_resample_copies_dominant_particle():
    n = 10
    xs = [float(i) for i in range(n)]
    ys = [0.0] * n
    yaws = [0.0] * n
    ws = [1e-9] * n
    ws[7] = 1.0
    xo, yo, yawo = [0.0] * n, [0.0] * n, [0.0] * n
    pf.resample(xs, ys, yaws, ws, n, 9, 0.5, xo, yo, yawo)
    assert xo[:9] == [7.0] * 9
    assert xo[9] == 0.0          # slot n_keep.. left for the refresh


def test_systematic_resample_is_low_variance():
    # counts of each particle are floor or ceil of n_keep * w_i / sum(w)
    n = 7
    ws = [0.1, 0.3, 0.05, 0.2, 0.15, 0.12, 0.08]
    xs = [float(i) for i in range(n)]
    for u0 in (0.0, 0.25, 0.5, 0.999):
        out = [0.0] * 20
        pf.resample(xs, xs, xs, ws, n, 20, u0, out, [0.0] * 20, [0.0] * 20)
        total = sum(ws)
        for i in range(n):
            cnt = sum(1 for v in out if v == float(i))
            expect = 20 * ws[i] / total
            assert math.floor(expect) - 1e-9 <= cnt <= math.ceil(expect) + 1e-9, (u0, i, cnt, expect)


def test_zero_weight_never_picked():
    xs = [0.0, 1.0, 2.0, 3.0]
    out = [9.0] * 4
    pf.resample(xs, xs, xs, [0.0, 1.0, 0.0, 1.0], 4, 4, 0.0, out, [0.0] * 4, [0.0] * 4)
    assert out == [1.0, 1.0, 3.0, 3.0], out


def test_uniform_weights_without_range():
    f = pf.ParticleFilter({"n_particles": 20})
    d = pf.PureDraws(3)
    f.initialize(0, 1.0, d, learned=(0.0, 0.0))
    xs_before = list(f.xs)
    f.step(DT_US, (0.0, 0.0), (0.0, 0.0), None, d)
    assert f.predict_only == 1
    assert abs(f.neff() - 20.0) < 1e-9
    assert f.xs != xs_before     # still propagated (process noise)


def test_bad_input_rejected_state_kept():
    f = pf.ParticleFilter({"n_particles": 20})
    d = pf.PureDraws(4)
    try:
        f.step(0, (0.0, 0.0), (0.0, 0.0), 1.0, d)
    except pf.PfInputError:
        pass
    else:
        raise AssertionError("step before initialize accepted")
    f.initialize(1000, 1.0, d, learned=(0.5, 0.0))
    before = (list(f.xs), list(f.ys), list(f.yaws), f.time_us)
    bad_calls = [
        (2000, (float("nan"), 0.0), (0.0, 0.0), 1.0, None),
        (2000, (0.0, 0.0), (0.0, float("inf")), 1.0, None),
        (2000, (0.0, 0.0), (0.0, 0.0), float("nan"), None),
        (2000, (0.0, 0.0), (0.0, 0.0), -0.5, None),
        (2000, (0.0, 0.0), (0.0, 0.0), "1.0", None),
        (2000, (0.0,), (0.0, 0.0), 1.0, None),
        (2000, (0.0, 0.0), (0.0, 0.0), 1.0, (float("nan"), 0.0)),
        (500, (0.0, 0.0), (0.0, 0.0), 1.0, None),
    ]
    for now_us, vo, vp, r, learned in bad_calls:
        try:
            f.step(now_us, vo, vp, r, d, learned=learned)
        except pf.PfInputError:
            pass
        else:
            raise AssertionError("accepted bad input %r" % ((now_us, vo, vp, r, learned),))
    assert (list(f.xs), list(f.ys), list(f.yaws), f.time_us) == before
    assert f.rejected == len(bad_calls)
    # and it still works afterwards
    f.step(2000, (0.0, 0.0), (0.0, 0.0), 1.0, d, learned=(0.5, 0.0))
    assert f.steps == 1


def test_unexplained_range_counted_as_outlier():
    f = pf.ParticleFilter({"n_particles": 30})
    d = pf.PureDraws(5)
    f.initialize(0, 1.0, d, learned=(0.0, 0.0))
    f.step(DT_US, (0.0, 0.0), (0.0, 0.0), 9.0, d)
    assert f.outliers == 1
    e = f.estimate()
    assert e[0] == e[0] and e[1] == e[1]   # finite estimate, no NaN from all-zero weights


def _mirror_run(neff_fraction, seed, turn_at):
    """Own drone flies straight along +x past a still object at (1.2, 0.8): the ranges fit (x, +y) and
    its mirror (x, -y) equally (range-only ambiguity) until the drone turns to +y at step turn_at."""
    draws = pf.PureDraws(seed)
    meas = pf.PureDraws(seed + 500)
    f = pf.ParticleFilter({"n_particles": 200, "resample_neff_fraction": neff_fraction, "yaw_noise_radps": 0.0})
    x, y = 1.2, 0.8
    sigma = math.sqrt(pf.UWB_RANGE_VAR_M2)
    f.initialize(0, math.sqrt(x * x + y * y), draws)
    mass_pos = None
    for k in range(turn_at + 40):
        vo = (0.4, 0.0) if k < turn_at else (0.0, 0.4)
        x -= 0.1 * vo[0]
        y -= 0.1 * vo[1]
        r = abs(math.sqrt(x * x + y * y) + pf.UWB_RANGE_BIAS_M + sigma * meas.normals(1)[0])
        est = f.step((k + 1) * DT_US, vo, (0.0, 0.0), r, draws)
        if k == turn_at - 1:
            w_pos = sum(w for w, yy in zip(f.ws, f.ys) if yy > 0.0)
            mass_pos = w_pos / sum(f.ws)
    return mass_pos, math.sqrt((est[0] - x) ** 2 + (est[1] - y) ** 2), f


def test_adaptive_resampling_carries_weights():
    """Doucet et al. 2000 adaptive resampling: between resamplings the weights carry over (not
    uniform, log-weights kept), resampling happens on fewer steps than ranges arrive, and after the
    straight leg's mirror ambiguity the turn settles on the right hypothesis."""
    for seed in (1, 2, 3):
        mass_pos, err_m, f = _mirror_run(0.5, seed, 30)
        assert err_m < 0.3, (seed, err_m)
        assert 0 < f.resamples < f.steps, (f.resamples, f.steps)
    f = pf.ParticleFilter({"n_particles": 50, "resample_neff_fraction": 0.5})
    d = pf.PureDraws(8)
    f.initialize(0, 1.5, d)
    f.step(DT_US, (0.2, 0.0), (0.0, 0.0), 1.45, d)
    assert f.resamples == 0 and f.neff() >= 25.0             # Neff 39 of 50: weights kept
    assert max(f.ws) == 1.0 > min(f.ws)                      # carried, normalised to the best particle
    assert min(f.lws) < 0.0 and max(f.lws) == 0.0
    f2 = pf.ParticleFilter({"n_particles": 50})              # paper default: every step
    f2.initialize(0, 1.5, pf.PureDraws(8))
    f2.step(DT_US, (0.2, 0.0), (0.0, 0.0), 1.45, pf.PureDraws(9))
    assert f2.resamples == 1 and max(f2.lws) == min(f2.lws) == 0.0


def test_config_checked():
    for bad in ({"n_particles": 1}, {"refresh_fraction": 1.0}, {"no_such_key": 1},
                {"resample_neff_fraction": 0.0}, {"resample_neff_fraction": 1.5}):
        try:
            pf.ParticleFilter(bad)
        except ValueError:
            pass
        else:
            raise AssertionError("accepted config %r" % (bad,))


def golden_pure_draws():
    d = pf.PureDraws(12345)
    return d.uniforms(4) + d.normals(5)


def golden_learned_filter_run():
    f, errs, truth = _fly(24, 8, 7, 0.2)
    return [f.estimate(), f.neff(), f.xs[:5], f.yaws[:5], errs]


def golden_pure_filter_run():
    f, errs, truth = _fly(24, 8, 9, 0.0, use_learned=False)
    return [f.estimate(), f.ys[:5], errs]


def golden_adaptive_resampling_run():
    mass_pos, err_m, f = _mirror_run(0.5, 4, 12)
    return [mass_pos, err_m, f.estimate(), f.resamples, f.lws[:4]]
