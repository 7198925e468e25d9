"""The grading-agent training (train_policy) with a damaged ``--data`` cache or a missing / damaged ``--init``
folder gives one line naming the file and exit 2 (a ConfigError), never a traceback: before, an empty or
truncated cache ended in EOFError / BadZipFile and a missing ``--init`` agent in FileNotFoundError. The int8
export (export_int8) with an ``--out`` it cannot create says so in one line (exit 2) before it runs the
calibration episodes: before, a FileExistsError traceback came after them."""
import types

import numpy as np
import pytest

from harness.config import ConfigError


@pytest.mark.parametrize("case,needle", [("empty", "empty file"), ("truncated", "not an .npz"),
                                         ("text", "not an .npz")])
def test_a_damaged_data_cache_is_one_line_and_exit_2(tmp_path, capsys, case, needle):
    pytest.importorskip("torch")
    from harness.training.grading_policy import train_policy
    path = tmp_path / "data.npz"
    if case == "empty":
        path.write_bytes(b"")
    elif case == "truncated":
        np.savez(path, train_x=np.zeros((50, 50)), recipe=np.str_("{}"))
        path.write_bytes(path.read_bytes()[:300])
    else:
        path.write_text("train_x = 1\n")
    out = tmp_path / "out"
    code = train_policy.main(["--data", str(path), "--agents", "agent1", "--epochs", "0", "--dagger-rounds", "0",
                              "--threads", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("train_policy: --data cache %s: " % path) and needle in err, err
    assert not out.exists()


@pytest.mark.parametrize("case,needle", [("missing", "--init weights"), ("damaged_weights", "not an .npz"),
                                         ("bad_card", "--init card")])
def test_a_missing_or_damaged_init_folder_is_a_config_error(tmp_path, case, needle):
    pytest.importorskip("torch")
    from harness.training.grading_policy import train_policy
    folder = tmp_path / "init" / "agent1"
    if case != "missing":
        folder.mkdir(parents=True)
        if case == "damaged_weights":
            (folder / "weights.npz").write_bytes(b"PK\x03\x04 not a zip")
        else:
            np.savez(folder / "weights.npz", w=np.zeros(3))
            (folder / "card.json").write_text("{not json")
    args = types.SimpleNamespace(init=str(tmp_path / "init"))
    with pytest.raises(ConfigError) as err:
        train_policy.train_agent("agent1", {}, {}, args, {}, {}, log=lambda text: None)
    msg = str(err.value)
    assert needle in msg and str(folder) in msg and "\n" not in msg, msg



def test_export_int8_with_an_output_folder_it_cannot_create_is_one_line_before_calibrating(tmp_path, capsys,
                                                                                        monkeypatch):
    from harness.training.grading_policy import export_int8

    def no_calibration(*args, **kwargs):
        raise AssertionError("calibration episodes ran before the output folder was checked")

    monkeypatch.setattr(export_int8, "collect_crops", no_calibration)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    out = blocker / "int8"
    code = export_int8.main(["--agent", "agent1", "--out", str(out), "--calib-episodes", "1", "--eval-episodes", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: cannot write the int8 model folder %s" % out), err
