"""Learned bearing / relative-orientation estimator (uwb-pocket-drones IV-A): float and int8 runners.

A recurrent network reads, once per policy period, the input state
``(dt_s, range_m, vx_own, vy_own, vx_obj, vy_obj)`` (body-frame velocities; a goal's is 0)
and outputs two 18-class distributions over 20-degree bins (pocket IV-A): the bearing of
the object in the own body frame and the object's relative orientation (yaw_obj - yaw_own).
The paper uses one layer of 512 LSTM cells; this runtime uses a GRU layer (size in the
model file; the committed one has 128) so it is cheap enough to run per neighbour on a Pi at 10 Hz.

Class k covers [-180 + 20 k, -160 + 20 k) degrees; :func:`decode` turns a distribution
into an angle by the circular mean of the bin centres weighted by the probabilities.

Weights are a ``.npz`` written by ``harness/training/swarm_policy/train_bearing.py`` (PyTorch GRU layout:
``w_ih [3H, 6]``, ``w_hh [3H, H]``, ``b_ih``, ``b_hh`` with gate order r, z, n; head
``w_out [36, H]``, ``b_out``; input scaling ``in_scale [6]``). The float runner
:class:`BearingNet` reproduces torch.nn.GRU's equations; :class:`BearingPolicy` steps the same
network's int8 ``.tflite`` export (harness/training/swarm_policy/export_bearing.py) through an ``onboard.policy``
backend, which is what the flights run.
"""
import math

import numpy as np

from onboard.policy.policy_base import Policy

N_BINS = 18
BIN_RAD = 2.0 * math.pi / N_BINS
BIN_CENTRES_RAD = -math.pi + BIN_RAD * (np.arange(N_BINS) + 0.5)
N_IN = 6

# Slices of the output logits (no magic indexes), and the rows of the logits seen as [2, N_BINS].
BEARING = slice(0, N_BINS)
ORIENTATION = slice(N_BINS, 2 * N_BINS)
BEARING_ROW, ORIENTATION_ROW = 0, 1


class BearingInputError(ValueError):
    """Non-finite or malformed input state; the recurrent state was not changed."""


def angle_to_class(angle_rad):
    """20-degree bin index (0..17) of angles in radians (any range)."""
    a = np.mod(np.asarray(angle_rad) + math.pi, 2.0 * math.pi)
    return np.minimum((a / BIN_RAD).astype(np.int64), N_BINS - 1)


def softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def decode(probs):
    """Circular mean angle (rad) of the bin centres weighted by probs [..., 18]; also its resultant length."""
    s = (probs * np.sin(BIN_CENTRES_RAD)).sum(-1)
    c = (probs * np.cos(BIN_CENTRES_RAD)).sum(-1)
    return np.arctan2(s, c), np.hypot(s, c)


