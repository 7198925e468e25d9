"""Alg. 5 data generation on the Sandbox (scenario `sandbox-datagen`): the command schedule, the table 5.1
keys and units of the .npz, the terrain crops, the MCAP log, and determinism (same seed, same arrays)."""
import math

import numpy as np
import pytest

from harness import scenarios
from harness.report.run_report import RunReport
from harness.scenarios.context import RunContext
from harness.sim.sandbox import schedule
from harness.sim.sandbox.session import TABLE, TABLE_KEYS, digest, load_npz

SMALL = {"frames": 48, "segment_frames": 6, "crop": {"cells": 8}, "log": {"every_frames": 1}}
# table 5.1 (x, y, dx, dy, dtheta, v_left, v_right, phi, psi, l, w) in this project's names
TABLE_5_1 = ("north_m", "east_m", "dnorth_m", "deast_m", "dyaw_rad", "left_radps", "right_radps", "pitch_rad",
             "roll_rad", "cmd_speed_mps", "cmd_yaw_rate_radps")


def test_the_alg5_schedule_has_eight_blocks_and_one_amplitude_per_segment():
    draws = iter(np.linspace(0.25, 1.0, 40))
    speed, yaw_rate, amp, block, segment = schedule.commands(80, 5, 0.25, math.pi / 2, lambda lo, hi: next(draws))
    assert block == [k // 10 for k in range(80)]
    assert all(len(set(amp[s * 5:(s + 1) * 5])) == 1 for s in range(16)) and len(set(amp)) == 16
    signs = [(int(np.sign(speed[10 * k])), int(np.sign(yaw_rate[10 * k]))) for k in range(8)]
    # thesis: (3r, 0) (-3r, 0) (0, r pi/2) (0, -r pi/2) (3r, r pi/2) (-3r, -r pi/2) (-3r, r pi/2) (3r, -r pi/2),
    # w counter-clockwise; NED yaw rate = -w
    assert signs == [(1, 0), (-1, 0), (0, -1), (0, 1), (1, -1), (-1, 1), (-1, -1), (1, 1)]
    assert all(math.isclose(abs(s), 0.25 * a) for s, a in zip(speed, amp) if s)
    assert all(math.isclose(abs(w), math.pi / 2 * a) for w, a in zip(yaw_rate, amp) if w)
    with pytest.raises(ValueError):
        schedule.commands(7, 5, 0.25, 1.0, lambda lo, hi: 0.5)


def _run(tmp_path, name, seed, extra=None):
    module, config = scenarios.prepare("sandbox-datagen", SMALL, extra or {})
    out = tmp_path / name
    report = RunReport(str(out), "sandbox-datagen", seed, config)
    metrics = module.run(config, RunContext(seed, report))
    report.finish(metrics)
    scenarios.check_metrics("sandbox-datagen", metrics)
    return metrics, out


def test_datagen_is_deterministic_and_logs_table_5_1(tmp_path):
    m1, out1 = _run(tmp_path, "a", 5)
    module, config = scenarios.prepare("sandbox-datagen", SMALL)
    m2 = module.run(config, RunContext(5))                  # again, without a report: the same digests
    module, config = scenarios.prepare("sandbox-datagen", SMALL, {"terrains": ["B"]})
    m3 = module.run(config, RunContext(6))                  # another seed: another schedule and terrain B
    assert m1 == m2 and m1["success"]
    for label in ("A", "B"):
        a, meta = load_npz(str(out1 / ("sandbox_%s.npz" % label)))
        assert digest(a) == m1["terrains"][label]["digest_sha256"]          # the arrays' sha256
        assert set(TABLE_5_1) <= set(TABLE_KEYS) <= set(a)
        assert all(a[k].shape == (48,) and a[k].dtype == np.dtype(TABLE[k][0]) for k in TABLE_KEYS)
        assert meta["units"]["dyaw_rad"] == "rad" and meta["terrain"] == label and meta["format_version"] == 1
        assert a["crop_before_m"].shape == a["crop_dh_m"].shape == (48, 8, 8)
        assert a["terrain_start_m"].shape == (128, 128)
        # the frames chain: heading deltas add up, world deltas are the body deltas rotated
        yaw0 = np.concatenate([[math.radians(30.0)], a["yaw_rad"][:-1]])     # the example INI's h = 30 deg
        c, s = np.cos(yaw0), np.sin(yaw0)
        assert np.allclose(c * a["dx_body_m"] - s * a["dy_body_m"], a["dnorth_m"], atol=1e-12)
        assert np.allclose(np.angle(np.exp(1j * (yaw0 + a["dyaw_rad"]))), a["yaw_rad"], atol=1e-9)
        assert np.all(np.diff(a["time_us"]) == 10000)
        assert np.isfinite(a["crop_dh_m"]).all() and np.abs(a["crop_dh_m"]).max() > 0.0     # the tracks dig
    assert m3["terrains"]["B"]["digest_sha256"] != m1["terrains"]["B"]["digest_sha256"]
    a, _ = load_npz(str(out1 / "sandbox_A.npz"))
    b, _ = load_npz(str(out1 / "sandbox_B.npz"))
    assert not np.array_equal(a["terrain_start_m"], b["terrain_start_m"])          # B is another terrain
    assert np.all(a["amplitude"].reshape(8, 6) == a["amplitude"][::6, None])        # one r per segment
    from mcap.reader import make_reader
    with open(out1 / "log.mcap", "rb") as fh:
        summary = make_reader(fh).get_summary()
    counts = {ch.topic: summary.statistics.channel_message_counts.get(cid, 0) for cid, ch in summary.channels.items()}
    assert counts.get("/sandbox/A/frame") == 48 and counts.get("/sandbox/B/frame") == 48


def test_a_terrain_b_image_from_someone_else_runs_at_terrain_a_scales(tmp_path):
    from PIL import Image
    north = np.arange(96)[:, None] * np.ones((1, 80))
    wave = np.sin(2 * np.pi * north / 96.0) * np.cos(2 * np.pi * np.arange(80) / 80.0)    # tileable
    img = (127.5 + 120.0 * wave).astype(np.uint8)
    path = tmp_path / "their_terrain.png"
    Image.fromarray(img, mode="L").save(path)
    module, config = scenarios.prepare("sandbox-datagen", SMALL,
                                       {"terrains": ["B"], "terrain_b": {"file": str(path)}})
    metrics = module.run(config, RunContext(1))
    b = metrics["terrains"]["B"]
    assert metrics["success"] and b["rows"] == 96 and b["cols"] == 80 and b["frames"] == 48
    assert math.isclose(b["volume_m3"], float(np.flipud(img).astype(float).sum()) / 255.0 * 0.06 * 0.02 ** 2,
                        rel_tol=1e-3)                         # white = the INI's scale (0.06 m), 0.02 m cells
