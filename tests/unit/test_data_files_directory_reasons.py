"""harness.data_files: a directory given where a .npz or .npy file belongs is named as a directory, not as a damaged
or truncated file."""
import numpy as np
import pytest

from harness.config import ConfigError
from harness.data_files import not_npy_reason, not_npz_reason
from harness.training.npz_files import read_npz


def test_a_directory_is_no_npz_and_no_npy(tmp_path):
    assert not_npz_reason(str(tmp_path)) == "is a directory, not a file"
    assert not_npy_reason(str(tmp_path)) == "is a directory, not a file"


def test_a_directory_given_as_an_npz_is_one_line_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=r"^weights .*: is a directory, not a file$"):
        read_npz(str(tmp_path), "weights")


def test_real_files_are_unchanged(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros(3))
    np.savez(tmp_path / "a.npz", x=np.zeros(3))
    assert not_npy_reason(str(tmp_path / "a.npy")) is None and not_npz_reason(str(tmp_path / "a.npz")) is None
    (tmp_path / "e.npz").write_bytes(b"")
    assert not_npz_reason(str(tmp_path / "e.npz")) == "empty file"
    assert not_npz_reason(str(tmp_path / "missing.npz")) is None
