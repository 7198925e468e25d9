"""The learned soil estimator (soil paper section 2.1, Fig. 3, eqs. 5-11): the torch FEE equals the NumPy
FEE; the NumPy inference equals the torch network; a reduced dataset and a few epochs of training through
the FEE lower the loss and export a model the onboard estimator loads; the force-informed input is the
kinematic one with the force at the horizon points, and the controller model's the kinematic one with the
acceleration and the track loop's command, built alike in training and onboard; the three committed models
(force-informed, kinematic, controller) give finite estimates with positive variances; bad inputs are
refused."""
import copy
import json
import math

import numpy as np
import pytest

from onboard.soil import fee_numpy
from onboard.soil import learned_estimator as le
from onboard.soil.cut_estimator import CutEstimateError

torch = pytest.importorskip("torch")
pytest.importorskip("scipy")

from harness.training.soil_estimator import dataset as ds  # noqa: E402
from harness.training.soil_estimator import model as md  # noqa: E402
from harness.training.soil_estimator import train as tr  # noqa: E402
from harness.training.soil_estimator.capture import cut_controller, cut_inputs  # noqa: E402

SMALL_EPISODE = {"world": {"size_m": [6.0, 5.0]}, "loader": {"operator": {"lanes": {"length_m": 3.0}}}}


def _points(n, seed=4):
    rng = np.random.default_rng(seed)
    phi = rng.uniform(0.3, 0.8, n)
    delta = rng.uniform(0.2, 0.5, n)
    alpha = rng.uniform(-0.15, 0.15, n)
    rho = rng.uniform(1.0, 1.7, n)
    beta = fee_numpy.beta_star(alpha, rho, phi, delta)[0] + rng.uniform(-0.05, 0.05, n)
    tu = [rng.uniform(0, 3e4, n), phi, rng.uniform(1.4e4, 2.1e4, n), rng.uniform(0, 1.5e4, n), delta]
    tk = [alpha, rho, rng.uniform(0.0, 0.2, n), rng.uniform(0.5, 1.85, n), rng.uniform(0, 2e4, n)]
    d2 = tk[2] ** 2 * rng.uniform(1.0, 1.2, n)
    return tu, tk, beta, d2


