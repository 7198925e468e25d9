"""Swarm DQN policy runner (uwb-pocket-drones IV-C): 7 inputs -> 100 -> 100 -> 9 Q-values.

Input ``(vx, vy, dx, dy, ox, oy, dt)``: own body velocity (m/s), goal and nearest obstacle
relative position in the body frame (m, from the particle filter), period (s). Output: the
greedy action (argmax Q) of the nine in onboard.swarm.actions.

Float runner over the ``.npz`` written by harness/swarm/train_dqn.py (``w0 [7, 100]``, ``b0``,
``w1``, ``b1``, ``w2 [100, 9]``, ``b2``; ``x @ w + b``, ReLU between layers). An int8 runner
(symmetric per-tensor weight scales, activations quantised per layer with scales calibrated
on recorded inputs) is :class:`DqnInt8`; both are measured against each other in the tests.
"""
import numpy as np

N_INPUTS = 7
# Slices of the input vector (no magic indexes).
VEL = slice(0, 2)
GOAL = slice(2, 4)
OBSTACLE = slice(4, 6)
DT = 6


class PolicyInputError(ValueError):
    """Non-finite or malformed policy input; no action chosen."""


def _check(obs):
    x = np.asarray(obs, dtype=np.float64)
    if x.shape != (N_INPUTS,) or not np.all(np.isfinite(x)):
        raise PolicyInputError("DQN input must be 7 finite numbers, got %r" % (obs,))
    return x


class DqnFloat:
    def __init__(self, weights):
        self.w = [np.asarray(weights[k], dtype=np.float64) for k in ("w0", "b0", "w1", "b1", "w2", "b2")]
        if self.w[0].shape[0] != N_INPUTS:
            raise ValueError("DQN weights expect %d inputs" % self.w[0].shape[0])

    @classmethod
    def load(cls, path):
        with np.load(path) as data:
            return cls({k: data[k] for k in data.files})

    def q_values(self, obs):
        w0, b0, w1, b1, w2, b2 = self.w
        x = _check(obs)
        h = np.maximum(x @ w0 + b0, 0.0)
        h = np.maximum(h @ w1 + b1, 0.0)
        return h @ w2 + b2

    def act(self, obs):
        return int(np.argmax(self.q_values(obs)))


class DqnInt8:
    """Full-int8 version: int8 weights (per-tensor symmetric), int8 activations, int32 accumulators.

    ``calibration`` [N, 7] sets the input and hidden activation scales (max abs / 127).
    """

    def __init__(self, weights, calibration):
        f = DqnFloat(weights)
        cal = np.asarray(calibration, dtype=np.float64)
        w0, b0, w1, b1, w2, b2 = f.w
        h1 = np.maximum(cal @ w0 + b0, 0.0)
        h2 = np.maximum(h1 @ w1 + b1, 0.0)
        self.s_in = max(np.abs(cal).max(), 1e-9) / 127.0
        self.s_h1 = max(h1.max(), 1e-9) / 127.0
        self.s_h2 = max(h2.max(), 1e-9) / 127.0
        self.layers = []
        s_prev = self.s_in
        for w, b, s_out in ((w0, b0, self.s_h1), (w1, b1, self.s_h2), (w2, b2, None)):
            sw = max(np.abs(w).max(), 1e-12) / 127.0
            qw = np.clip(np.round(w / sw), -127, 127).astype(np.int32)
            qb = np.round(b / (sw * s_prev)).astype(np.int64)
            self.layers.append((qw, qb, sw * s_prev, s_out))
            s_prev = s_out

    def q_values(self, obs):
        x = _check(obs)
        q = np.clip(np.round(x / self.s_in), -127, 127).astype(np.int64)
        for qw, qb, s_acc, s_out in self.layers:
            acc = q @ qw + qb
            if s_out is None:
                return acc * s_acc                       # dequantised Q-values
            q = np.clip(np.round(np.maximum(acc, 0) * (s_acc / s_out)), 0, 127).astype(np.int64)

    def act(self, obs):
        return int(np.argmax(self.q_values(obs)))
