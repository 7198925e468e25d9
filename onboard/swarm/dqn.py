"""Swarm DQN policy runner (uwb-pocket-drones IV-C): 7 inputs -> 100 -> 100 -> 9 Q-values.

Input ``(vx, vy, dx, dy, ox, oy, dt)``: own body velocity (m/s), goal and nearest obstacle
relative position in the body frame (m, from the particle filter), period (s). Output: the
greedy action (argmax Q) of the nine in onboard.swarm.actions.

Float runner over the ``.npz`` written by harness/training/swarm_policy/train_dqn.py (``w0 [7, 100]``, ``b0``,
``w1``, ``b1``, ``w2 [100, 9]``, ``b2``; ``x @ w + b``, ReLU between layers): used in training,
evaluation and as the float reference. Onboard the DQN runs full-int8 through the policy
pipeline: ``onboard.policy.load_policy("models/swarm/dqn", backend="litert" | "pure")``
(exported by harness/training/swarm_policy/export_dqn.py); both have ``act(obs)``.
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
    """The float runner of ``weights`` ({name: array}): ``w0 [7, H0]``, ``b0 [H0]``, ``w1 [H0, H1]``,
    ``b1 [H1]``, ``w2 [H1, A]``, ``b2 [A]``. A missing array raises KeyError; arrays whose shapes do
    not chain so (a matrix of another rank, a layer that does not take the previous one's outputs)
    raise ValueError naming the array, when built rather than at the first ``act``."""

    def __init__(self, weights):
        self.w = [np.asarray(weights[k], dtype=np.float64) for k in ("w0", "b0", "w1", "b1", "w2", "b2")]
        if self.w[0].ndim != 2:
            raise ValueError("DQN weights have the wrong shape: w0 must be a [%d, H] matrix, got %r"
                             % (N_INPUTS, self.w[0].shape))
        if self.w[0].shape[0] != N_INPUTS:
            raise ValueError("DQN weights expect %d inputs" % self.w[0].shape[0])
        width = N_INPUTS
        for layer in range(3):
            w, b = self.w[2 * layer], self.w[2 * layer + 1]
            if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
                raise ValueError("DQN weights have the wrong shape: w%d %r and b%d %r do not take %d inputs"
                                 % (layer, w.shape, layer, b.shape, width))
            width = w.shape[1]

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

    def q_values_batch(self, obs):
        """Q-values of observations [..., 7] (no checks; harness use)."""
        w0, b0, w1, b1, w2, b2 = self.w
        h = np.maximum(np.asarray(obs) @ w0 + b0, 0.0)
        return np.maximum(h @ w1 + b1, 0.0) @ w2 + b2

    def act(self, obs):
        return int(np.argmax(self.q_values(obs)))