def sample_bin(probs, u):
    """Centre (rad) of the bin whose cumulative probability first exceeds u * total (u in [0, 1), drawn outside)."""
    cdf = np.cumsum(probs)
    k = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return float(BIN_CENTRES_RAD[min(k, N_BINS - 1)])


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class BearingNet:
    """The recurrent estimator (float, NumPy); one hidden state per tracked object (``new_state()``).

    Two cells: ``gru`` (torch.nn.GRU layout, gates r, z, n) and ``rnn`` (Elman, torch.nn.RNN with
    tanh: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)``), told apart by ``w_ih``'s rows (3H or H).
    The ``rnn`` cell needs only FULLY_CONNECTED + TANH, so it exports to an int8 ``.tflite`` that
    the policy backends run (harness/training/swarm_policy/export_bearing.py, :class:`BearingPolicy`).
    """

    def __init__(self, weights):
        w = {k: np.asarray(weights[k], dtype=np.float64) for k in
             ("w_ih", "w_hh", "b_ih", "b_hh", "w_out", "b_out", "in_scale")}
        self.hidden = w["w_hh"].shape[1]
        rows = w["w_ih"].shape[0]
        if rows == 3 * self.hidden:
            self.cell = "gru"
        elif rows == self.hidden:
            self.cell = "rnn"
        else:
            raise ValueError("bearing net weights have the wrong shapes")
        if w["w_ih"].shape[1] != N_IN or w["w_out"].shape != (2 * N_BINS, self.hidden):
            raise ValueError("bearing net weights have the wrong shapes")
        # the rest must match too: numpy would broadcast some of them (a one-element in_scale or bias) or fail only
        # at the first step, where the agent counts the error as bad input of every range and never estimates
        expected = {"w_hh": (rows, self.hidden), "b_ih": (rows,), "b_hh": (rows,), "b_out": (2 * N_BINS,),
                    "in_scale": (N_IN,)}
        for k in sorted(expected):
            if w[k].shape != expected[k]:
                raise ValueError("bearing net weights have the wrong shapes: %s is %r, not %r"
                                 % (k, w[k].shape, expected[k]))
        self.w = w
        # x @ W^T layouts, split per gate
        self._wi = w["w_ih"].T.copy()
        self._wh = w["w_hh"].T.copy()
        self._wo = w["w_out"].T.copy()

    @classmethod
    def load(cls, path):
        with np.load(path) as data:
            return cls({k: data[k] for k in data.files})

    def new_state(self):
        return np.zeros(self.hidden)

    def step(self, h, x):
        """One input state x (6,) -> (new h, bearing probs (18,), orientation probs (18,))."""
        h_new, probs = self.step_probs(h, x)
        return h_new, probs[BEARING_ROW], probs[ORIENTATION_ROW]

    def step_probs(self, h, x):
        """One input state x (6,) -> (new h, probs [2, 18]: rows BEARING_ROW and ORIENTATION_ROW); the
        same numbers as :meth:`step`, both softmaxes in one call."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (N_IN,) or not np.all(np.isfinite(x)):
            raise BearingInputError("bearing net input must be 6 finite numbers, got %r" % (x,))
        h_new = self._cell((x * self.w["in_scale"])[None], h[None])[0]
        logits = h_new @ self._wo + self.w["b_out"]
        return h_new, softmax(logits.reshape(2, N_BINS))

    def _cell(self, x, h):
        """One step for a batch: scaled inputs x [B, 6], states h [B, H] -> new states [B, H]."""
        gi = x @ self._wi + self.w["b_ih"]
        gh = h @ self._wh + self.w["b_hh"]
        if self.cell == "rnn":
            return np.tanh(gi + gh)
        H = self.hidden
        r = sigmoid(gi[:, :H] + gh[:, :H])
        z = sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        return (1.0 - z) * n + z * h

    def run(self, xs):
        """Whole sequences xs [B, T, 6] -> logits [B, T, 36] (batch evaluation in the harness)."""
        xs = np.asarray(xs, dtype=np.float64) * self.w["in_scale"]
        B, T, _ = xs.shape
        h = np.zeros((B, self.hidden))
        out = np.zeros((B, T, 2 * N_BINS))
        for t in range(T):
            h = self._cell(xs[:, t], h)
            out[:, t] = h @ self._wo + self.w["b_out"]
        return out


class StateArray(np.ndarray):
    """A recurrent state as the float values every caller sees (dequantised, as before) that also keeps the
    int8 codes the model output it as (``codes``), so that :class:`BearingPolicy` feeds them back as the next
    step's state input without quantising it again: on the state's own grid (the output's scale and zero
    point are the input's, no normalisation) quantising the dequantised values gives the same codes, so the
    numbers are unchanged. Read-only, so the codes cannot go stale; an array derived from it (arithmetic,
    a slice, a copy, an unpickled one) has ``codes`` None and is quantised as any array. ``grid``: the codes'
    (scale, zero point); another model's state is quantised as any array."""
    codes = None
    grid = None


def _same_int8_grid(state_in, state_out):
    """True when the state input takes the state output's values unchanged: both int8 with one scale and
    zero point, and no normalisation (or mean 0, std 1)."""
    norm = state_in["normalization"]
    plain = norm is None or (all(m == 0.0 for m in norm["mean"]) and all(d == 1.0 for d in norm["std"]))
    return (plain and state_in["dtype"] == "int8" and state_out["dtype"] == "int8"
            and state_in["scale"] == state_out["scale"] and state_in["zero_point"] == state_out["zero_point"])


class BearingPolicy:
    """An int8 estimator (``model.tflite`` + card from harness/training/swarm_policy/export_bearing.py) run by an
    ``onboard.policy`` backend (LiteRT reference kernels or the pure int8 kernel): same
    ``new_state`` / ``step`` interface as :class:`BearingNet`. Two model layouts: the GRU step
    (inputs x (6) and state h (H); outputs logits and the next state) and the Elman step (one input
    ``[x, h]``). The state is carried as floats (dequantised, multiples of 1/128) and re-quantised
    as the next step's input, which on the state's own 1/128 grid is exact."""

    def __init__(self, policy):
        self.policy = policy
        ins = policy.inputs
        self.split_state = len(ins) == 2
        self.hidden = ins[1]["size"] if self.split_state else ins[0]["size"] - N_IN
        if self.hidden <= 0 or len(ins) > 2 or (self.split_state and ins[0]["size"] != N_IN) or \
                len(policy.outputs) != 2 or policy.outputs[0]["size"] != 2 * N_BINS or \
                policy.outputs[1]["size"] != self.hidden:
            raise ValueError("not a bearing-estimator model: inputs %r, outputs %r"
                             % ([i["shape"] for i in ins], [o["shape"] for o in policy.outputs]))
        # carry the state as the model's int8 codes (StateArray) where the backend runs raw codes and the
        # state's input and output share one int8 grid
        self._carry_codes = (self.split_state and hasattr(policy, "run_codes")
                             and _same_int8_grid(ins[1], policy.outputs[1]))
        self._grid = (policy.outputs[1]["scale"], policy.outputs[1]["zero_point"])

    @classmethod
    def load(cls, model_dir, backend="litert"):
        from onboard.policy import load_policy
        return cls(load_policy(model_dir, backend=backend))

    def new_state(self):
        return np.zeros(self.hidden)

    def step_logits(self, h, x):
        """(new state (H,), logits (36,)) for one input state x (6,)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (N_IN,) or not np.all(np.isfinite(x)):
            raise BearingInputError("bearing net input must be 6 finite numbers, got %r" % (x,))
        if self._carry_codes:
            return self._step_codes(h, x)
        h = np.asarray(h, dtype=np.float64)
        logits, state = self.policy.predict(x, h) if self.split_state else self.policy.predict(np.concatenate((x, h)))
        return np.asarray(state, dtype=np.float64), np.asarray(logits, dtype=np.float64)

    def _step_codes(self, h, x):
        """step_logits through the backend's raw codes: the inputs quantised as ``predict`` does (the same
        codes and saturation counts; a StateArray's own codes for the state), the outputs dequantised as it
        does; the state returned as a StateArray."""
        pol = self.policy
        x_codes = Policy.quantize_input(pol, x, 0)              # six values: the loop is the fastest here
        if type(h) is StateArray and h.codes is not None and h.grid == self._grid:
            h_codes = h.codes
        else:
            h_codes = pol.quantize_input(h, 1)
        logit_codes, state_codes = pol.run_codes([x_codes, h_codes])
        out, st = pol.outputs[0], pol.outputs[1]
        state = (st["scale"] * (state_codes.astype(np.float64) - st["zero_point"])).view(StateArray)
        state.codes, state.grid = state_codes, self._grid
        state.flags.writeable = False
        return state, out["scale"] * (logit_codes.astype(np.float64) - out["zero_point"])

    def step(self, h, x):
        h_new, probs = self.step_probs(h, x)
        return h_new, probs[BEARING_ROW], probs[ORIENTATION_ROW]

    def step_probs(self, h, x):
        """(new state (H,), probs [2, 18]: rows BEARING_ROW and ORIENTATION_ROW), as BearingNet.step_probs."""
        h_new, logits = self.step_logits(h, x)
        return h_new, softmax(logits.reshape(2, N_BINS))

    def run(self, xs):
        """Whole sequences xs [B, T, 6] -> logits [B, T, 36], stepped one inference at a time from a
        zero state (as :meth:`BearingNet.run`; harness evaluation)."""
        xs = np.asarray(xs, dtype=np.float64)
        out = np.zeros(xs.shape[:2] + (2 * N_BINS,))
        for s in range(xs.shape[0]):
            h = self.new_state()
            for t in range(xs.shape[1]):
                h, out[s, t] = self.step_logits(h, xs[s, t])
        return out
