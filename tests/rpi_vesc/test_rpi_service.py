"""The Pi runtime as a real subprocess: drives simulated VESCs on ptys, SIGTERM -> motors
released, MCAP complete and readable; the generated systemd unit passes systemd-analyze.

This test runs in real time (the service runs on the host's monotonic clock in its own
process), so the simulated VESCs are stepped with wall-clock dt here; every wait is
bounded by a deadline.

Runs with ``imu.bus = "bench-sim"`` go through ``harness.sim.rpi_bench`` (the service with the
harness's simulated MPU-6050 passed in); ``boards.rpi`` itself never imports the harness.

The service records its app at the boundary into the MCAP log by default (``log.record``): the
log of the SIGTERM run replays identically with ``python -m harness replay`` (real-time group start
times included).
"""
import json
import re
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
from mcap.reader import make_reader

from harness.sim.vesc import SimVesc, SimVescPort
from onboard.comms.signed_frame import FrameSigner, key_fingerprint
from onboard.comms.vesc import codec

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


POSE_KEY = bytes(range(7, 39))


def _service_config(left_path, right_path, key_file):
    return {
        "vesc": {"motors": [
            {"name": "left", "port": left_path, "controller_id": 1, "direction": 1},
            {"name": "right", "port": right_path, "controller_id": 2, "direction": -1}]},
        "imu": {"bus": "bench-sim"},
        "pose": {"udp_port": 0, "key_file": str(key_file)},
        "mission": {"waypoints_ne_m": [[5.0, 0.0]]},
    }


def _step_world(ports, sims, last_t):
    now = time.monotonic()
    now_us = int(now * 1e6)
    for p in ports:
        p.service(now_us)
    dt = now - last_t
    for s in sims:
        s.step(min(dt, 0.05), now_us)
    return now


