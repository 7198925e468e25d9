"""Crazyflie benchmark: simulated drones served to the official cflib over loopback UDP.

Measured side by side in one run (this machine is shared and noisy; compare ratios):
- connect time: cflib SyncCrazyflie open_link + all parameter values, without a TOC cache
  and with a warm cflib TOC cache, and the runtime driver's full connect (params written and
  read back, three log blocks started);
- log throughput per drone: packets/s cflib receives with 1..16 log blocks at 10 ms, next to
  the ~500 packets/s a real Crazyradio link carries (Bitcraze's figure for radio throughput);
- drones per core: a ``python -m harness crazyflies`` server process serving N drones, each
  with one 100 Hz log block and 50 Hz velocity setpoints from a raw-UDP client (kept outside
  the server so its CPU is not counted); the server's CPU time from /proc gives core
  fraction per drone and drones per core, with the delivered log rate as a check.
Writes bench/results/crazyflie.json.
"""
import argparse
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from boards.crazyflie.driver import CrazyflieDriver, init_cflib  # noqa: E402
from harness.sim.crazyflie import crtp  # noqa: E402
from harness.sim.crazyflie.fleet import SimCrazyflieFleet  # noqa: E402
from harness.sim.crazyflie.firmware_toc import LOG_VARIABLES  # noqa: E402
from results_file import write_results  # noqa: E402 (bench/ is the script's folder)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REAL_RADIO_PACKETS_PER_S = 500.0


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def bench_connect(repeats=5):
    from cflib.crazyflie import Crazyflie
    from cflib.crazyflie.syncCrazyflie import SyncCrazyflie

    out = {}
    with SimCrazyflieFleet(1, seed=1) as fleet, tempfile.TemporaryDirectory() as cache:
        uri = fleet.uris[0]
        for label, cache_dir in (("cflib_no_cache_s", None), ("cflib_warm_cache_s", cache)):
            times = []
            for _ in range(repeats + (1 if cache_dir else 0)):
                t0 = time.perf_counter()
                scf = SyncCrazyflie(uri, cf=Crazyflie(rw_cache=cache_dir))
                scf.open_link()
                scf.wait_for_params()
                times.append(time.perf_counter() - t0)
                scf.close_link()
            out[label] = _median(times[1:] if cache_dir else times)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            drv = CrazyflieDriver(uri)
            drv.connect()
            times.append(time.perf_counter() - t0)
            drv.close()
        out["driver_connect_s"] = _median(times)
    return out


def bench_log_throughput(block_counts=(1, 4, 8, 16), seconds=2.0):
    from cflib.crazyflie import Crazyflie
    from cflib.crazyflie.log import LogConfig
    from cflib.crazyflie.syncCrazyflie import SyncCrazyflie

    rows = []
    floats = ["%s.%s" % (g, n) for g, n, t, _s in LOG_VARIABLES if t == "float"]
    for n_blocks in block_counts:
        with SimCrazyflieFleet(1, seed=2) as fleet:
            scf = SyncCrazyflie(fleet.uris[0], cf=Crazyflie(rw_cache=None))
            scf.open_link()
            scf.wait_for_params()
            count = [0]
            lock = threading.Lock()

            def cb(_ts, _data, _lg):
                with lock:
                    count[0] += 1

            for b in range(n_blocks):
                lg = LogConfig(name="b%d" % b, period_in_ms=10)
                for v in floats[(b * 6) % (len(floats) - 6):][:6]:
                    lg.add_variable(v)
                lg.data_received_cb.add_callback(cb)
                scf.cf.log.add_config(lg)
                lg.start()
            time.sleep(0.5)
            with lock:
                c0 = count[0]
            t0 = time.perf_counter()
            time.sleep(seconds)
            with lock:
                c1 = count[0]
            rate = (c1 - c0) / (time.perf_counter() - t0)
            scf.close_link()
        rows.append({"log_blocks": n_blocks, "requested_packets_per_s": 100.0 * n_blocks,
                     "received_packets_per_s": rate, "payload_bytes_per_s": rate * 28,
                     "ratio_to_real_radio": rate / REAL_RADIO_PACKETS_PER_S})
    return rows


def _proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks     # utime + stime


