"""Why a user's data file could not be read, in words for a one-line error (shared by the loaders of .npz files:
Sandbox sessions, Alexi network folders; and of .npy arrays: terrain and soil field files); and an .npz's bytes,
for writing it whole."""
import io
import os
import tokenize
import zipfile
import zlib

# what reading a user's .npz (np.load and its arrays) raises for a bad file: catch these, say why in one line
# (tokenize.TokenError: numpy tokenizes an array header, and an unclosed bracket in one raises it; MemoryError
# and OverflowError: a header of a few bytes can claim an array of petabytes, or of more elements than an
# index holds)
NPZ_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error, RuntimeError,
                   tokenize.TokenError, MemoryError, OverflowError)


def read_error_reason(exc):
    """The reason an exception from reading a file gives, for a message: a missing key's name, an OS error's
    text, else the exception's text or type."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def not_npz_reason(path):
    """Why ``path`` is no .npz at all ("is a directory, not a file", "empty file", "not an .npz (zip) file, or
    truncated"), or None when it is a zip archive (or cannot be looked at)."""
    if os.path.isdir(path):
        return "is a directory, not a file"
    try:
        if os.path.getsize(path) == 0:
            return "empty file"
        if not zipfile.is_zipfile(path):
            return "not an .npz (zip) file, or truncated"
    except OSError:
        return None
    return None


NPY_MAGIC = b"\x93NUMPY"           # the first bytes of every .npy file (NumPy's format, any version)


def not_npy_reason(path):
    """Why ``path`` is no .npy at all ("is a directory, not a file", "empty file", "not a .npy file (no NumPy header)"),
    or None when it starts like one (or cannot be looked at). Checked before ``np.load``, which reads other bytes
    as a pickle and says only that pickles are not allowed."""
    if os.path.isdir(path):
        return "is a directory, not a file"
    try:
        with open(path, "rb") as f:
            head = f.read(len(NPY_MAGIC))
    except OSError:
        return None
    if not head:
        return "empty file"
    if head != NPY_MAGIC:
        return "not a .npy file (no NumPy header)"
    return None


def npz_bytes(arrays, compressed=False):
    """The bytes of an .npz holding ``arrays`` ({name: array}), what ``np.savez`` (``np.savez_compressed`` with
    ``compressed``) writes: serialised in memory, so the caller writes the file whole
    (``harness.report.run_report.write_whole``) and a failure leaves the old file, never half of one."""
    import numpy as np
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()
