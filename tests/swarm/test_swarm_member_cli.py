"""``python -m boards.crazyflie member``: one swarm member against simulated Crazyflies over the official cflib.

The simulated Crazyflies (harness.sim.crazyflie, what ``python -m harness crazyflies`` serves) run in
realtime here, in-process, as in tests/crazyflie; the member paces itself on the host's monotonic
clock for the few seconds it flies (the test itself never sleeps).
"""
import json
import logging
import os
import subprocess
import sys

import pytest

from boards.crazyflie.cli import main
from harness.sim.crazyflie.fleet import SimCrazyflieFleet

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = [pytest.mark.fil, pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def _quiet_cflib():
    logging.getLogger("cflib.crazyflie.toccache").setLevel(logging.ERROR)
    yield


def test_member_connects_receives_ranges_and_commands_setpoints(capsys):
    """Drone 0 flies a member for 4 s towards a goal 1 m north-east; drone 1 (its neighbour, 1 m north)
    stands on the ground. Ranges come from drone 0's ranging.distance1 log variable."""
    with SimCrazyflieFleet(2, seed=3) as fleet:
        status = main(["member", "--uri", fleet.uris[0], "--id", "0", "--peers", "1", "--goal", "0.0,1.0",
                       "--duration-s", "4", "--n-particles", "200", "--height-m", "0.4",
                       "--connect-timeout-s", "20"])
        out, err = capsys.readouterr()
        assert status == 0, err
        report = json.loads(out.strip().splitlines()[-1])
        truth = fleet.vehicles[0]
        sim = fleet.drones[0]
        fleet.release_links()
    assert report["connected"] and report["reached_flight_height"]
    member = report["member"]
    inputs = member["inputs"]
    assert inputs["ranges_received"] >= 20 and inputs["velocities_received"] >= 20
    assert inputs["goal_ranges_received"] >= 20 and inputs["rejected_samples"] == 0
    assert member["cf_inputs"]["range_samples"] == inputs["ranges_received"]
    decision = member["decision"]
    assert decision["decisions"] >= 20 and decision["ranges_used"] >= 20
    assert set(decision["tracks"]) == {"1", "goal"}
    assert member["command"]["commands"] >= 20
    assert member["failsafe_engagements"] == 0
    assert member["scheduler"]["groups"]["decide"]["declared_hz"] == 10
    driver = report["driver"]
    assert driver["state"] == "landed" and driver["faults"] == []
    assert driver["stats"]["setpoints_sent"] >= 100 and driver["stats"]["rejected_commands"] == 0
    assert sim.stats["rx_packets"] > 0 and sim.stats["internal_errors"] == 0
    # it flew: it took off, moved off its start and came back down
    assert truth.north_m ** 2 + truth.east_m ** 2 > 0.01 ** 2
    assert not truth.airborne or truth.height_m < 0.1


def test_help_exits_0_and_names_the_options(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["member", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--uri", "--id", "--peers", "--goal", "--duration-s", "ranging.distance"):
        assert opt in out


def test_module_runs_as_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "boards.crazyflie", "--help"], cwd=REPO, capture_output=True,
                          timeout=60)
    assert proc.returncode == 0 and b"member" in proc.stdout


@pytest.mark.parametrize("argv,needle", [
    (["--uri", "udp://127.0.0.1:1", "--id", "-1"], "argument --id: expected a whole number >= 0, got '-1'"),
    (["--uri", "udp://127.0.0.1:1", "--id", "0", "--goal", "1"], "argument --goal: expected NORTH,EAST in metres"),
    (["--uri", "udp://127.0.0.1:1", "--id", "0", "--peers", "1,x"], "argument --peers: expected distinct"),
    (["--uri", "udp://127.0.0.1:1", "--id", "0", "--duration-s", "nan"],
     "argument --duration-s: expected a number > 0"),
    (["--id", "0"], "the following arguments are required: --uri"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, argv, needle):
    with pytest.raises(SystemExit) as exc:
        main(["member"] + argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1, err


def test_bad_board_config_exits_2_and_missing_models_exit_3_in_one_line(capsys, tmp_path):
    bad = tmp_path / "board.json"
    bad.write_text(json.dumps({"crazyflie": {"setpoint_rate_hz": "fast"}}))
    assert main(["member", "--uri", "udp://127.0.0.1:1", "--id", "0", "--board-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: crazyflie setting setpoint_rate_hz must be a number >= 2") and err.count("\n") == 1, err
    assert main(["member", "--uri", "udp://127.0.0.1:1", "--id", "0", "--models", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: models not found: ") and err.count("\n") == 1, err


def test_no_crazyflie_at_the_uri_exits_3_in_one_line(capsys):
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there now
    uri = "udp://127.0.0.1:%d" % port
    assert main(["member", "--uri", uri, "--id", "0", "--connect-timeout-s", "1"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: cannot connect to %s" % uri) and err.count("\n") == 1, err