def test_torch_fee_equals_the_numpy_fee():
    tu, tk, beta, d2 = _points(200)
    t = [torch.tensor(v, dtype=torch.float64) for v in tu]
    k = [torch.tensor(v, dtype=torch.float64) for v in tk]
    b = torch.tensor(beta, dtype=torch.float64)
    for got, want in zip(md.n_factors(k[0], k[1], b, t[1], t[4]),
                         fee_numpy.n_factors(tk[0], tk[1], beta, tu[1], tu[4])):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    for sq in (None, d2):
        got = md.force_from_beta(t, k, b, None if sq is None else torch.tensor(sq, dtype=torch.float64))
        want = fee_numpy.force_from_beta(tu, tk, beta, sq)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(md.dlog_n_gamma_dbeta(k[0], k[1], b, t[1], t[4]).numpy(),
                               fee_numpy.dlog_n_gamma_dbeta(tk[0], tk[1], beta, tu[1], tu[4]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(md.beta_eq11(t[1]).numpy(), fee_numpy.beta_eq11(tu[1]), rtol=0, atol=1e-15)


def test_the_force_jacobian_is_the_fee_derivative():
    tu, tk, beta, d2 = _points(5, seed=9)
    theta = torch.tensor(np.stack(tu, axis=1)[:, None, :].repeat(3, axis=1)[:, 0, :], dtype=torch.float64)
    parts = tuple(torch.tensor(np.asarray(v)[:, None].repeat(3, axis=1), dtype=torch.float64)
                  for v in (tk[0], tk[1], tk[2], tk[3], tk[4], d2))
    b = torch.tensor(beta[:, None].repeat(3, axis=1), dtype=torch.float64)
    jac = md.force_jacobian(theta, parts, b).numpy()            # (5, 3, 2, 5)
    for k in range(5):
        h = 1e-6 * max(abs(tu[k][0]), 1.0)
        up = [np.array(v, dtype=float) for v in tu]
        dn = [np.array(v, dtype=float) for v in tu]
        up[k] = up[k] + h
        dn[k] = dn[k] - h
        fu = fee_numpy.force_from_beta(up, tk, beta, d2)
        fd = fee_numpy.force_from_beta(dn, tk, beta, d2)
        np.testing.assert_allclose(jac[:, 0, 0, k], (fu[1] - fd[1]) / (2 * h), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(jac[:, 0, 1, k], (fu[2] - fd[2]) / (2 * h), rtol=1e-5, atol=1e-6)


def test_numpy_inference_equals_the_torch_forward():
    torch.manual_seed(3)
    horizon = 12
    n_in = len(le.CHANNELS) * horizon + len(le.GLOBALS)
    net = md.SoilNet(n_in, horizon, (32, 16)).double()
    x = torch.randn(17, n_in, dtype=torch.float64) * 2.0
    lo, hi = tr.preset_bounds()
    with torch.no_grad():
        raw_t = net(x)
        dec_t = md.decode(raw_t, torch.tensor(lo), torch.tensor(hi), horizon)
    layers = md.export_layers(net)
    raw_n = le.mlp_forward(layers, x.numpy())
    dec_n = le.decode(raw_n, lo, hi, horizon)
    np.testing.assert_allclose(raw_n, raw_t.numpy(), rtol=0, atol=1e-5)
    for key in dec_n:
        np.testing.assert_allclose(dec_n[key], dec_t[key].numpy(), rtol=1e-5, atol=1e-9)
    assert np.all(dec_n["theta"] > lo) and np.all(dec_n["theta"] < hi)


@pytest.fixture(scope="module")
def episode():
    """One short dataset episode (clay at 40 %, a 3 m lane) with its cuts and commands captured."""
    cfg = ds.episode_config("clay", 40.0, SMALL_EPISODE)
    return ds.run_capture(cfg, 11)


def test_a_cut_without_operator_commands_gives_no_window_and_the_collection_goes_on(episode):
    """A cut whose inputs cannot be built (no operator command before it: CutEstimateError) gives no window,
    as onboard, instead of stopping a collection of hundreds of episodes."""
    e, cap = episode
    bare = copy.copy(cap)
    bare.commands = {}
    assert ds.window_rows(e, bare, horizon=8, window_samples=[60]) == []


def test_dataset_windows_hold_the_documented_arrays(episode):
    e, cap = episode
    rows = ds.window_rows(e, cap, horizon=8, window_samples=[60])
    assert rows and rows[0]["whole_cut"] and not rows[-1]["whole_cut"]
    for r in rows:
        assert r["x_raw"].shape == (len(le.CHANNELS) * 8 + len(le.GLOBALS),)
        assert r["geometry"].shape == (8, 6) and r["force_n"].shape == (8, 2)
        assert np.all(np.isfinite(r["x_raw"])) and np.all(np.isfinite(r["force_n"]))
    # clay at 40 %: c = 5 + 25 * 0.4 kPa in the truth the blade failed
    assert rows[0]["truth"][0] == pytest.approx(15e3)
    # the input has no force: changing the measured force leaves it as it is
    window, kin, act = cut_inputs(cap.app_config, cap.cuts[0], cap.commands)
    window.fx_n = window.fx_n * 3.0
    x2, _idx = le.window_inputs(le.geometry_array(window), kin, act, 8)
    np.testing.assert_array_equal(x2, rows[0]["x_raw"])
    assert "fx_n" not in le.CHANNELS and "drive_torque_nm" not in le.CHANNELS
    # the force-informed model's input: the same channels and the force at the horizon points, in the
    # layout the training builds from the dataset (with_force_channels)
    window, kin, act = cut_inputs(cap.app_config, cap.cuts[0], cap.commands)
    force = np.stack([window.fx_n, window.fz_n], axis=1)
    xf, idx = le.window_inputs(le.geometry_array(window), kin, act, 8, force)
    assert xf.shape == (len(le.INPUT_KINDS["force"]) * 8 + len(le.GLOBALS),)
    np.testing.assert_array_equal(xf, le.with_force_channels(rows[0]["x_raw"][None, :], rows[0]["force_n"][None],
                                                             8)[0])
    np.testing.assert_array_equal(rows[0]["force_n"], force[idx])
    # the controller model's input: the kinematic channels with the acceleration and the track loop's
    # command at the horizon points (with_point_channels), not the force either
    ctl = cut_controller(cap.cuts[0], cap.commands, window)
    xc, idx = le.window_inputs(le.geometry_array(window), kin, act, 8, controller=ctl)
    assert xc.shape == (len(le.INPUT_KINDS["controller"]) * 8 + len(le.GLOBALS),)
    assert rows[0]["controller"].shape == (8, 2)
    np.testing.assert_array_equal(rows[0]["controller"], ctl[idx])
    np.testing.assert_array_equal(xc, le.with_point_channels(rows[0]["x_raw"][None, :], rows[0]["controller"][None],
                                                             8)[0])
    assert not set(le.INPUT_KINDS["controller"]) & set(le.FORCE_CHANNELS)


def test_controller_channels_are_the_speeds_difference_and_the_loops_logged_command(episode):
    e, cap = episode
    cut = cap.cuts[0]
    window, _kin, _act = cut_inputs(cap.app_config, cut, cap.commands)
    ctl = cut_controller(cut, cap.commands, window)
    assert np.all(np.isfinite(ctl))
    # the world logs the loop's command every step with the operator's commands
    assert all("drive_cmd_n" in c for c in cap.commands.values())
    np.testing.assert_array_equal(ctl[:, 1], [cap.commands[int(t)]["drive_cmd_n"] for t in window.time_us])
    # the acceleration: the ground speed's central difference over +-ACCEL_HALF_SPAN samples
    samples = sorted(cut.samples, key=lambda s: s.time_us)
    pos = {s.time_us: i for i, s in enumerate(samples)}
    h = le.ACCEL_HALF_SPAN
    i = pos[int(window.time_us[len(window) // 2])]
    want = (samples[i + h].speed_mps - samples[i - h].speed_mps) / ((samples[i + h].time_us
                                                                    - samples[i - h].time_us) * 1e-6)
    assert ctl[len(window) // 2, 0] == pytest.approx(want, rel=1e-12)
    # commands without the loop's command (an operator interface that does not hand it over): refused
    bare = {t: {k: v for k, v in c.items() if k != "drive_cmd_n"} for t, c in cap.commands.items()}
    with pytest.raises(CutEstimateError, match="drive_cmd_n"):
        cut_controller(cut, bare, window)
    with pytest.raises(CutEstimateError, match="controller channels"):
        le.window_inputs(le.geometry_array(window), _kin, _act, 8, controller=ctl[:-1])


def test_a_few_epochs_through_the_fee_lower_the_loss_and_export_a_loadable_model(episode, tmp_path):
    e, cap = episode
    horizon = 8
    rows = ds.window_rows(e, cap, horizon=horizon, window_samples=[60])
    data = {k: np.array([r[k] for r in rows]) for k in ("x_raw", "geometry", "force_n", "truth", "whole_cut",
                                                       "samples")}
    data["relative_density_pct"] = np.full(len(rows), 40.0)
    data["x_raw"] = le.with_force_channels(data["x_raw"], data["force_n"], horizon)     # the default inputs
    mask = np.ones(len(rows), dtype=bool)
    x_mean, x_std = tr.normalisation(data["x_raw"])
    lo, hi = tr.preset_bounds()
    torch.set_num_threads(1)
    net, hist = tr.train_member(data, mask, x_mean, x_std, lo, hi, horizon, 5, epochs=12, batch=100, lr=3e-3,
                                hidden=[32])
    assert all(math.isfinite(h["total"]) for h in hist)
    assert hist[-1]["total"] < 0.7 * hist[0]["total"]
    assert hist[-1]["force_mae_pct"] < hist[0]["force_mae_pct"]
    members = [md.export_layers(net)]
    card = {"input": {"horizon": horizon, "channels": list(le.INPUT_KINDS["force"])},
            "prior_sigma": list(tr.prior_sigma()),
            "noise": {"rel_sigma": 0.02, "abs_sigma_n": 200.0}, "eq9": {}}
    tr.export(str(tmp_path), members, x_mean, x_std, lo, hi, card)
    est = le.LearnedEstimator(str(tmp_path))
    window, kin, act = cut_inputs(cap.app_config, cap.cuts[0], cap.commands)
    out = est.estimate(window, kin, act)
    assert est.inputs == "force"
    assert np.all(np.isfinite(out.theta)) and np.all(out.var > 0)
    assert out.samples == len(window) and math.isfinite(out.force_mae_pct)
    window.fz_n = np.full(len(window), np.nan)          # a path without F_z: the force-informed model refuses it
    with pytest.raises(CutEstimateError, match="F_x and F_z"):
        est.estimate(window, kin, act)


@pytest.mark.parametrize("model,kind", [(None, "force"), (le.KINEMATIC_MODEL, "kinematic"),
                                        (le.CONTROLLER_MODEL, "controller")], ids=["force", "kinematic", "controller"])
def test_the_committed_model_gives_finite_estimates_with_positive_variances(episode, model, kind):
    e, cap = episode
    est = le.LearnedEstimator(model)
    assert est.inputs == kind
    card = est.card
    assert card["dataset"]["episodes"] >= 100 and len(est.members) == card["network"]["members"]
    window, kin, act = cut_inputs(cap.app_config, cap.cuts[0], cap.commands)
    if kind == "controller":
        with pytest.raises(CutEstimateError, match="controller channels"):
            est.estimate(window, kin, act)
    out = est.estimate(window, kin, act, cut_controller(cap.cuts[0], cap.commands, window))
    assert np.all(np.isfinite(out.theta)) and np.all(np.isfinite(out.var)) and np.all(out.var > 0)
    assert np.all(out.theta >= est.lo) and np.all(out.theta <= est.hi)
    assert np.all(out.var >= out.var_data - 1e-12)                # eq. 9 only inflates
    d = out.as_dict()
    assert set(d["theta"]) == set(le.THETA_U_NAMES) and all(v > 0 for v in d["sigma"].values())
    json.dumps(d)


def test_bad_inputs_are_refused(episode, tmp_path, capsys):
    e, cap = episode
    window, kin, act = cut_inputs(cap.app_config, cap.cuts[0], cap.commands)
    bad = kin.copy()
    bad[3, 0] = np.nan
    with pytest.raises(CutEstimateError, match="NaN"):
        le.window_inputs(le.geometry_array(window), bad, act, 8)
    with pytest.raises(CutEstimateError, match="shapes"):
        le.window_inputs(le.geometry_array(window), kin[:-1], act, 8)
    with pytest.raises(le.LearnedModelError, match="weights.npz and card.json"):
        le.LearnedEstimator(str(tmp_path))
    (tmp_path / "weights.npz").write_bytes(b"not a zip")
    (tmp_path / "card.json").write_text("{}")
    with pytest.raises(le.LearnedModelError, match="malformed model"):
        le.LearnedEstimator(str(tmp_path))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert tr.main(["--dataset", str(tmp_path / "bad.npz"), "--out", str(tmp_path / "m")]) == 2
    assert tr.main(["--epochs", "0"]) == 2
    from harness.training.soil_estimator import diagnose
    assert diagnose.main(["--dataset", str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 3 and err.count("train-soil:") == 2 and "soil diagnose:" in err


def test_the_sweep_reports_the_learned_estimator_beside_the_classical_one():
    from harness.config import ConfigError
    from harness.scenarios import prepare
    from harness.scenarios.soil import soil_sweep as sw
    config = {"soils": ["clay"], "relative_density_pct": [10.0, 90.0],
              "acceptance": {"spearman": 0.8, "force_mae_pct": 13.0, "max_relative_density_pct": 60.0}}

    def cells(err, force_pct):
        out = []
        for idd in (10.0, 10.0, 90.0, 90.0):
            truth = {k: idd for k in le.THETA_U_NAMES}
            out.append(("clay", idd, {"theta": {k: idd + err for k in le.THETA_U_NAMES}, "truth": truth,
                                      "sigma": {k: 1.0 for k in le.THETA_U_NAMES}, "force_mae_pct": force_pct}))
        return out
    classical = sw.summarise(config, cells(0.5, 4.0), 4)
    learned = sw.learned_metrics(config, cells(2.0, 20.0), 4)
    assert learned["acceptance"] == {"force_mae": False} and not learned["success"]
    assert set(learned["checks_reported"]) == set(classical["acceptance"])
    assert learned["force_mae_pct_all"] == pytest.approx(20.0)
    cmp = sw.compare(classical, learned)
    assert cmp["c_pa"]["classical"]["coverage_1s"] == 1.0 and cmp["c_pa"]["learned"]["coverage_2s"] == 1.0
    assert cmp["c_pa"]["learned"]["coverage_1s"] == 0.0
    assert cmp["force_mae_pct_max"] == {"classical": 4.0, "learned": 20.0}
    assert cmp["force_mae_pct_pooled"] == {"classical": 4.0, "learned": 20.0}
    # pooled over every cut at I_d <= 60 % against the worst of those bins: (12 + 14 + 6) / 3 against 13
    pooled = {"clay": [(10.0, 12.0), (10.0, 14.0), (30.0, 6.0), (90.0, 40.0)]}
    rows = [("clay", idd, {"theta": {k: idd for k in le.THETA_U_NAMES}, "truth": {k: idd for k in le.THETA_U_NAMES},
                           "sigma": {k: 1.0 for k in le.THETA_U_NAMES}, "force_mae_pct": pct})
            for idd, pct in pooled["clay"]]
    m = sw.learned_metrics(dict(config, relative_density_pct=[10.0, 30.0, 90.0]), rows, 4)
    assert m["force_mae_pct_max"] == pytest.approx(13.0) and m["force_mae_pct_pooled"] == pytest.approx(32.0 / 3)
    with pytest.raises(ConfigError, match="learned_model"):
        prepare("soil-sweep", {"estimator": "learned", "learned_model": "/nonexistent/model"}, reduced=True)
    with pytest.raises(ConfigError, match="estimator"):
        prepare("soil-sweep", {"estimator": "neural"}, reduced=True)
