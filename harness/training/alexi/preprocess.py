"""The thesis's preprocessing of the Sandbox logs (Cook 2017, 6.2.2 for V1 and 6.3.2 for V2), one step per
function, each switched by a recipe setting (:data:`V1_RECIPE`, :data:`V2_RECIPE`, :func:`check_recipe`).

Order (6.3.2): outlier cull -> min-max normalisation -> smoothing -> 9-level quantisation, each feature
processed as its own series over the frames of one session (never across sessions).

- cull ``v1`` (6.2.2, as written; reading aid A17): drop |dtheta| > 0.25 rad (the text's "dtheta > 0.25 or
  dtheta < 0.25" is a typo), |phi| > 1.22 rad, |psi| > 1.22 rad and the one-sided v - v_mu > v_sigma;
  cull ``v2`` (6.3.2): drop |dx - mu| >= 3 sigma or |dy - mu| >= 3 sigma (world-frame dx, dy); ``none``.
  Teleport frames (wrap-around) are dropped as well when ``drop_teleports`` (A17).
- normalisation (6.2.2, sign repaired as A18): x' = (x - (X_max + X_min)/2) / ((X_max - X_min)/2), with
  X_min, X_max from the training data, stored in the model card and applied at inference.
- smoothing: ``moving_average`` (6.3.2: a length-250 kernel of 1/250, centred, edges repeat the end value),
  ``exponential`` (6.2.2: y_i = alpha x_i + (1 - alpha) y_{i-1}) or ``none``.
- quantisation (6.2.2): 9 levels, truncation towards zero to a multiple of 0.2 with a dead zone (-0.2, 0.2)
  -> 0; |x| >= 1 clamps to +-0.8 (A18).
"""
import numpy as np

from harness.config import ConfigError

THESIS_WINDOW = 250
CULLS = ("v1", "v2", "none")
SMOOTHINGS = ("none", "moving_average", "exponential")

V1_RECIPE = {"cull": "v1", "drop_teleports": True, "normalise": True, "smoothing": "none",
             "window": THESIS_WINDOW, "alpha": 0.1, "quantise": True}
V2_RECIPE = {"cull": "v2", "drop_teleports": True, "normalise": True, "smoothing": "moving_average",
             "window": THESIS_WINDOW, "alpha": 0.1, "quantise": True}
RAW_RECIPE = {"cull": "none", "drop_teleports": True, "normalise": True, "smoothing": "none",
              "window": THESIS_WINDOW, "alpha": 0.1, "quantise": False}


def check_recipe(recipe):
    """Raise ConfigError (one line) for an unknown or out-of-range step setting (a recipe that is no dict, a
    window or alpha that is no number or is a bool included)."""
    keys = set(V2_RECIPE)
    if not isinstance(recipe, dict):
        raise ConfigError("preprocessing recipe must be a table of the keys %s, got %r" % (sorted(keys), recipe))
    if set(recipe) != keys:
        raise ConfigError("preprocessing recipe needs exactly the keys %s, got %s" % (sorted(keys), sorted(recipe)))
    if recipe["cull"] not in CULLS:
        raise ConfigError("preprocessing cull must be one of %s, got %r" % (CULLS, recipe["cull"]))
    if recipe["smoothing"] not in SMOOTHINGS:
        raise ConfigError("preprocessing smoothing must be one of %s, got %r" % (SMOOTHINGS, recipe["smoothing"]))
    if not (isinstance(recipe["window"], int) and not isinstance(recipe["window"], bool) and recipe["window"] >= 1):
        raise ConfigError("preprocessing window must be a whole number >= 1, got %r" % (recipe["window"],))
    if not (isinstance(recipe["alpha"], (int, float)) and not isinstance(recipe["alpha"], bool)
            and 0.0 < float(recipe["alpha"]) <= 1.0):
        raise ConfigError("preprocessing alpha must be a number in (0, 1], got %r" % (recipe["alpha"],))
    for k in ("drop_teleports", "normalise", "quantise"):
        if not isinstance(recipe[k], bool):
            raise ConfigError("preprocessing %s must be true or false, got %r" % (k, recipe[k]))
    return recipe


