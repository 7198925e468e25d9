"""Random datagrams never crash a simulated Crazyflie, and it keeps serving a connected cflib;
the ``python -m harness crazyflies`` command prints URIs cflib connects to and stops on Ctrl-C."""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings, strategies as st

from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.sim_drone import SimCrazyflie
from harness.sim.rng import RunRandom

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENT = ("127.0.0.1", 40000)
_DRONE = SimCrazyflie()


@settings(max_examples=400)
@given(st.binary(min_size=0, max_size=40), st.integers(min_value=0, max_value=10 ** 9))
def test_any_datagram_is_answered_or_counted_never_raises(datagram, now_us):
    before = dict(_DRONE.stats)
    replies = _DRONE.handle(datagram, now_us, CLIENT)
    assert all(isinstance(r, bytes) and 1 <= len(r) <= 1 + crtp.MAX_DATA for r in replies)
    assert _DRONE.stats["rx_packets"] == before["rx_packets"] + 1
    assert _DRONE.stats["internal_errors"] == 0
    _DRONE.advance(_DRONE.time_us + 10000)
    v = _DRONE.vehicle
    assert all(x == x for x in (v.north_m, v.east_m, v.height_m, v.vel_north_mps, v.vel_east_mps)), "no NaN"


@settings(max_examples=300)
@given(st.sampled_from([crtp.PORT_PARAM, crtp.PORT_LOG, crtp.PORT_COMMANDER, crtp.PORT_COMMANDER_GENERIC,
                        crtp.PORT_SETPOINT_HL, crtp.PORT_MEM, crtp.PORT_PLATFORM, crtp.PORT_SUPERVISOR,
                        crtp.PORT_LOCALIZATION, crtp.PORT_LINKCTRL]),
       st.integers(0, 3), st.binary(min_size=0, max_size=30))
def test_well_addressed_garbage_on_every_port(port, channel, data):
    _DRONE.handle(crtp.packet(port, channel, data), _DRONE.time_us, CLIENT)
    out = _DRONE.advance(_DRONE.time_us + 10000)
    assert _DRONE.stats["internal_errors"] == 0
    assert all(len(dg) <= 1 + crtp.MAX_DATA for _c, dg in out)


@pytest.mark.fil
@pytest.mark.timeout(60)
def test_random_datagrams_while_cflib_stays_connected(open_sync):
    from cflib.crazyflie.log import LogConfig

    rng = RunRandom(7).stream("crazyflie.fuzz")
    with SimCrazyflieFleet(1, seed=7) as fleet:
        scf = open_sync(fleet.uris[0])
        scf.wait_for_params()
        cf = scf.cf
        count = {"n": 0}
        cond = threading.Condition()

        def on_log(_ts, _data, _lg):
            with cond:
                count["n"] += 1
                cond.notify_all()

        lg = LogConfig(name="fuzzwatch", period_in_ms=10)
        lg.add_variable("stateEstimate.x")
        lg.add_variable("pm.vbat")
        lg.data_received_cb.add_callback(on_log)
        cf.log.add_config(lg)
        lg.start()
        with cond:
            assert cond.wait_for(lambda: count["n"] >= 5, 5.0)
        fuzz = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        port = fleet.server.ports[0]
        sent = 0
        for i in range(3000):
            n = int(rng.integers(0, 36))
            data = bytes(rng.integers(0, 256, size=n, dtype="uint8"))
            if i % 3 == 0 and n:
                # aim a third at real ports with the link bits set, to get past the header
                data = bytes((crtp.header(int(rng.integers(0, 16)), int(rng.integers(0, 4))),)) + data[1:]
            fuzz.sendto(data, ("127.0.0.1", port))
            sent += 1
        sim = fleet.drones[0]
        assert fleet.wait_until(lambda: sim.stats["rx_packets"] >= sent, 10.0)
        fuzz.close()
        # the cflib session still streams ...
        with cond:
            base = count["n"]
            assert cond.wait_for(lambda: count["n"] >= base + 20, 5.0)
        # ... and still answers parameter reads
        got = threading.Event()
        cf.param.add_update_callback(group="pm", name="lowVoltage", cb=lambda name, value: got.set())
        cf.param.request_param_update("pm.lowVoltage")
        assert got.wait(5.0)
        stats = sim.stats
        assert stats["internal_errors"] == 0
        assert stats["malformed"] + stats["unknown"] + stats["rejected_setpoints"] > 100
        assert fleet.server.errors == 0
        open_sync.close_all()


def _read_lines(proc, n, timeout_s):
    lines, buf = [], b""
    fd = proc.stdout.fileno()
    while len(lines) < n:
        ready, _w, _x = select.select([fd], [], [], timeout_s)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
        *done, buf = buf.split(b"\n")
        lines += [d.decode() for d in done]
    return lines


@pytest.mark.fil
@pytest.mark.timeout(60)
def test_crazyflies_command_prints_uris_and_serves_until_interrupted(open_sync):
    proc = subprocess.Popen([sys.executable, "-m", "harness", "crazyflies", "--count", "4", "--base-port", "0"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        uris = _read_lines(proc, 4, 20.0)
        assert len(uris) == 4 and all(u.startswith("udp://127.0.0.1:") for u in uris), uris
        scf = open_sync(uris[3])
        scf.wait_for_params()
        assert scf.cf.param.get_value("commander.enHighLevel") == "0"
        scf.close_link()
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0
    stats = json.loads(err.decode().strip().splitlines()[-1])
    assert stats["cf3"]["rx_packets"] > 0 and stats["cf0"]["rx_packets"] == 0


@pytest.mark.parametrize("argv,needle", [
    (["--count", "0"], "fleet size must be a whole number 1..64, got 0"),
    (["--base-port", "-1"], "ports -1..-1 (base port + one per drone) must lie in 0..65535"),
    (["--base-port", "65535", "--count", "2"], "ports 65535..65536 (base port + one per drone) must lie in 0..65535"),
    (["--host", "8.8.8.8"], "simulated Crazyflies bind to loopback only, not '8.8.8.8'"),
    (["--spacing", "nan"], "crazyflie fleet setting spacing_m must be finite, got nan"),
])
def test_crazyflies_command_refuses_bad_arguments_in_one_line(capsys, argv, needle):
    from harness.cli import main
    assert main(["crazyflies"] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1, err


def test_a_taken_port_is_a_one_line_error(capsys):
    from harness.cli import main
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        assert main(["crazyflies", "--base-port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot bind 127.0.0.1:%d for cf0: " % port) and err.count("\n") == 1


def _closed_udp_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()                      # nothing listens there now: cflib's datagrams are refused
    return port


def test_member_to_a_closed_port_prints_only_its_own_error_line():
    port = _closed_udp_port()
    proc = subprocess.run([sys.executable, "-m", "boards.crazyflie", "member", "--uri", "udp://127.0.0.1:%d" % port,
                           "--id", "0", "--connect-timeout-s", "1"], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("error: cannot connect to udp://127.0.0.1:%d" % port), proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr   # no cflib log
