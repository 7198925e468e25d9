"""Accuracy figures of thesis 6.2.4 / 6.3.4: MSE, R^2 two ways (reading aid A21) and Spearman's rho (table 6.2).

- ``r2_pearson``: the squared Pearson correlation of truth and prediction (the thesis's words: "the squared
  correlation between the predicted output and the expected output"); the acceptance uses it;
- ``r2_cod``: the coefficient of determination 1 - SSE / SST (can be negative: worse than the mean).
"""
import math

import numpy as np


def _constant(v):
    """True when the 1-D array ``v`` holds fewer than two values or all its values are equal (its spread is
    then 0 exactly; ``v.std()`` is not: the float mean of equal values such as 0.1 may differ from them by an
    ulp, leaving a spread of ~1e-17 that divides into correlations and R^2 values of ~1e31)."""
    return v.size < 2 or not bool(np.any(v != v[0]))


def mse(y, p):
    y, p = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
    return float(np.mean((y - p) ** 2))


def r2_pearson(y, p):
    y, p = np.asarray(y, dtype=np.float64).ravel(), np.asarray(p, dtype=np.float64).ravel()
    if _constant(y) or _constant(p) or y.std() == 0 or p.std() == 0:
        return 0.0
    r = float(np.corrcoef(y, p)[0, 1])
    return r * r if math.isfinite(r) else 0.0


def pearson(y, p):
    y, p = np.asarray(y, dtype=np.float64).ravel(), np.asarray(p, dtype=np.float64).ravel()
    if _constant(y) or _constant(p) or y.std() == 0 or p.std() == 0:
        return 0.0
    r = float(np.corrcoef(y, p)[0, 1])
    return r if math.isfinite(r) else 0.0


def r2_cod(y, p):
    """1 - SSE / SST; 0 for a constant target (SST 0: no variance to explain)."""
    y, p = np.asarray(y, dtype=np.float64), np.asarray(p, dtype=np.float64)
    sst = float(np.sum((y - y.mean()) ** 2))
    if sst == 0 or _constant(y.ravel()):
        return 0.0
    return 1.0 - float(np.sum((y - p) ** 2)) / sst


def gain(y, p):
    """Least-squares slope of the prediction ``p`` on the truth ``y`` (cov(y, p) / var(y), dimensionless in
    the same normalised units): 1 for an unbiased scale, < 1 for a prediction that is too small; 0 for a
    constant truth."""
    y, p = np.asarray(y, dtype=np.float64).ravel(), np.asarray(p, dtype=np.float64).ravel()
    var = float(np.sum((y - y.mean()) ** 2))
    if var == 0 or _constant(y):
        return 0.0
    return float(np.sum((y - y.mean()) * (p - p.mean()))) / var


def scores_and_gain(y, p):
    """:func:`scores` of the prediction ``p`` with its :func:`gain` (``gain`` last)."""
    return dict(scores(y, p), gain=gain(y, p))


def spearman(a, b):
    """Spearman's rank correlation of ``a`` and ``b`` (ties share their mean rank); 0 where it is undefined
    (a constant series, fewer than two values)."""
    from scipy.stats import spearmanr
    r = float(spearmanr(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)).statistic)
    return r if math.isfinite(r) else 0.0


def scores(y, p):
    """{mse, r2_pearson, r2_cod} of one output."""
    return {"mse": mse(y, p), "r2_pearson": r2_pearson(y, p), "r2_cod": r2_cod(y, p)}