def cull_mask(cull, dyaw_rad, pitch_rad, roll_rad, speed, dnorth, deast, teleport=None):
    """Boolean mask of the frames kept (True) by the ``cull`` rule (module docstring)."""
    n = len(dyaw_rad)
    keep = np.ones(n, dtype=bool)
    if cull == "v1":
        keep &= np.abs(dyaw_rad) <= 0.25
        keep &= np.abs(pitch_rad) <= 1.22
        keep &= np.abs(roll_rad) <= 1.22
        keep &= ~(speed - speed.mean() > speed.std())            # one-sided 1 sigma, as written (A17)
    elif cull == "v2":
        for d in (np.asarray(dnorth, dtype=np.float64), np.asarray(deast, dtype=np.float64)):
            if d.std() > 0.0:                                      # a constant series has no outliers
                keep &= np.abs(d - d.mean()) < 3.0 * d.std()
    elif cull != "none":
        raise ValueError("unknown cull %r" % (cull,))
    if teleport is not None:
        keep &= ~np.asarray(teleport, dtype=bool)
    return keep


def minmax_fit(x):
    """(X_min, X_max) per column of ``x`` [n, k] (a constant column gets a unit half-range)."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = x.min(axis=0), x.max(axis=0)
    hi = np.where(hi - lo < 1e-12, lo + 2.0, hi)
    return lo, hi


def minmax_apply(x, lo, hi):
    """Normalise to (-1, 1): (x - mid) / half (thesis 6.2.2, A18)."""
    mid, half = 0.5 * (np.asarray(hi) + np.asarray(lo)), 0.5 * (np.asarray(hi) - np.asarray(lo))
    return (np.asarray(x, dtype=np.float64) - mid) / half


def minmax_invert(x, lo, hi):
    mid, half = 0.5 * (np.asarray(hi) + np.asarray(lo)), 0.5 * (np.asarray(hi) - np.asarray(lo))
    return np.asarray(x, dtype=np.float64) * half + mid


def moving_average(x, window=THESIS_WINDOW):
    """Centred moving average of each column over ``window`` frames (thesis 6.3.2's 1/250 kernel); the
    series' ends repeat their end values."""
    from scipy.ndimage import uniform_filter1d
    x = np.asarray(x, dtype=np.float64)
    if window <= 1 or x.shape[0] == 0:
        return x.copy()
    return uniform_filter1d(x, size=int(window), axis=0, mode="nearest")


def exponential(x, alpha):
    """y_i = alpha x_i + (1 - alpha) y_{i-1}, y_0 = x_0 (thesis 6.2.2), per column."""
    x = np.asarray(x, dtype=np.float64)
    y = np.empty_like(x)
    if x.shape[0] == 0:
        return y
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = alpha * x[i] + (1.0 - alpha) * y[i - 1]
    return y


def quantise(x):
    """The 9-level quantiser of thesis 6.2.2: truncate |x| to a multiple of 0.2, keep the sign, clamp to
    +-0.8 (values are assumed normalised to (-1, 1))."""
    x = np.asarray(x, dtype=np.float64)
    steps = np.minimum(np.floor(np.abs(x) * 5.0 + 1e-9), 4.0)
    return np.sign(x) * steps * 0.2


def series(x, recipe, lo=None, hi=None):
    """Normalise, smooth and quantise the columns of one session's kept frames ``x`` [n, k] by ``recipe``."""
    y = np.asarray(x, dtype=np.float64)
    if recipe["normalise"]:
        y = minmax_apply(y, lo, hi)
    if recipe["smoothing"] == "moving_average":
        y = moving_average(y, recipe["window"])
    elif recipe["smoothing"] == "exponential":
        y = exponential(y, float(recipe["alpha"]))
    if recipe["quantise"]:
        y = quantise(y)
    return y
