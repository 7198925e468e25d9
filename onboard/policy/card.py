"""Model cards: the JSON next to every ``model.tflite`` and its validation on load (pure).

A model directory ``models/<name>/`` holds ``model.tflite`` and ``card.json``::

    {"schema": "onboard-policy-card/1", "name": ..., "version": int, "description": ...,
     "file": "model.tflite", "sha256": hex digest of the file, "size_bytes": int,
     "op_set": ["FULLY_CONNECTED", ...],
     "inputs":  [{"name", "shape", "dtype", "quantization": {"scale", "zero_point"},
                  "features": [{"name", "unit", "meaning"}],
                  "normalization": {"mean": [...], "std": [...]}}],   # x_model = (x - mean) / std
     "outputs": [{"name", "shape", "dtype", "quantization": {...}, "unit", "meaning",
                  "actions": [{"name", ...}] (optional: output is one value per action)}],
     "training": {"seed", "framework", "data", ...}, "metrics": {...}}

``validate(card, model)`` checks the parsed model (``tflite_pure.read_model``) against the
card: I/O shapes, dtypes, quantization parameters and the operator set, and raises
:class:`CardMismatchError` (a ``ValueError``) naming the first difference.
"""

from onboard.core.settings import int_at_least, is_number

CARD_SCHEMA = "onboard-policy-card/1"
_IS_COUNT = int_at_least(1)[1]          # a dimension of a shape: a whole number >= 1, not a bool


class CardMismatchError(ValueError):
    """The model file does not match its card (wrong model, edited file, stale card)."""


def _require(card, key, kind):
    if key not in card:
        raise CardMismatchError("card is missing %r" % key)
    value = card[key]
    if not isinstance(value, kind):
        raise CardMismatchError("card %r must be %s" % (key, kind.__name__))
    return value


def check_card_fields(card):
    """Structure of a card (raises CardMismatchError)."""
    if not isinstance(card, dict):
        raise CardMismatchError("card must be a JSON object")
    if card.get("schema") != CARD_SCHEMA:
        raise CardMismatchError("card schema %r, expected %r" % (card.get("schema"), CARD_SCHEMA))
    _require(card, "name", str)
    for op in _require(card, "op_set", list):
        if not isinstance(op, str):
            raise CardMismatchError("card op_set must list operator names (str), got %r" % (op,))
    for side in ("inputs", "outputs"):
        specs = _require(card, side, list)
        if not specs:
            raise CardMismatchError("card has no %s" % side)
        for spec in specs:
            if not isinstance(spec, dict):
                raise CardMismatchError("card %s entry must be an object, got %r" % (side, spec))
            for key in ("name", "shape", "dtype"):
                if key not in spec:
                    raise CardMismatchError("card %s entry is missing %r" % (side, key))
            shape = spec["shape"]
            if not isinstance(shape, list) or not all(_IS_COUNT(d) for d in shape):
                raise CardMismatchError("card %s %r shape must be a list of positive whole numbers, got %r"
                                        % (side, spec["name"], shape))
            n = 1
            for d in shape:
                n *= d
            actions = spec.get("actions")
            if actions is not None and not (isinstance(actions, list) and len(actions) == n):
                raise CardMismatchError("card %s %r actions must be a list of %d entries (one per value), got %r"
                                        % (side, spec["name"], n, actions))
            norm = spec.get("normalization")
            if norm is not None:
                if not isinstance(norm, dict):
                    raise CardMismatchError("card %s %r normalization must be an object" % (side, spec["name"]))
                mean, std = norm.get("mean"), norm.get("std")
                if not (isinstance(mean, list) and isinstance(std, list) and len(mean) == n and len(std) == n):
                    raise CardMismatchError("card %s %r normalization needs %d means and stds"
                                            % (side, spec["name"], n))
                for m in mean:
                    if not is_number(m):
                        raise CardMismatchError("card %s %r normalization mean must be finite numbers, got %r"
                                                % (side, spec["name"], m))
                for s in std:
                    if not (is_number(s) and s > 0):
                        raise CardMismatchError("card normalization std must be > 0")


def _close(a, b):
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-30)


def validate(card, model):
    """Check a parsed model against its card; raises CardMismatchError on the first difference."""
    check_card_fields(card)
    ops = []
    for op in model["operators"]:
        if op["op"] not in ops:
            ops.append(op["op"])
    if sorted(ops) != sorted(card["op_set"]):
        raise CardMismatchError("model operators %s differ from the card's op_set %s"
                                % (sorted(ops), sorted(card["op_set"])))
    for side in ("inputs", "outputs"):
        indices = model[side]
        specs = card[side]
        if len(indices) != len(specs):
            raise CardMismatchError("model has %d %s, card lists %d" % (len(indices), side, len(specs)))
        for idx, spec in zip(indices, specs):
            t = model["tensors"][idx]
            if list(t["shape"]) != list(spec["shape"]):
                raise CardMismatchError("%s %r: model shape %r, card shape %r"
                                        % (side[:-1], spec["name"], t["shape"], spec["shape"]))
            if t["dtype"] != spec["dtype"]:
                raise CardMismatchError("%s %r: model dtype %s, card dtype %s"
                                        % (side[:-1], spec["name"], t["dtype"], spec["dtype"]))
            q = spec.get("quantization")
            if q is not None:
                if not t["scales"]:
                    raise CardMismatchError("%s %r: card has quantization, model tensor has none"
                                            % (side[:-1], spec["name"]))
                try:
                    scale, zero_point = q["scale"], q["zero_point"]
                    if not (is_number(scale) and is_number(zero_point) and zero_point == int(zero_point)):
                        raise ValueError("not numbers")
                    scale, zero_point = float(scale), int(zero_point)
                except (TypeError, ValueError, KeyError, OverflowError):
                    raise CardMismatchError("%s %r: card quantization must be an object with a number scale and "
                                            "an integer zero_point, got %r" % (side[:-1], spec["name"], q))
                if not _close(t["scales"][0], scale) or t["zero_points"][0] != zero_point:
                    raise CardMismatchError(
                        "%s %r: model quantization (scale %r, zero point %d) differs from the "
                        "card (%r, %r)" % (side[:-1], spec["name"], t["scales"][0],
                                           t["zero_points"][0], q["scale"], q["zero_point"]))
    return True
