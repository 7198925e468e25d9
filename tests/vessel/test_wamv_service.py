"""The WAM-V boat service (boards.wamv.service): run as a subprocess through the desk runner
(harness.sim.wamv_bench) against the simulated boat, stopped by SIGTERM; config and start errors; the unit."""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest
from mcap.reader import make_reader

from boards.wamv import heading_nmea as hn
from boards.wamv import service
from onboard.comms import nmea
from onboard.comms.vesc import codec
from onboard.vessel import log_topics as lt

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_PORTS = {"gnss": {"port": "bench-sim:gnss"}, "heading": {"port": "bench-sim:heading"},
               "outboards": {"left_port": "bench-sim:left", "right_port": "bench-sim:right"},
               "mission": {"plan": [[30.0, 0.0, 1.5]]}}
HANG_GUARD_S = 30.0


def _lines(stream, out):
    for line in iter(stream.readline, ""):
        out.put(line)
    out.put(None)


def _wait_for(lines, text, proc, seen):
    """Read stdout lines until one contains ``text`` (hang guard, never a speed assertion)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        assert time.monotonic() < deadline, "no %r within the hang guard; stdout: %s" % (text, "".join(seen))
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        assert line is not None, "exited %s before %r; stdout: %s" % (proc.poll(), text, "".join(seen))
        seen.append(line)
        if text in line:
            return line


def _topics(path):
    counts, shutdown = {}, None
    with open(path, "rb") as fh:
        for _schema, channel, message in make_reader(fh).iter_messages():
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/shutdown":
                shutdown = json.loads(message.data)
    return counts, shutdown


@pytest.mark.timeout(90)
def test_bench_service_drives_thrusters_and_sigterm_releases_both(tmp_path):
    cfg = tmp_path / "wamv.json"
    cfg.write_text(json.dumps(BENCH_PORTS))
    log = tmp_path / "run.mcap"
    proc = subprocess.Popen([sys.executable, "-m", "harness.sim.wamv_bench", "run", "--config", str(cfg),
                             "--log-file", str(log)], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines, seen = queue.Queue(), []
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    try:
        _wait_for(lines, "onboard-wamv: running", proc, seen)
        _wait_for(lines, "wamv_bench: thrusters driven", proc, seen)     # both outboards forward, read at the sim
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=HANG_GUARD_S)
        err = proc.stderr.read()
        summary_line = _wait_for(lines, "wamv_bench: {", proc, seen)
        stopped = [s for s in seen if s.startswith("onboard-wamv: stopped")]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    assert proc.returncode == 143, err             # 128 + SIGTERM: a clean stop (the unit's SuccessExitStatus)
    assert stopped and "(SIGTERM)" in stopped[0] and "outboards released" in stopped[0], seen
    summary = json.loads(summary_line.split("wamv_bench: ", 1)[1])
    for side in ("left", "right"):
        assert summary["max_throttle"][side] > 0.1, summary                 # it drove them
        assert summary["released"][side], summary                           # and released them
        assert summary["last_command"][side] == [codec.COMM_SET_CURRENT, 0.0], summary
    counts, shutdown = _topics(log)
    for topic in tuple(lt.FIT_TOPICS) + ("/app/config", "/app/step", "/app/out/command", "/app/in/outboard"):
        assert counts.get(topic, 0) > 0, (topic, counts)
    assert shutdown["reason"] == "SIGTERM" and shutdown["outboards_released"] is True
    report = json.loads(shutdown["report"])
    assert report["heading"]["headings"] > 0 and report["heading"]["rates"] > 0 and report["heading"]["bad"] == 0
    assert report["estimation"]["updates"] > 0 and report["helm"]["outboards"]["commands"] > 0
    # the app recorded itself at its boundary: a desktop replay reproduces its outputs bit for bit
    out = subprocess.run([sys.executable, "-m", "harness", "replay", str(log), "--out", str(tmp_path / "replay")],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "wamv_boat" in out.stdout and "identical" in out.stdout, out.stdout + out.stderr
    replay = json.loads((tmp_path / "replay" / "replay.json").read_text())
    for topic in ("command", "thrust", "estimate"):
        t = replay["topics"][topic]
        assert t["logged"] == t["replayed"] > 0 and t["first_divergence_us"] is None, (topic, t)


def test_bad_config_is_one_line_exit_2(tmp_path, capsys):
    for bad in ({"mission": {"plan": [[0.0, 90.0, 1.5]]}}, {"gnss": {"prt": "/dev/ttyUSB0"}},
                {"heading": {"poll_hz": 33}}, {"outboards": {"direction_left": 2}}):
        cfg = tmp_path / "bad.json"
        cfg.write_text(json.dumps(bad))
        assert service.main(["run", "--config", str(cfg), "--log-file", str(tmp_path / "x.mcap")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: "), err
        assert not (tmp_path / "x.mcap").exists()
    # the harness's simulated ports without the harness: one line naming the desk runner
    cfg.write_text(json.dumps(BENCH_PORTS))
    assert service.main(["run", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "harness.sim.wamv_bench" in err


def test_missing_port_is_one_line_exit_3(tmp_path, capsys):
    real = tmp_path / "tty-present"
    real.write_text("")
    base = {"gnss": {"port": str(real)}, "heading": {"port": str(real)},
            "outboards": {"left_port": str(real), "right_port": str(real)}}
    for block, key in service.PORT_SETTINGS:
        cfg = json.loads(json.dumps(base))
        cfg[block][key] = str(tmp_path / "ttyUSB9")
        path = tmp_path / "wamv.json"
        path.write_text(json.dumps(cfg))
        assert service.main(["run", "--config", str(path), "--log-file", str(tmp_path / "x.mcap")]) == 3
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "ttyUSB9" in err and "%s.%s" % (block, key) in err, err
        assert not (tmp_path / "x.mcap").exists()


def test_service_unit_and_default_config_print():
    out = subprocess.run([sys.executable, "-m", "boards.wamv", "service-unit", "--python", "/usr/bin/python3",
                          "--workdir", "/opt/onboard", "--config", "/etc/onboard/wamv.toml"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ExecStart=/usr/bin/python3 -m boards.wamv run --config /etc/onboard/wamv.toml" in out.stdout
    assert "SuccessExitStatus=130 143" in out.stdout and "KillSignal=SIGTERM" in out.stdout
    assert service.main(["service-unit", "--workdir", "relative"]) == 2
    cfg = service.merged_config({})
    assert cfg == service.DEFAULT_CONFIG


def test_heading_sentences_round_trip_and_bad_ones_are_refused():
    for yaw in (0.3, -2.0, 3.1):
        kind, got = hn.parse(hn.hdt(yaw))
        assert kind == "heading" and abs(got - yaw) < 1e-3
    kind, rate = hn.parse(hn.rot(-0.25))
    assert kind == "rate" and abs(rate + 0.25) < 1e-5
    assert hn.parse(nmea.gga(0.0, 21.3, -157.9)) is None
    good = hn.hdt(1.0)
    for bad in (good.replace("*", "0*"), "$HEROT,12.0,V*%02X" % nmea.checksum("HEROT,12.0,V"),
                "$HEHDT,nan,T*%02X" % nmea.checksum("HEHDT,nan,T"),
                "$HETHS,10.0,V*%02X" % nmea.checksum("HETHS,10.0,V")):
        with pytest.raises(nmea.NmeaError):
            hn.parse(bad)


def test_a_bench_world_whose_step_raises_says_so_instead_of_dying_silently():
    """The bench's world thread: an exception in a step is kept and printed (the thread used to end without a
    word, and the service then only saw its inputs go stale)."""
    import io
    import time as _time
    from harness.sim.wamv_bench import BenchWorld
    out = io.StringIO()
    world = BenchWorld(out=out)
    try:
        def broken(*_args):
            raise RuntimeError("thrust model gone")
        world.vessel.step_thrust = broken
        world.start()
        deadline = _time.monotonic() + 30.0               # a hang guard only: the first step raises
        while world.error is None and _time.monotonic() < deadline:
            _time.sleep(0.01)
        assert world.error == "RuntimeError: thrust model gone"
        assert "wamv_bench: the simulated boat stopped: RuntimeError: thrust model gone" in out.getvalue()
    finally:
        world.close()
