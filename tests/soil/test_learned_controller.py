"""The controller channels of the learned soil estimator (soil paper section 3, notes section 2.8: the
network reads the cascaded controller's commands): the track loader exposes its speed loop's commanded
tractive effort, which is the drive force it applies until the tracks slip and which rises with the blade's
load. (That the world logs it with the operator's commands and the estimator reads it from there:
``test_learned_estimator.py``.) The controller model's training options: the validation split that holds out
every soil, the F_x / F_z weights of eq. 10's wMAE, members trained in worker processes (the same members);
bad options refused."""
import json

import numpy as np
import pytest

from harness.sim import soil_world as sw
from harness.sim.rng import RunRandom
from harness.sim.soil_terrain import SoilTerrain
from harness.sim.track_loader import TrackLoader
from harness.training.soil_estimator import dataset as ds
from harness.training.soil_estimator import train as tr


def _lane(relative_density_pct, seed=3):
    fields = sw.build_fields({"size_m": [8.0, 4.0], "cell_m": 0.1, "soil": "loam",
                              "relative_density_pct": relative_density_pct})
    loader = TrackLoader(SoilTerrain(fields), {"operator": {"depth_m": 0.12, "lanes": {"length_m": 1.5}}},
                         RunRandom(seed))
    samples = []
    loader.run(samples.append)
    return loader, samples


@pytest.fixture(scope="module")
def lanes():
    return {idd: _lane(idd) for idd in (10.0, 90.0)}


def test_the_drive_command_is_the_applied_drive_force_until_the_tracks_slip(lanes):
    for loader, samples in lanes.values():
        cmd = np.array([s.drive_command_n for s in samples])
        applied = np.array([s.truth["drive_force_n"] for s in samples])
        slipping = np.array([s.truth["slipping"] for s in samples])
        assert np.all(np.isfinite(cmd)) and np.all(np.abs(cmd) <= loader.config["drive"]["max_force_n"])
        np.testing.assert_array_equal(cmd[~slipping], applied[~slipping])
        assert np.all(np.abs(cmd[slipping]) >= np.abs(applied[slipping]))
        # the sensors' other outputs are what they were: the torque path reads the applied force, not the command
        torque = np.array([s.drive_torque_nm for s in samples])
        assert np.corrcoef(torque, applied)[0, 1] > 0.99


def test_the_drive_command_rises_with_the_blade_load(lanes):
    """Dense soil, the same lane: the loop commands about as much more effort as the blade meets more
    resistance (the command is the drawbar pull plus the rolling resistance and inertia, and more while the
    tracks slip)."""
    cmd, fx = {}, {}
    for idd, (_loader, samples) in lanes.items():
        cut = [s for s in samples if s.phase == "cut"][60:]         # after the entry ramp
        cmd[idd] = float(np.mean([s.drive_command_n for s in cut]))
        fx[idd] = float(np.mean([s.truth["fx_n"] for s in cut]))
    assert fx[90.0] > 1.5 * fx[10.0]
    assert cmd[90.0] - cmd[10.0] == pytest.approx(fx[90.0] - fx[10.0], rel=0.35)
    assert cmd[10.0] == pytest.approx(fx[10.0], rel=0.25)


# ---- the controller model's training options: the validation split, the force weights, members in parallel ----



def test_the_soil_split_holds_out_every_soil_and_the_episode_split_only_loam_and_gravel():
    episodes = np.repeat(np.arange(400), 3)                 # 3 windows per episode, soil = episode mod 4
    data = {"episode": episodes}
    soils = episodes % 4
    for kind, held in (("episode", {1, 3}), ("soil", {0, 1, 2, 3})):
        train, val = tr.split(data, kind)
        assert set(soils[val]) == held and not np.any(train & val) and np.all(train | val)
        assert not set(episodes[train]) & set(episodes[val])             # whole episodes, never split
        assert 0.08 < val.mean() < 0.12
    with pytest.raises(ValueError, match="unknown validation split"):
        tr.split(data, "random")


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    """A dataset file of one short clay episode's windows (horizon 8), spread over episode numbers 36-43 so
    that the soil split holds some of them out."""
    e, cap = ds.run_capture(ds.episode_config("clay", 20.0, {"world": {"size_m": [6.0, 5.0]},
                                                             "loader": {"operator": {"lanes": {"length_m": 3.0}}}}), 12)
    rows = ds.window_rows(e, cap, horizon=8, window_samples=[60])
    for i, r in enumerate(rows):
        r.update(soil=0, relative_density_pct=20.0, episode=36 + i % 8)
    data = {k: np.array([r[k] for r in rows]) for k in ds.KEYS + ds.OPTIONAL_KEYS}
    path = str(tmp_path_factory.mktemp("soil") / "small.npz")
    ds.save(path, data)
    return path


def test_members_trained_in_worker_processes_equal_the_sequential_ones(small_dataset, tmp_path):
    pytest.importorskip("torch")
    common = ["--dataset", small_dataset, "--horizon", "8", "--epochs", "3", "--hidden", "16", "--members", "2",
              "--inputs", "controller", "--split", "soil", "--w-xz", "1", "1"]
    assert tr.main(common + ["--out", str(tmp_path / "seq")]) == 0
    assert tr.main(common + ["--jobs", "2", "--out", str(tmp_path / "par")]) == 0
    with np.load(tmp_path / "seq" / "weights.npz") as a, np.load(tmp_path / "par" / "weights.npz") as b:
        assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
    card = json.loads((tmp_path / "par" / "card.json").read_text())
    assert card["training"]["split"] == "soil" and card["training"]["loss"]["w_xz"] == [1.0, 1.0]
    assert card["metrics"]["validation"]["whole_cuts"] >= 0 and card["metrics"]["training"]["whole_cuts"] >= 1


def test_bad_training_options_are_refused(small_dataset, tmp_path, capsys):
    for bad in (["--w-xz", "1", "nan"], ["--w-xz", "0", "0"], ["--w-xz", "-1", "1"], ["--jobs", "0"]):
        assert tr.main(["--dataset", small_dataset, "--out", str(tmp_path / "m")] + bad) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 4 and err.count("train-soil:") == 4
    assert not (tmp_path / "m").exists()
