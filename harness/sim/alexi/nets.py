"""The committed Alexi networks (``models/alexi/<net>/``) run through the onboard policy backends
(:mod:`onboard.policy`: ``litert`` or the ``pure`` int8 kernel), or their float layers; no torch.

A :class:`Net` takes inputs in SI units (the card's features), applies the card's min-max normalisation
(thesis 6.2.2), quantises, runs the int8 model and returns the prediction in SI units (the output's
normalisation inverted). ``predict_normalised`` skips the input normalisation (inputs already preprocessed, as
the thesis's test sets are) and returns the network's raw (normalised) output.

Output calibration: a card may hold ``alexi.output_calibration = {a, b, fitted_on}``, an affine map
y_cal = a * y + b of the network's normalised output, fitted by least squares of the reference's per-frame target
on the net's per-frame prediction over a validation session (:mod:`harness.training.alexi.calibrate`). It is
applied per frame by :meth:`Net.predict` (the simulator's path) and, when asked, by ``predict_normalised``; the
squared Pearson R^2 is unchanged by it. A card without the field behaves as an uncalibrated net.
"""
import json
import os
import struct

import numpy as np

from harness.data_files import NPZ_READ_ERRORS, not_npz_reason, read_error_reason
from onboard.policy.card import check_card_fields
from onboard.policy.policy import load_policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_ROOT = os.path.join(REPO, "models", "alexi")
KINDS = ("auto", "int8", "float")
INT8_R2_TOLERANCE = 0.01     # int8 "hurts" when it loses more R^2 (Pearson, test set) than this


FLOAT_FILE = "float_layers.npz"


class ModelError(ValueError):
    """A network folder cannot be used (card.json, model.tflite or float_layers.npz unreadable or malformed):
    one line naming the file and the problem."""


class NetInputError(ValueError):
    """Inputs a network cannot take: not [n, n_in], NaN or inf, or finite values that overflow once normalised
    and scaled (as :meth:`onboard.policy.policy_base.Policy.quantize_input` refuses them); one line naming the
    network."""


ACTIVATIONS = ("TANH", "NONE")
# and what loading a model (its card's fields, LiteRT, the flatbuffer reader) raises besides
_READ_ERRORS = NPZ_READ_ERRORS + (IndexError, TypeError, AttributeError, struct.error)


def load_float_layers(model_dir, n_in=None, n_out=None):
    """``[(W [out, in], b [out], activation)]`` of ``model_dir/float_layers.npz`` (the float network, folded).
    Raises :class:`ModelError` when the file is unreadable or the layers are malformed (missing, not numeric,
    non-finite, shapes not chaining from ``n_in`` inputs to ``n_out`` outputs, unknown activation)."""
    path = os.path.join(model_dir, FLOAT_FILE)
    try:
        with np.load(path, allow_pickle=False) as z:
            n = len([k for k in z.files if k.startswith("w")])
            layers = [(z["w%d" % i], z["b%d" % i], str(z["act%d" % i])) for i in range(n)]
    except FileNotFoundError:
        raise ModelError("%s: missing (the float network; needed for kind float)" % path) from None
    except _READ_ERRORS as exc:
        raise ModelError("%s: not a readable float-layers file: %s"
                         % (path, not_npz_reason(path) or read_error_reason(exc))) from None
    if not layers:
        raise ModelError("%s: holds no layers (w0, b0, act0, ...)" % path)
    width = n_in
    for i, (w, b, act) in enumerate(layers):
        if w.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
            raise ModelError("%s: layer %d weights are not numeric (w %s, b %s)" % (path, i, w.dtype, b.dtype))
        if w.ndim != 2 or b.shape != (w.shape[0],) or (width is not None and w.shape[1] != width):
            raise ModelError("%s: layer %d has w %s, b %s, expected w (out, %s) and b (out,)"
                             % (path, i, w.shape, b.shape, width if width is not None else "in"))
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
            raise ModelError("%s: layer %d holds non-finite weights (NaN or inf)" % (path, i))
        if act not in ACTIVATIONS:
            raise ModelError("%s: layer %d activation %r is not one of %s" % (path, i, act, ", ".join(ACTIVATIONS)))
        width = w.shape[0]
    if n_out is not None and width != n_out:
        raise ModelError("%s: the last layer gives %d output(s), the card says %d" % (path, width, n_out))
    return [(np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64), act) for w, b, act in layers]


CALIBRATION_KEY = "output_calibration"


class CalibrationError(ModelError):
    """A card's ``alexi.output_calibration`` is malformed."""


