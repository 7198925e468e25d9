"""harness.data_files.NPZ_READ_ERRORS: an .npz of a few hundred bytes whose array header claims petabytes (numpy:
MemoryError) or more elements than an index holds (OverflowError) is a damaged file, one line naming it, like any
other (read through harness.training.npz_files.read_npz)."""
import io
import zipfile

import numpy as np
import pytest

from harness.config import ConfigError
from harness.training.npz_files import read_npz


def _npz_claiming(shape_text, tmp_path):
    header = ("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }" % shape_text).encode("latin1")
    header += b" " * (64 - (10 + len(header) + 1) % 64) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\0" * 64
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.npy", npy)
    path = tmp_path / "w.npz"
    path.write_bytes(buf.getvalue())
    return str(path)


@pytest.mark.parametrize("shape, reason", [("(1000000000000000,)", "Unable to allocate"),
                                           ("(100000000000000000000,)", "too large")])
def test_an_array_header_claiming_too_much_is_one_line(tmp_path, shape, reason):
    path = _npz_claiming(shape, tmp_path)
    with pytest.raises(ConfigError, match=r"^weights .*w\.npz: .*%s" % reason) as info:
        read_npz(path, "weights")
    assert "\n" not in str(info.value)


def test_a_real_npz_reads_as_before(tmp_path):
    np.savez(tmp_path / "w.npz", a=np.arange(3.0))
    assert read_npz(str(tmp_path / "w.npz"), "weights")["a"].tolist() == [0.0, 1.0, 2.0]
