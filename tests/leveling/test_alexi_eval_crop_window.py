"""alexi-eval refuses, before any work, terrain crops smaller than the terrain net's dh window: generated sessions
of ``datagen.crop_cells`` below it (0 still means no terrain score) and a ``data.dir`` session logged with smaller
crops. Both used to run the whole evaluation (and the data generation) and end in a ValueError traceback from
the terrain score."""
import shutil

from harness.cli import main
from harness.sim.alexi import nets

WINDOW = int(nets.load("terrain", "float").card["alexi"]["window_cells"])


def _refused(tmp_path, capsys, setting, needle):
    out = tmp_path / "out"
    code = main(["run", "alexi-eval", "--reduced", "--quiet", "--out", str(out), "--set", setting])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (out / "metrics.json").exists()


def test_generated_crops_smaller_than_the_window_are_one_line_exit_2(tmp_path, capsys):
    _refused(tmp_path, capsys, "datagen.crop_cells=%d" % (WINDOW // 2),
             "datagen.crop_cells (%d) must be 0 (no terrain score) or hold the terrain net's %d-cell window"
             % (WINDOW // 2, WINDOW))


def test_a_session_with_crops_smaller_than_the_window_is_one_line_exit_2(example_session, tmp_path, capsys):
    small = example_session(8, 2, 5, "crop_window", WINDOW // 2)
    folder = tmp_path / "data"
    folder.mkdir()
    for t in ("A", "B"):
        shutil.copy(small, folder / ("sandbox_%s.npz" % t))
    _refused(tmp_path, capsys, "data.dir=%s" % folder,
             "sandbox_A.npz: its terrain crops are %d cells, smaller than the terrain net's %d-cell window"
             % (WINDOW // 2, WINDOW))
