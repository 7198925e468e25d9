"""Scenario ``level-hill`` through the CLI: hill-sensing robots (thesis Alg. 6 on the onboard Node, pitch from
their IMUs) level a mound field; users' heightmap files; bad files are one line and exit 2."""
import json

import numpy as np
import pytest

from harness.cli import main
from tests.leveling.png_files import png_gray8 as _png_gray8


def _run(tmp_path, capsys, *args, name="out"):
    out = tmp_path / name
    code = main(["run", "level-hill", "--quiet", "--out", str(out)] + list(args))
    err = capsys.readouterr().err
    return code, err, out


def test_reduced_run_halves_the_rms_with_pitch_from_the_imu(tmp_path, capsys):
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "duration_s=400", "--seed", "2")
    m = json.loads((out / "metrics.json").read_text())
    assert code == 0, err
    assert m["success"] and m["rms_reduction"] >= 0.5 and m["time_to_goal_s"] <= m["duration_s"]
    assert abs(m["volume_error_m3"]) <= 1e-12 and m["robots"] == 4
    assert m["pitch_source"] == "onboard tilt estimator (IMU)" and 0.0 < m["pitch_error_rms_deg"] < 2.0
    assert m["climbs"] > 0 and m["roughness_trace"]["rms_m"][0] == m["initial_rms_m"]
    for name in ("roughness.png", "terrain.png", "pitch.png"):
        assert (out / name).exists()


def test_a_level_grid_terrain_file_levels_here_too(tmp_path, capsys):
    """A .npy of whole voxel units (level-grid's convention): its highest cell becomes terrain.peak_m."""
    units = np.zeros((24, 24), dtype=np.int64)
    units[6:12, 5:11] = 12
    units[14:20, 13:19] = 7
    npy = tmp_path / "units.npy"
    np.save(npy, units)
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "terrain.file=" + str(npy), "--set",
                          "duration_s=60")
    assert code in (0, 3), err
    m = json.loads((out / "metrics.json").read_text())
    assert (m["rows"], m["cols"]) == (40, 40) and m["initial_range_m"] <= 0.06 + 1e-9
    assert m["final_rms_m"] < m["initial_rms_m"] and abs(m["volume_error_m3"]) <= 1e-12


def test_user_heightmaps_level(tmp_path, capsys):
    yy, xx = np.mgrid[0:28, 0:32]
    npy = tmp_path / "heap.npy"
    np.save(npy, np.maximum(0.0, 0.04 - 0.006 * np.hypot(yy - 14, xx - 15)))        # a cone, metres
    png = tmp_path / "ridge.png"
    _png_gray8(png, [[min(255, 60 * max(0, 4 - abs(c - 14))) for c in range(30)] for _ in range(26)])
    # pixels resampled so the smaller side covers terrain.min_side_m (1 m = 40 cells)
    for path, shape, extra in ((npy, (40, 46), []), (png, (40, 46), ["--set", "terrain.peak_m=0.04"])):
        code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "terrain.file=" + str(path),
                              "--set", "duration_s=60", "--set", "robots=2", *extra, name=path.stem)
        assert code in (0, 3), err
        m = json.loads((out / "metrics.json").read_text())
        assert (m["rows"], m["cols"]) == shape and m["terrain_source"] == str(path)
        assert abs(m["volume_error_m3"]) <= 1e-12 and m["final_rms_m"] < m["initial_rms_m"]


@pytest.mark.parametrize("content,needle", [(b"", "is empty"), (b"not a png at all", "terrain file"),
                                            (None, "not found")])
def test_bad_terrain_file_is_one_line_and_exit_2(tmp_path, capsys, content, needle):
    path = tmp_path / "bad.png"
    if content is not None:
        path.write_bytes(content)
    code, err, out = _run(tmp_path, capsys, "--set", "terrain.file=" + str(path))
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (out / "metrics.json").exists()


def test_too_many_robots_and_a_tiny_file_are_refused(tmp_path, capsys):
    code, err, _ = _run(tmp_path, capsys, "--set", "robots=9")
    assert code == 2 and "robots" in err and err.count("\n") == 1
    np.save(tmp_path / "tiny.npy", np.zeros((3, 40)))
    code, err, _ = _run(tmp_path, capsys, "--set", "terrain.file=" + str(tmp_path / "tiny.npy"))
    assert code == 2 and "at least 8 per side" in err and err.count("\n") == 1


def test_spin_variant_spins_at_crests(tmp_path, capsys):
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "app.behaviour.variant=spin", "--set",
                          "duration_s=40")
    assert code in (0, 3), err
    m = json.loads((out / "metrics.json").read_text())
    assert m["variant"] == "spin" and m["spins"] > 0 and abs(m["volume_error_m3"]) <= 1e-12


@pytest.mark.parametrize("setting,needle", [("terrain_rate_hz=100", "faster than app.imu_rate_hz"),
                                            ("record.every_s=100", "longer than duration_s"),
                                            ("record.app_robot=4", "record.app_robot: the run has 4 robots")])
def test_rates_and_records_that_cannot_run_are_refused(tmp_path, capsys, setting, needle):
    code, err, _ = _run(tmp_path, capsys, "--reduced", "--set", setting)
    assert code == 2 and needle in err and err.count("\n") == 1, err


def test_a_robots_app_recorded_in_the_log_replays_bit_exactly(tmp_path, capsys):
    """Robot 0's app is recorded at its boundary (IMU samples, the random walk's draw states, ticks, track
    commands); `harness replay` rebuilds it and gets the same commands. Without the recorded draws it would
    not (the draws are inputs); a run with the recording off gives the same metrics."""
    from harness.replay import read_recording, replay_events
    code, err, out = _run(tmp_path, capsys, "--reduced", "--set", "duration_s=20", "--seed", "3")
    assert code in (0, 3), err
    log = out / "log.mcap"
    assert main(["replay", str(log), "--out", str(tmp_path / "replay")]) == 0
    text = capsys.readouterr().out
    result = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert result["identical"] and result["ticks"] == 1000            # 20 s at 50 Hz
    assert result["topics"]["wheels"]["logged"] == result["topics"]["wheels"]["replayed"] == 200
    events, damage = read_recording(str(log))
    assert damage is None
    imu = [e for e in events if e[0] == "/app/in/imu"]
    states = [e for e in events if e[0] == "/app/in/random_state"]
    assert len(states) == 200 and len(imu) >= 990 and result["inputs"] == len(imu) + len(states)
    assert "hill_leveler: %d inputs, 1000 ticks replayed; identical" % result["inputs"] in text, text
    blind = replay_events([e for e in events if e[0] != "/app/in/random_state"])
    assert not blind["identical"] and blind["topics"]["wheels"]["first_divergence_us"] is not None
    code, err, off = _run(tmp_path, capsys, "--reduced", "--set", "duration_s=20", "--seed", "3", "--set",
                          "record.app_robot=-1", name="off")
    assert (off / "metrics.json").read_text() == (out / "metrics.json").read_text()
    assert not [e for e in read_recording(str(off / "log.mcap"))[0] if e[0].startswith("/app/")]
