"""The learned soil estimator's training loss (model.loss_terms, soil paper eq. 10) at horizon points outside the
FEE's validity domain: such a point is left out of the force terms as the NumPy inference leaves it out
(``fee_numpy.valid_mask``: rake below rho_min, |alpha| above alpha_abs_max, ...), and its singular FEE (cot(rho) at
rho = 0) does not reach the gradients. Before, one point with rho = 0 made every weight's gradient NaN (the
masked point's zero gradient times an infinite derivative), so one Adam step turned the whole network NaN; and a
point with alpha = 1.5 rad (beyond the domain's 0.785) was trained on as valid."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.training.soil_estimator import model as md  # noqa: E402
from harness.training.soil_estimator import train as tr  # noqa: E402
from onboard.soil import learned_estimator as le  # noqa: E402

P, B = 4, 3


def _batch(geometry):
    g = torch.tensor(geometry, dtype=torch.float32)
    return {"x": torch.tensor(np.random.default_rng(1).normal(size=(B, 10)), dtype=torch.float32), "geometry": g,
            "force_n": torch.full((B, P, 2), 1000.0), "samples": torch.full((B,), 60.0)}


def _geometry():
    g = np.zeros((B, P, 6))
    g[..., 0], g[..., 1], g[..., 2], g[..., 3], g[..., 4], g[..., 5] = 0.3, 0.3, 0.05, 0.05, 1.0, 100.0
    return g


def _loss(geometry):
    torch.manual_seed(0)
    net = md.SoilNet(10, P, (8,))
    lo, hi = (torch.tensor(v, dtype=torch.float32) for v in tr.preset_bounds())
    terms = md.loss_terms(net, _batch(geometry), lo, hi, torch.tensor(tr.prior_sigma(), dtype=torch.float32))
    terms["total"].backward()
    return terms, net


def _valid(geometry):
    torch.manual_seed(0)
    net = md.SoilNet(10, P, (8,))
    lo, hi = (torch.tensor(v, dtype=torch.float32) for v in tr.preset_bounds())
    out = md.decode(net(_batch(geometry)["x"]), lo, hi, P)
    z = torch.zeros(B)
    return md.predict_force(out["theta"], torch.tensor(geometry, dtype=torch.float32), out["beta_res_rad"], z, z,
                            torch.zeros(B, 2))[3].numpy(), out["theta"].detach().numpy()


@pytest.mark.parametrize("where,value", [(1, 0.0), (1, -0.2), (0, 1.5)])
def test_a_point_outside_the_domain_is_masked_and_keeps_the_gradients_finite(where, value):
    g = _geometry()
    g[0, 1, where] = value
    terms, net = _loss(g)
    assert np.isfinite(float(terms["total"]))
    assert all(torch.all(torch.isfinite(p.grad)) for p in net.parameters())
    valid, theta = _valid(g)
    assert not valid[0, 1] and valid.sum() == B * P - 1
    # the NumPy inference's domain agrees: that point is invalid there too
    fx, fz, ok = le.fee_window_force(theta[0].astype(float), g[0], beta_res_rad=np.zeros(P))
    assert not ok[1] and ok[0]


def test_points_inside_the_domain_are_all_valid_and_their_loss_is_unchanged_by_another_points_masking():
    terms, _net = _loss(_geometry())
    valid, _theta = _valid(_geometry())
    assert valid.all() and np.isfinite(float(terms["total"]))
    g = _geometry()
    g[2, 3, 1] = 0.0                          # a singular point in another window leaves window 0's force term
    t0 = md.predict_force(*_pf_args(_geometry()))
    t1 = md.predict_force(*_pf_args(g))
    assert torch.equal(t0[0][0], t1[0][0]) and torch.equal(t0[1][0], t1[1][0])


def _pf_args(geometry):
    torch.manual_seed(0)
    net = md.SoilNet(10, P, (8,))
    lo, hi = (torch.tensor(v, dtype=torch.float32) for v in tr.preset_bounds())
    out = md.decode(net(_batch(geometry)["x"]), lo, hi, P)
    z = torch.zeros(B)
    return out["theta"], torch.tensor(geometry, dtype=torch.float32), out["beta_res_rad"], z, z, torch.zeros(B, 2)
