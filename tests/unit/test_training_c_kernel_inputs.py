"""HostCPolicy.run_batch_q (the generated C kernel through ctypes) refuses an array of the wrong shape or with
values outside int8 with InputError: the C code reads n * n_in bytes, so a narrower or 1-D array was read past
its end and a value such as 300 wrapped to 44, both giving outputs without an error."""
import shutil

import numpy as np
import pytest

from harness.training.fixtures import chain_model
from onboard.policy.int8_pure import InputError

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc needed for the host build of the C kernel")


@pytest.fixture(scope="module")
def c_policy():
    from harness.training.c_kernel import HostCPolicy
    return HostCPolicy(chain_model())          # 7 int8 inputs -> 5 int8 outputs


def test_a_good_batch_matches_row_by_row_runs(c_policy):
    x = np.random.default_rng(0).integers(-128, 128, (6, 7))
    out = c_policy.run_batch_q(x)
    assert out.shape == (6, 5)
    for row, y in zip(x, out):
        assert c_policy.run([row.tolist()])[0] == y.tolist()


@pytest.mark.parametrize("shape", [(4, 6), (4, 8), (7,), (2, 7, 1)])
def test_a_batch_of_the_wrong_shape_is_an_input_error(c_policy, shape):
    x = np.zeros(shape, dtype=np.int64)
    with pytest.raises(InputError, match=r"\[n, 7\]"):
        c_policy.run_batch_q(x)


@pytest.mark.parametrize("value", [300, -129, 128])
def test_values_outside_int8_are_an_input_error(c_policy, value):
    x = np.zeros((3, 7), dtype=np.int64)
    x[1, 4] = value
    with pytest.raises(InputError, match="whole numbers"):
        c_policy.run_batch_q(x)


def test_fractional_values_are_an_input_error(c_policy):
    with pytest.raises(InputError, match="whole numbers"):
        c_policy.run_batch_q(np.full((2, 7), 0.5))


def test_generated_files_appear_whole_by_rename(tmp_path, monkeypatch):
    """model.c / model.h / vectors.h are never opened for writing under their own names (a second test worker
    building the same model into the same folder truncated model.c while the first one's gcc read it): each
    is written to a temporary file and renamed, so a reader sees the old file or the new one, whole."""
    import builtins
    from harness.training import c_kernel
    real_open = builtins.open
    written = []

    def recording_open(path, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            written.append(str(path))
        return real_open(path, mode, *args, **kwargs)

    data = chain_model(seed=8)
    out = tmp_path / "gen"
    monkeypatch.setattr(builtins, "open", recording_open)
    c_kernel.write_generated(data, str(out), vectors=np.zeros((3, 7), dtype=np.int8))
    monkeypatch.setattr(builtins, "open", real_open)
    finals = {str(out / n) for n in ("model.c", "model.h", "vectors.h")}
    assert written and not finals & set(written), written
    assert sorted(p.name for p in out.iterdir()) == ["model.c", "model.h", "vectors.h"]   # no temporary left
    source, header, _ = c_kernel.generate_c(data)
    assert (out / "model.c").read_text() == source and (out / "model.h").read_text() == header
    assert "#define PI8_N_VECTORS 3" in (out / "vectors.h").read_text()