@pytest.mark.timeout(60)
def test_sigterm_releases_motors_and_closes_mcap(tmp_path, capsys):
    left, right = SimVesc({"controller_id": 1}), SimVesc({"controller_id": 2})
    ports = [SimVescPort(left, link_path=str(tmp_path / "vesc-left")),
             SimVescPort(right, link_path=str(tmp_path / "vesc-right"))]
    cfg_path = tmp_path / "rpi.json"
    key_file = tmp_path / "pose.key"
    key_file.write_text(POSE_KEY.hex() + "\n")
    cfg_path.write_text(json.dumps(_service_config(ports[0].path, ports[1].path, key_file)))
    log_path = tmp_path / "run.mcap"
    proc = subprocess.Popen([sys.executable, "-m", "harness.sim.rpi_bench", "run", "--config", str(cfg_path),
                             "--log-file", str(log_path)], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # the service announces its pose port once it runs
        deadline = time.monotonic() + 20.0
        line = ""
        while "pose udp port" not in line:
            assert time.monotonic() < deadline, "service did not start"
            assert proc.poll() is None, proc.stderr.read()
            r, _, _ = select.select([proc.stdout], [], [], 0.5)
            if r:
                line = proc.stdout.readline()
        found = re.search(r"pose udp port (\d+) \(signed, key ([0-9a-f]{8})\)", line)
        assert found and found.group(2) == key_fingerprint(POSE_KEY) and POSE_KEY.hex() not in line, line
        pose_port = int(found.group(1))
        signer = FrameSigner(POSE_KEY)
        pose_json = json.dumps({"pos_ned_m": [0.0, 0.0, 0.0], "euler_rad": [0.0, 0.0, 0.0],
                                "cov_pos_m2": [0.0025] * 3, "cov_att_rad2": [0.0003] * 3}).encode()
        last_t = time.monotonic()
        next_pose = last_t
        driving_since = None
        deadline = time.monotonic() + 20.0
        while True:
            assert time.monotonic() < deadline, "motors were never driven"
            assert proc.poll() is None, proc.stderr.read()
            last_t = _step_world(ports, sims=(left, right), last_t=last_t)
            if last_t >= next_pose:
                sock.sendto(signer.frame(pose_json), ("127.0.0.1", pose_port))
                next_pose = last_t + 0.1
            if left.mode == "rpm" and abs(left.setpoint) > 100 and right.mode == "rpm":
                driving_since = driving_since or last_t
                if last_t - driving_since > 0.5:
                    break
            time.sleep(0.002)        # pacing of this real-time test loop, not a synchronisation
        assert left.setpoint > 100 and right.setpoint < -100    # forward: right motor mirrored
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10.0
        while proc.poll() is None:
            assert time.monotonic() < deadline, "service did not stop on SIGTERM"
            last_t = _step_world(ports, (left, right), last_t)
            time.sleep(0.002)
        _step_world(ports, (left, right), last_t)          # the last bytes it wrote
        out, err = proc.communicate(timeout=5)
        assert proc.returncode == 143, err                 # 128 + SIGTERM: a clean stop (SuccessExitStatus)
        assert "motors released" in out
    finally:
        sock.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        for p in ports:
            p.close()

    for sim in (left, right):
        t_last, cmd, value = sim.history[-1]
        assert (cmd, value) == (codec.COMM_SET_CURRENT, 0.0), sim.history[-3:]
        assert sim.mode == "released"
        assert sim.commands[codec.COMM_SET_RPM] > 10 and sim.commands[codec.COMM_GET_VALUES] > 10

    with open(log_path, "rb") as fh:
        reader = make_reader(fh)
        summary = reader.get_summary()
        assert summary is not None and summary.statistics.message_count > 0
        topics = {}
        last_shutdown = None
        for _schema, channel, message in reader.iter_messages():
            topics[channel.topic] = topics.get(channel.topic, 0) + 1
            if channel.topic == "/shutdown":
                last_shutdown = json.loads(message.data)
    for topic in ("/imu", "/aiding/pose", "/cmd/wheels", "/vesc/left/telemetry", "/vesc/right/telemetry",
                  "/shutdown"):
        assert topics.get(topic, 0) > 0, (topic, topics)
    assert last_shutdown["reason"] == "SIGTERM" and last_shutdown["motors_released"] == 2

    # the app recorded itself (log.record defaults to true): the desk run replays bit for bit
    from harness.replay import EXIT_IDENTICAL, main_replay
    for topic in ("/app/config", "/app/step", "/app/in/imu", "/app/in/aiding", "/app/out/wheels"):
        assert topics.get(topic, 0) > 0, (topic, topics)
    code = main_replay([str(log_path), "--out", str(tmp_path / "replay")])
    captured = capsys.readouterr()
    assert code == EXIT_IDENTICAL, captured.out + captured.err
    report = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert report["app"] == "rpi_ground_robot" and report["identical"] and report["damage"] is None
    assert report["topics"]["wheels"]["logged"] == report["topics"]["wheels"]["replayed"] > 10
    assert report["topics"]["estimate"]["max_abs_diff"] == 0


def test_record_switch_off_leaves_no_app_recording(tmp_path):
    """``log.record = false``: the service logs as before, without the ``/app/`` recording."""
    from harness.sim.rpi_bench import main
    cfg = {"vesc": {"motors": _MOTORS}, "imu": {"bus": "bench-sim"}, "pose": {"udp_port": -1},
           "log": {"dir": str(tmp_path / "logs"), "record": False}}
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    log_path = tmp_path / "run.mcap"
    assert main(["run", "--config", str(path), "--log-file", str(log_path), "--duration-s", "0.3"]) == 0
    with open(log_path, "rb") as fh:
        topics = {channel.topic for _s, channel, _m in make_reader(fh).iter_messages()}
    assert "/imu" in topics and "/shutdown" in topics
    assert not any(t.startswith("/app/") for t in topics), topics


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_generated_unit_verifies(tmp_path):
    unit = tmp_path / "onboard-rpi.service"
    subprocess.run([sys.executable, "-m", "boards.rpi", "service-unit", "--workdir", REPO_ROOT,
                    "--config", str(tmp_path / "rpi.toml"), "--output", str(unit)],
                   cwd=REPO_ROOT, check=True, timeout=60)
    text = unit.read_text()
    assert "ExecStart=%s -m boards.rpi run --config" % sys.executable in text
    assert "KillSignal=SIGTERM" in text
    res = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_service_config_rejects_unknown_keys(tmp_path):
    from boards.rpi.service import load_config
    from onboard.core.settings import ConfigError
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"vesc": {"baudrate": 9600}}))
    with pytest.raises(ConfigError, match="unknown rpi setting 'vesc.baudrate' \\(did you mean 'vesc.baud'\\?\\)"):
        load_config(str(bad))


