"""Small linear algebra on flat Python lists (MicroPython-compatible).

Vectors are lists of floats. A matrix with ``rows`` x ``cols`` entries is a flat
row-major list: element (i, j) is ``m[i * cols + j]``. Functions take the shape
explicitly so no hidden metadata is needed; they allocate their result.
"""
import math


class LinAlgError(ValueError):
    """A matrix operation got an input it cannot handle (singular, not SPD, wrong size)."""


def zeros(n):
    return [0.0] * n


def identity(n):
    m = [0.0] * (n * n)
    for i in range(n):
        m[i * n + i] = 1.0
    return m


def diag(values):
    n = len(values)
    m = [0.0] * (n * n)
    for i in range(n):
        m[i * n + i] = float(values[i])
    return m


def vadd(a, b):
    return [a[i] + b[i] for i in range(len(a))]


def vsub(a, b):
    return [a[i] - b[i] for i in range(len(a))]


def vscale(a, s):
    return [x * s for x in a]


def dot(a, b):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * b[i]
    return s


def norm(a):
    return math.sqrt(dot(a, a))


def cross(a, b):
    """Cross product of two 3-vectors."""
    return [a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0]]


def skew(v):
    """3x3 skew-symmetric matrix [v]x such that skew(v) * w == cross(v, w)."""
    return [0.0, -v[2], v[1],
            v[2], 0.0, -v[0],
            -v[1], v[0], 0.0]


def mat_mul(a, b, rows, inner, cols):
    """(rows x inner) * (inner x cols) -> (rows x cols)."""
    out = [0.0] * (rows * cols)
    for i in range(rows):
        ai = i * inner
        oi = i * cols
        for k in range(inner):
            aik = a[ai + k]
            if aik == 0.0:
                continue
            bk = k * cols
            for j in range(cols):
                out[oi + j] += aik * b[bk + j]
    return out


def mat_vec(a, v, rows, cols):
    """(rows x cols) * (cols) -> (rows)."""
    out = [0.0] * rows
    for i in range(rows):
        s = 0.0
        ai = i * cols
        for j in range(cols):
            s += a[ai + j] * v[j]
        out[i] = s
    return out


def columns(a, rows, cols, picks):
    """The columns ``picks`` (indices) of the rows x cols matrix ``a``: rows x len(picks), e.g. P H^T
    for a measurement matrix H that selects states."""
    m = len(picks)
    out = [0.0] * (rows * m)
    for i in range(rows):
        for j in range(m):
            out[i * m + j] = a[i * cols + picks[j]]
    return out


def transpose(a, rows, cols):
    out = [0.0] * (rows * cols)
    for i in range(rows):
        for j in range(cols):
            out[j * rows + i] = a[i * cols + j]
    return out


def mat_add(a, b):
    return [a[i] + b[i] for i in range(len(a))]


def mat_sub(a, b):
    return [a[i] - b[i] for i in range(len(a))]


def mat_scale(a, s):
    return [x * s for x in a]


def symmetrize(a, n):
    """Return (A + A^T) / 2 for an n x n matrix."""
    out = list(a)
    for i in range(n):
        for j in range(i + 1, n):
            v = 0.5 * (a[i * n + j] + a[j * n + i])
            out[i * n + j] = v
            out[j * n + i] = v
    return out


def cholesky(a, n):
    """Lower-triangular L with L * L^T = A for symmetric positive-definite A."""
    low = [0.0] * (n * n)
    for i in range(n):
        for j in range(i + 1):
            s = a[i * n + j]
            for k in range(j):
                s -= low[i * n + k] * low[j * n + k]
            if i == j:
                if not s > 0.0:
                    raise LinAlgError("matrix is not positive definite")
                low[i * n + i] = math.sqrt(s)
            else:
                low[i * n + j] = s / low[j * n + j]
    return low


def inverse(a, n):
    """Inverse of an n x n matrix by Gauss-Jordan elimination with partial pivoting."""
    m = list(a)
    inv = identity(n)
    for col in range(n):
        pivot = col
        best = abs(m[col * n + col])
        for r in range(col + 1, n):
            v = abs(m[r * n + col])
            if v > best:
                best = v
                pivot = r
        if best == 0.0:
            raise LinAlgError("matrix is singular")
        if pivot != col:
            for j in range(n):
                m[col * n + j], m[pivot * n + j] = m[pivot * n + j], m[col * n + j]
                inv[col * n + j], inv[pivot * n + j] = inv[pivot * n + j], inv[col * n + j]
        p = m[col * n + col]
        for j in range(n):
            m[col * n + j] /= p
            inv[col * n + j] /= p
        for r in range(n):
            if r == col:
                continue
            f = m[r * n + col]
            if f == 0.0:
                continue
            for j in range(n):
                m[r * n + j] -= f * m[col * n + j]
                inv[r * n + j] -= f * inv[col * n + j]
    return inv


def is_finite(values):
    """True when every entry is a finite float (no NaN, no inf)."""
    for v in values:
        if v != v or v == float("inf") or v == float("-inf"):
            return False
    return True
