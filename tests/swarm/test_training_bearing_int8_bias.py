"""The bearing estimator's int8 export keeps the bias of a hidden unit whose incoming weights are ~0: before,
its int32 bias (scale s_in * s_w, s_w ~ 1e-11) overflowed (``astype(np.int32)`` of a value beyond the range:
undefined, -2^31 here), so the unit's state read 0 instead of tanh(0.6) = 0.54."""
import numpy as np

from harness.training.swarm_policy import bearing_data as bd
from onboard.swarm.bearing_net import BearingNet


def test_an_elman_unit_with_near_zero_weights_keeps_its_bias():
    from harness.training.swarm_policy.export_bearing import build
    from onboard.policy.policy import make_policy
    from onboard.swarm.bearing_net import BearingPolicy

    rng = np.random.default_rng(3)
    H = 8
    w = {"w_ih": rng.normal(0, 0.5, (H, 6)), "w_hh": rng.normal(0, 0.3, (H, H)), "b_ih": rng.normal(0, 0.1, H),
         "b_hh": np.zeros(H), "w_out": rng.normal(0, 0.5, (36, H)), "b_out": np.zeros(36),
         "in_scale": np.array([10.0, 0.5, 2.0, 2.0, 2.0, 2.0])}
    w["w_ih"][2], w["w_hh"][2], w["b_ih"][2] = 1e-9 * rng.normal(size=6), 1e-9 * rng.normal(size=H), 0.6
    net = BearingNet(w)
    x, b, y, has = bd.collect(rng, 2, 2, 40, 2.0)
    xs = bd.add_noise(x, has, rng, 0.0085569, 0.2476, 0.05)
    data, _ = build(net, xs)
    pure = BearingPolicy(make_policy(data, None, "pure"))
    h = pure.new_state()
    for t in range(10):
        hf, _, _ = net.step(h, xs[0, t])             # the float step from the same state
        h, _ = pure.step_logits(h, xs[0, t] * net.w["in_scale"])
        assert abs(h[2] - np.tanh(0.6)) < 0.02, (t, h[2])
        assert np.abs(h - hf).max() < 0.05, t