_MOTORS = [{"name": "left", "port": "/dev/ttyV0", "controller_id": 1, "direction": 1},
           {"name": "right", "port": "/dev/ttyV0", "controller_id": 2, "can_id": 2, "direction": -1}]


@pytest.mark.parametrize("override,message", [
    ({"vesc": {"gear_ratio": 0.0}}, "rpi setting vesc.gear_ratio must be a number > 0, got 0.0"),
    ({"vesc": {"baud": "fast"}}, "rpi setting vesc.baud must be an integer >= 1, got 'fast'"),
    ({"imu": {"rate_hz": 0}}, "rpi setting imu.rate_hz must be a divisor of 1000 Hz (the MPU-6050's sample clock), got 0"),
    ({"imu": {"rate_hz": 300}}, "rpi setting imu.rate_hz must be a divisor of 1000 Hz (the MPU-6050's sample clock), got 300"),
    ({"runtime": {"control_rate_hz": 40}}, "rpi settings imu.rate_hz, runtime.control_rate_hz, vesc.telemetry_rate_hz, "
     "pose.poll_hz must be rates one scheduler can run"),
    ({"imu": {"address": 0x50}}, "rpi setting imu.address must be one of 104, 105, got 80"),
    ({"pose": {"udp_port": 70000}}, "rpi setting pose.udp_port must be null or an integer in -1..65535, got 70000"),
    ({"pose": {"host": "0.0.0.0", "signing": "off"}}, "rpi settings pose.host, pose.signing must be signed on a "
     "non-loopback host (pose.signing=off is for 127.0.0.1 only), got '0.0.0.0', 'off'"),
    ({"runtime": {"wheelbase_m": float("nan")}}, "rpi setting runtime.wheelbase_m must be finite, got nan"),
    ({"mission": {"waypoints_ne_m": [[1.0, 2.0], [3.0]]}},
     "rpi setting mission.waypoints_ne_m must be a non-empty list of [north_m, east_m] pairs, got [[1.0, 2.0], [3.0]]"),
    ({"vesc": {"motors": [dict(_MOTORS[0], direction=0), _MOTORS[1]]}},
     "rpi setting vesc.motors[0].direction must be one of 1, -1, got 0"),
    ({"vesc": {"motors": [_MOTORS[0], dict(_MOTORS[1], can_id=255)]}},
     "rpi setting vesc.motors[1].can_id must be null or an integer in 0..254, got 255"),
    ({"vesc": {"motors": [_MOTORS[0], dict(_MOTORS[1], cam_id=2)]}}, "rpi setting vesc.motors[1]: unknown key 'cam_id'"),
    ({"vesc": {"motors": [_MOTORS[0], dict(_MOTORS[1], name="left")]}},
     "rpi setting vesc.motors must name one motor left and one right, got left, left"),
    ({"vesc": {"motors": "left,right"}}, "rpi setting vesc.motors must be a list of two motor tables"),
])
def test_service_config_values_are_checked_before_anything_opens(tmp_path, capsys, override, message):
    """A malformed value is one line naming the setting and exit status 2; no log file, no port opened."""
    from boards.rpi.service import main
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(override))
    log = tmp_path / "run.mcap"
    assert main(["run", "--config", str(path), "--log-file", str(log), "--duration-s", "0.1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message) and err.count("\n") == 1, err
    assert not log.exists()


def _blocked_pose_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    return sock


@pytest.mark.parametrize("what", ["imu_bus", "imu_silent", "pose_port", "log_dir"])
def test_a_device_that_cannot_open_is_one_line_and_exit_3(tmp_path, capsys, what):
    """The IMU bus missing, no MPU-6050 answering on it, the pose port taken or the log folder not
    writable: exit 3, one line, nothing left open (the MCAP file, when it was opened, is closed and
    readable; when the runtime had been built, it holds the /shutdown record with the motors released)."""
    from harness.sim.rpi_bench import main
    cfg = {"vesc": {"motors": _MOTORS}, "imu": {"bus": "bench-sim"}, "pose": {"udp_port": 0, "signing": "off"},
           "log": {"dir": str(tmp_path / "logs")}}
    taken = None
    if what == "imu_bus":
        cfg["imu"]["bus"] = str(tmp_path / "i2c-9")
        needle = "cannot open the IMU's I2C bus %s: No such file or directory" % cfg["imu"]["bus"]
    elif what == "imu_silent":
        cfg["imu"]["bus"] = "/dev/null"           # opens, but is no I2C adapter: the MPU-6050 never answers
        needle = ("cannot start: no MPU-6050 at 0x68: [Errno 25] Inappropriate ioctl for device "
                  "(imu.bus /dev/null, imu.address 0x68)")
    elif what == "pose_port":
        taken = _blocked_pose_port()
        cfg["pose"]["udp_port"] = taken.getsockname()[1]
        needle = "cannot bind the pose UDP port %d: Address already in use" % cfg["pose"]["udp_port"]
    else:
        (tmp_path / "logs").write_text("a file where the log folder should be")
        needle = "cannot open the log %s: File exists" % cfg["log"]["dir"]
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    try:
        assert main(["run", "--config", str(path), "--duration-s", "0.1"]) == 3
    finally:
        if taken is not None:
            taken.close()
    err = capsys.readouterr().err
    assert err == "error: %s\n" % needle, err
    if what != "log_dir":
        (mcap_file,) = (tmp_path / "logs").iterdir()
        with open(mcap_file, "rb") as fh:
            topics = [(channel.topic, json.loads(message.data)) for _s, channel, message
                      in make_reader(fh).iter_messages()]
        if what == "imu_silent":
            assert [(t, m["reason"]) for t, m in topics] == [("/shutdown", "start failed")]
        else:
            assert topics == []


def test_the_board_service_alone_refuses_the_simulated_bus(tmp_path, capsys):
    """``python -m boards.rpi`` opens real devices only: "bench-sim" is one line pointing at the harness's
    entry point, exit status 2, nothing opened (no log)."""
    from boards.rpi.service import main
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"vesc": {"motors": _MOTORS}, "imu": {"bus": "bench-sim"}, "pose": {"udp_port": -1},
                                "log": {"dir": str(tmp_path / "logs")}}))
    assert main(["run", "--config", str(path), "--duration-s", "0.1"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: rpi setting imu.bus 'bench-sim' is the harness's simulated MPU-6050: run "
                   "`python -m harness.sim.rpi_bench run` for desk runs without the IMU\n"), err
    assert not (tmp_path / "logs").exists()


def test_the_bench_entry_point_passes_the_simulated_bus_in():
    """harness.sim.rpi_bench hands the service a factory for a bus with an MPU-6050 at the configured address."""
    from boards.rpi.imu_mpu6050 import Mpu6050
    from boards.rpi.service import BENCH_SIM_BUS
    from harness.sim.rpi_bench import I2C_BUSES
    bus = I2C_BUSES[BENCH_SIM_BUS](0x69)
    assert sorted(bus.devices) == [0x69]
    imu = Mpu6050(bus, 0x69, rate_hz=200)
    imu.init()
    f_body_mps2, w_body_radps = imu.read_rates()        # at rest, level: specific force up (FRD: -z) only
    assert f_body_mps2[0] == 0.0 and f_body_mps2[1] == 0.0 and f_body_mps2[2] < -9.0
    assert list(w_body_radps) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("key_text,needle", [
    (None, "rpi setting pose.key_file: the pose input is signed (pose.signing=required); give it a file of hex key"),
    ("0011", "rpi setting pose.key_file: %s: a link key must have at least 16 bytes, got 2"),
    ("not hex at all", "rpi setting pose.key_file: %s: a link key must be hex digits"),
    (bytes(range(128, 160)), "rpi setting pose.key_file: %s: a link key must be hex digits, the file holds bytes "
                             "that are not ASCII text"),          # a raw binary key
])
def test_a_signed_pose_input_without_a_good_key_is_one_line_and_exit_2(tmp_path, capsys, key_text, needle):
    """The pose input is signed unless pose.signing=off says otherwise: no key file, or a malformed one, stops
    the service before anything opens (exit 2, one line that never shows key material)."""
    from harness.sim.rpi_bench import main
    pose = {"udp_port": 0}
    key_file = tmp_path / "pose.key"
    if key_text is not None:
        (key_file.write_bytes if isinstance(key_text, bytes) else key_file.write_text)(key_text)
        pose["key_file"] = str(key_file)
        needle = needle % key_file
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"vesc": {"motors": _MOTORS}, "imu": {"bus": "bench-sim"}, "pose": pose,
                                "log": {"dir": str(tmp_path / "logs")}}))
    assert main(["run", "--config", str(path), "--duration-s", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "logs").exists()


def test_the_pose_input_drops_forged_and_replayed_frames(tmp_path):
    """Signed poses over loopback: the genuine one is taken; a forged one (wrong key), the genuine one again
    (replay) and an unsigned JSON datagram are dropped and counted, and nothing but the genuine pose arrives.
    The verifier's mark is saved next to the key, so a restarted input refuses the recorded frame too."""
    from boards.rpi.app import UdpPoseSource, UnsafeInputError
    from boards.rpi.service import pose_verifier
    key_file = tmp_path / "pose.key"
    key_file.write_text(POSE_KEY.hex())
    cfg = {"key_file": str(key_file), "signing": "required"}
    src = UdpPoseSource(0, verifier=pose_verifier(cfg))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    body = json.dumps({"pos_ned_m": [1, 2, 0], "euler_rad": [0, 0, 0.5]}).encode()
    genuine = FrameSigner(POSE_KEY).frame(body)
    try:
        for data in (genuine, FrameSigner(bytes(32)).frame(body), genuine, body):
            tx.sendto(data, ("127.0.0.1", src.port))
        got = []
        for _ in range(200):                      # bounded: datagrams on loopback arrive at once
            got.extend(src.poll(5))
            if len(got) + src.rejected >= 4:
                break
        assert [s.pos_ned_m for s in got] == [(1.0, 2.0, 0.0)] and src.rejected == 3
        c = src.verifier.counts
        assert (c["accepted"], c["bad_tag"], c["replayed"], c["malformed"]) == (1, 1, 1, 1)
    finally:
        src.close()
    restarted = UdpPoseSource(0, verifier=pose_verifier(cfg))
    try:
        tx.sendto(genuine, ("127.0.0.1", restarted.port))
        for _ in range(200):
            assert restarted.poll(6) == []
            if restarted.rejected:
                break
        assert restarted.verifier.counts["replayed"] == 1
    finally:
        tx.close()
        restarted.close()
    with pytest.raises(UnsafeInputError, match="refusing an unsigned pose input on 0.0.0.0"):
        UdpPoseSource(0, host="0.0.0.0")