def parse_calibration(card, where="card"):
    """``(a [n_out], b [n_out])`` of the card's ``alexi.output_calibration`` (normalised output units), or None
    when the card has none. Raises :class:`CalibrationError` on a malformed entry (not a dict, missing or
    non-finite a / b, a <= 0, length not the output width)."""
    if not isinstance(card, dict):
        raise CalibrationError("%s: must be a JSON object, got %s" % (where, type(card).__name__))
    cal = card.get("alexi", {}).get(CALIBRATION_KEY) if isinstance(card.get("alexi"), dict) else None
    if cal is None:
        return None
    if not isinstance(cal, dict) or "a" not in cal or "b" not in cal:
        raise CalibrationError("%s: alexi.%s must be a mapping with a and b, got %r" % (where, CALIBRATION_KEY, cal))
    try:
        n_out = int(card["outputs"][0]["shape"][1])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise CalibrationError("%s: malformed card: outputs[0].shape[1] unreadable (%s)"
                               % (where, read_error_reason(exc))) from None
    try:
        a = np.asarray(cal["a"], dtype=np.float64).reshape(-1)
        b = np.asarray(cal["b"], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise CalibrationError("%s: alexi.%s a, b must be numbers, got a=%r b=%r"
                               % (where, CALIBRATION_KEY, cal["a"], cal["b"])) from None
    if a.size == 1 and n_out > 1:
        a = np.repeat(a, n_out)
    if b.size == 1 and n_out > 1:
        b = np.repeat(b, n_out)
    if a.size != n_out or b.size != n_out:
        raise CalibrationError("%s: alexi.%s a, b must have %d value(s), got %d, %d"
                               % (where, CALIBRATION_KEY, n_out, a.size, b.size))
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise CalibrationError("%s: alexi.%s a, b must be finite, got a=%s b=%s"
                               % (where, CALIBRATION_KEY, a.tolist(), b.tolist()))
    if np.any(a <= 0.0):
        raise CalibrationError("%s: alexi.%s a must be > 0 (a gain), got %s" % (where, CALIBRATION_KEY, a.tolist()))
    return a, b


def _act(x, name):
    return np.tanh(x) if name == "TANH" else x


class Net:
    """One network. ``kind`` ``int8`` (through ``backend``), ``float`` (the folded float layers, numpy) or
    ``auto`` (the card's ``alexi.runtime_kind``: float where the int8 export lost more than
    :data:`INT8_R2_TOLERANCE` of R^2 on the test set, else int8). ``calibrated`` False ignores the card's
    output calibration (the bare network)."""

    def __init__(self, model_dir, kind="auto", backend="litert", calibrated=True):
        if kind not in KINDS:
            raise ValueError("network kind must be one of %s, got %r" % (KINDS, kind))
        self.model_dir = model_dir
        card_path = os.path.join(model_dir, "card.json")
        try:
            with open(card_path) as fh:
                self.card = json.load(fh)
        except FileNotFoundError:
            raise ModelError("%s: missing (no network there)" % card_path) from None
        except OSError as exc:
            raise ModelError("%s: cannot read it (%s)" % (card_path, read_error_reason(exc))) from None
        except ValueError as exc:
            raise ModelError("%s: not valid JSON (%s)" % (card_path, exc)) from None
        if not isinstance(self.card, dict):
            raise ModelError("%s: must be a JSON object, got %s" % (card_path, type(self.card).__name__))
        try:
            alexi = self.card.get("alexi", {})
            if kind == "auto":
                kind = alexi.get("runtime_kind", "int8") if isinstance(alexi, dict) else "int8"
            if kind not in ("int8", "float"):
                raise ValueError("alexi.runtime_kind must be int8 or float, got %r" % (kind,))
            spec_in, spec_out = self.card["inputs"][0], self.card["outputs"][0]
            self.in_mean = np.asarray(spec_in["normalization"]["mean"], dtype=np.float64)
            self.in_std = np.asarray(spec_in["normalization"]["std"], dtype=np.float64)
            self.out_mean = np.asarray(spec_out["normalization"]["mean"], dtype=np.float64)
            self.out_std = np.asarray(spec_out["normalization"]["std"], dtype=np.float64)
            self.in_scale = float(spec_in["quantization"]["scale"])
            self.in_zp = int(spec_in["quantization"]["zero_point"])
            self.out_scale = float(spec_out["quantization"]["scale"])
            self.out_zp = int(spec_out["quantization"]["zero_point"])
            self.n_in, self.n_out = int(spec_in["shape"][1]), int(spec_out["shape"][1])
            # the card's structure and normalisation (as load_policy checks it for int8; the float layers read
            # the same card), and finite means, which that check leaves to the caller
            check_card_fields(self.card)
            for side, mean in (("inputs", self.in_mean), ("outputs", self.out_mean)):
                if not np.all(np.isfinite(mean)):
                    raise ValueError("card %s normalization mean must be finite, got %s" % (side, mean.tolist()))
        except KeyError as exc:
            raise ModelError("%s: malformed card (no %s)" % (card_path, exc)) from None
        except (ValueError, TypeError, IndexError, AttributeError) as exc:
            raise ModelError("%s: malformed card (%s)" % (card_path, exc)) from None
        self.kind = kind
        self.calibration = parse_calibration(self.card, card_path) if calibrated else None
        self.policy = None
        self.layers = None
        if kind == "int8":
            tfl = os.path.join(model_dir, "model.tflite")
            if not os.path.isfile(tfl):
                raise ModelError("%s: missing (the int8 network; needed for kind int8)" % tfl)
            try:
                self.policy = load_policy(model_dir, backend=backend)
            except _READ_ERRORS as exc:
                why = read_error_reason(exc)
                raise ModelError(why if model_dir in why else "%s: %s" % (tfl, why)) from None
        else:
            self.layers = load_float_layers(model_dir, self.n_in, self.n_out)

    def quantise(self, x_norm):
        """Normalised inputs [n, k] -> int8 (round half away from zero, clamped to [-128, 127]), as
        ``Policy.quantize_input``; :class:`NetInputError` for a value that is NaN or inf once scaled."""
        with np.errstate(over="ignore", invalid="ignore"):
            v = np.asarray(x_norm, dtype=np.float64) / self.in_scale
        self._check_finite(v, "once normalised and scaled by %g (overflows)" % self.in_scale)
        q = np.sign(v) * np.floor(np.abs(v) + 0.5) + self.in_zp
        return np.clip(q, -128, 127).astype(np.int8)

    def _check_finite(self, x, what):
        if not np.all(np.isfinite(x)):
            bad = np.argwhere(~np.isfinite(x))[0]
            raise NetInputError("%s: input [row %d, column %d] is %r %s"
                                % (self.model_dir, bad[0], bad[-1], float(x[tuple(bad)]), what))

    def _check_shape(self, x):
        if x.ndim != 2 or x.shape[1] != self.n_in:
            raise NetInputError("%s: inputs must be [n, %d], got shape %s" % (self.model_dir, self.n_in, x.shape))

    def calibrate(self, y_norm):
        """The card's output calibration y_cal = a * y + b applied to normalised outputs [n, n_out] (identity
        without one)."""
        y_norm = np.asarray(y_norm, dtype=np.float64)
        if self.calibration is None:
            return y_norm
        a, b = self.calibration
        return y_norm * a + b

    def predict_normalised(self, x_norm, calibrated=False):
        """Network output [n, n_out] (normalised space) for normalised inputs [n, n_in]; with ``calibrated``
        the card's output calibration is applied. :class:`NetInputError` for inputs not [n, n_in] or holding
        NaN or inf (the int8 kind also for values that overflow once scaled); finite values beyond the int8
        range saturate."""
        y = self._forward(x_norm)
        return self.calibrate(y) if calibrated else y

    def _forward(self, x_norm):
        x_norm = np.atleast_2d(np.asarray(x_norm, dtype=np.float64))
        self._check_shape(x_norm)
        self._check_finite(x_norm, "(normalised inputs must be finite)")
        if self.kind == "float":
            h = x_norm
            for w, b, act in self.layers:
                h = _act(h @ w.T + b, act)
            return h
        q = self.quantise(x_norm)
        if hasattr(self.policy, "run_batch_q"):
            out = self.policy.run_batch_q(q)
        else:
            out = np.array([self.policy.run([row.tolist()])[0] for row in q])
        return (np.asarray(out, dtype=np.float64).reshape(len(q), -1) - self.out_zp) * self.out_scale

    def normalise(self, x):
        return (np.asarray(x, dtype=np.float64) - self.in_mean) / self.in_std

    def denormalise(self, y_norm):
        return np.asarray(y_norm, dtype=np.float64) * self.out_std + self.out_mean

    def predict(self, x, calibrated=True):
        """SI inputs [n, n_in] -> SI outputs [n, n_out], the card's output calibration applied (if any) unless
        ``calibrated`` is False. :class:`NetInputError` for inputs not [n, n_in], holding NaN or inf, or
        overflowing once normalised."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        self._check_shape(x)
        self._check_finite(x, "(inputs must be finite)")
        with np.errstate(over="ignore"):
            x_norm = self.normalise(x)
        self._check_finite(x_norm, "once normalised (overflows)")
        return self.denormalise(self.predict_normalised(x_norm, calibrated))

    def predict_one(self, x):
        """One SI input vector -> SI output vector (list-free fast path for the simulator loop)."""
        return self.predict(np.asarray(x, dtype=np.float64)[None, :])[0]


def model_dir(name, root=None):
    return os.path.join(root or MODEL_ROOT, name)


def load(name, kind="auto", backend="litert", root=None, calibrated=True):
    """The network ``models/alexi/<name>`` (``calibrated`` False: its card's output calibration ignored)."""
    return Net(model_dir(name, root), kind, backend, calibrated)
