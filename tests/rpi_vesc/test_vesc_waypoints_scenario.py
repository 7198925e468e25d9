"""Scenario vesc-waypoints: the board app drives two simulated VESCs over ptys to way-points."""
import json
import subprocess
import sys

import pytest

from harness.config import merge
from harness.scenarios import load
from harness.scenarios.context import RunContext

pytestmark = pytest.mark.scenario
MOD = load("vesc-waypoints")


def _run(overrides=None, seed=1):
    return MOD.run(merge(MOD.DEFAULTS, overrides or {}), RunContext(seed))


@pytest.mark.parametrize("topology", ["two_uarts", "can_forward"])
def test_reaches_waypoints_and_rpm_follows_command(topology):
    m = _run({"topology": topology})
    assert m["success"] and m["waypoints_reached"] == 3
    assert m["path_error_max_m"] < 0.3
    for side in ("left", "right"):
        assert m["telemetry_samples"][side] > 300
        assert m["rpm_tracking_samples"][side] > 0.9 * m["telemetry_samples"][side]
        # telemetry eRPM matches the first-order model of the SetRPM commands (within 1 % of full scale)
        assert m["rpm_tracking_max_erpm"][side] < 0.01 * m["max_abs_erpm"]
    assert m["failsafe_engagements"] == 0
    for link in m["links"].values():
        assert link["crc_errors"] == 0 and link["skipped_bytes"] == 0 and link["disconnects"] == 0
    assert m["released_at_end"]


def test_same_seed_same_metrics():
    a, b = _run(seed=3), _run(seed=3)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_unplugged_vesc_stops_robot_then_reconnects():
    m = _run({"faults": {"unplug_s": 3.0, "replug_s": 6.0, "unplug_port": "left"}})
    engaged = [e for e in m["fault_events"] if e[1] == "engaged"]
    assert ["motors:link_down:left"] in [[e[2]] for e in engaged]
    assert min(e[0] for e in engaged) - 3000000 <= 20000           # within one telemetry period
    assert m["unplugged_speed_after_1s_mps"] is not None
    assert m["sim_vesc"]["left"]["timeouts"] == 1                  # the VESC's own timeout released it
    cleared = [e for e in m["fault_events"] if e[1] == "cleared"]
    assert cleared and all(e[0] >= 6000000 for e in cleared)
    assert m["resumed_after_replug_s"] is not None and m["resumed_after_replug_s"] < 1.0
    assert m["success"]
    assert m["links"]["left"]["connects"] == 2


def test_unplugged_for_good_robot_stays_stopped():
    m = _run({"faults": {"unplug_s": 3.0}, "max_duration_s": 7.0})
    assert not m["success"]
    assert m["unplugged_speed_after_1s_mps"] < 0.3       # left coasts after its 1 s timeout
    assert m["driver"]["faults"] == ["link_down:left", "telemetry_stale:left"]


def test_vesc_fault_code_safe_stop():
    m = _run({"faults": {"vesc_fault_s": 3.0, "fault_code": 5, "fault_motor": "right"},
              "max_duration_s": 6.0})
    assert not m["success"]
    assert m["fault_events"][0][2] == "motors:vesc_fault:right:OVER_TEMP_FET"
    assert m["fault_events"][0][0] - 3000000 <= 40000
    assert m["vesc_fault_speed_after_1s_mps"] < 0.02
    assert m["driver"]["stops"] > 50                      # the failsafe stops every control tick


def test_cli_run_writes_report(tmp_path):
    out = tmp_path / "rep"
    res = subprocess.run([sys.executable, "-m", "harness", "run", "vesc-waypoints", "--seed", "2",
                          "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["success"]
    assert (out / "log.mcap").stat().st_size > 0 and (out / "erpm.png").exists()