def bench_drones_per_core(counts=(4, 16, 64), seconds=3.0):
    rows = []
    names = [(g, n) for g, n, _t, _s in LOG_VARIABLES]
    ids = [names.index(("stateEstimate", k)) for k in ("x", "y", "z", "vx", "vy", "vz")]
    for n in counts:
        proc = subprocess.Popen([sys.executable, "-m", "harness", "crazyflies", "--count", str(n), "--base-port", "0"],
                                cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            uris = []
            while len(uris) < n:
                line = proc.stdout.readline().decode().strip()
                if not line:
                    raise RuntimeError("server printed %d of %d URIs" % (len(uris), n))
                uris.append(line)
            socks = []
            for uri in uris:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.connect(("127.0.0.1", int(uri.rsplit(":", 1)[1])))
                s.setblocking(False)
                create = bytes((crtp.LOG_CREATE_V2, 1)) + b"".join(struct.pack("<BH", 7, i) for i in ids)
                s.send(crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, create))
                s.send(crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, bytes((crtp.LOG_START, 1, 1))))
                socks.append(s)
            setpoint = crtp.packet(crtp.PORT_COMMANDER_GENERIC, 0,
                                   struct.pack("<Bffff", crtp.SP_HOVER, 0.1, 0.0, 0.0, 0.4))
            received = 0
            t_start = time.perf_counter()
            next_sp = t_start
            cpu0 = None
            t0 = None
            while True:
                now = time.perf_counter()
                if cpu0 is None and now - t_start > 0.5:          # warm-up done
                    cpu0, t0, rx0 = _proc_cpu_s(proc.pid), now, received
                if t0 is not None and now - t0 >= seconds:
                    break
                if now >= next_sp:
                    for s in socks:
                        s.send(setpoint)
                    next_sp += 0.02                                 # 50 Hz setpoints
                ready, _w, _x = select.select(socks, [], [], max(0.0, min(0.005, next_sp - now)))
                for s in ready:
                    while True:
                        try:
                            dg = s.recv(64)
                        except BlockingIOError:
                            break
                        if dg and dg[0] == crtp.header(crtp.PORT_LOG, crtp.LOG_CH_DATA):
                            received += 1
            wall = time.perf_counter() - t0
            cpu = _proc_cpu_s(proc.pid) - cpu0
            for s in socks:
                s.close()
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        core_fraction = cpu / wall
        log_rate = (received - rx0) / wall / n
        rows.append({"drones": n, "server_core_fraction": core_fraction,
                     "core_fraction_per_drone": core_fraction / n,
                     "drones_per_core": n / core_fraction if core_fraction > 0 else float("inf"),
                     "log_packets_per_s_per_drone": log_rate, "log_rate_delivered": log_rate / 100.0})
    return rows


def main():
    logging.getLogger("cflib.crazyflie.toccache").setLevel(logging.ERROR)
    init_cflib()
    t_all = time.perf_counter()
    connect = bench_connect()
    throughput = bench_log_throughput()
    per_core = bench_drones_per_core()
    print("connect (median)           no cache %.3f s   warm TOC cache %.3f s   (ratio %.2f)   driver %.3f s"
          % (connect["cflib_no_cache_s"], connect["cflib_warm_cache_s"],
             connect["cflib_no_cache_s"] / connect["cflib_warm_cache_s"], connect["driver_connect_s"]))
    print("\n%-10s %12s %12s %10s" % ("log blocks", "requested/s", "received/s", "vs radio"))
    for r in throughput:
        print("%-10d %12.0f %12.1f %9.2fx" % (r["log_blocks"], r["requested_packets_per_s"],
                                            r["received_packets_per_s"], r["ratio_to_real_radio"]))
    print("\n%-7s %14s %14s %14s %12s" % ("drones", "server cores", "core/drone", "drones/core", "log delivered"))
    for r in per_core:
        print("%-7d %14.3f %14.4f %14.1f %11.0f%%" % (r["drones"], r["server_core_fraction"],
                                                    r["core_fraction_per_drone"], r["drones_per_core"],
                                                    100 * r["log_rate_delivered"]))
    result = {"connect": connect, "log_throughput": throughput, "drones_per_core_100hz_log_50hz_setpoints": per_core,
              "real_radio_packets_per_s": REAL_RADIO_PACKETS_PER_S, "cpu_count": os.cpu_count(),
              "bench_wall_s": time.perf_counter() - t_all,
              "notes": "shared 2-core machine; drones/core from the server process's /proc CPU time"}
    print()
    write_results("crazyflie", result, sort_keys=True)


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
