"""Recording benchmark: what recording the ground robot's app at its boundary costs per tick.

The app (planar EKF + way-point drive on one Node, onboard.runtime.ground_robot) runs the same
seeded 20 s of IMU (100 Hz) and pose (10 Hz) samples in each of these ways, side by side in one
run, the ways in a rotating order in each of ``--repeats`` rounds, best of the rounds each:
- not recording;
- recording into an in-memory list (the Node's own cost: entry-point wrappers, tick hook, outputs);
- recording into the compact binary ring log (onboard.runtime.ring_log.RingLogSink: records held
  and framed in batches, packed doubles, CRC-32 per record), what a MicroPython board does;
- recording into an MCAP file (onboard.runtime.mcap_log.McapLog: held, then JSON + zstd chunks in
  batches), what the scenarios and the Raspberry Pi service do;
- recording into an MCAP file through the writer process (McapLog(writer_process=True): the app's
  process marshals each batch into a pipe; JSON, zstd and the writes run in another process);
- the last three again with ``node.idle()`` called after each step (what Node.run does before it
  waits for the next tick): the sink writes what it holds there, outside the step; that idle time
  is measured apart, against a run that calls ``node.idle()`` without recording.
Each run's per-tick time is taken as the CPU time of the app's thread (time.thread_time: what the
app's thread spent itself, not the time it stood preempted on a loaded machine; the overheads are
of this figure) and as wall time; close() (the rest of the file, or waiting for the writer process)
is timed apart, and the writer process's own CPU time is reported per record. Also: replaying an
MCAP recording (read + rebuild + compare) against the simulated time it covers. Writes
bench/results/replay.json.

    .venv/bin/python bench/replay.py [--repeats 25]
"""
import argparse
import math
import os
import platform
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from results_file import write_results  # noqa: E402 (bench/ is the script's folder)
from harness.replay import read_recording, replay_events  # noqa: E402
from onboard.core.samples import ImuSample, PoseSample  # noqa: E402
from onboard.runtime.ground_robot import GroundRobotRuntime  # noqa: E402
from onboard.runtime.mcap_log import McapLog  # noqa: E402
from onboard.runtime.ring_log import RingLogSink  # noqa: E402

TICKS = 2000                    # 20 s at the app's 100 Hz base rate
REPEATS = 25
G_MPS2 = 9.80665
WAYS = ("none", "memory", "ring", "mcap", "mcap_process", "none_idle", "ring_idle", "mcap_idle", "mcap_process_idle")
LABELS = {"none": "not recording", "memory": "recording into a list",
          "ring": "into the binary ring log", "mcap": "into MCAP (in the app's process)",
          "mcap_process": "into MCAP (writer process)",
          "none_idle": "not recording, node.idle() after each step",
          "ring_idle": "into the ring log, written in node.idle()",
          "mcap_idle": "into MCAP, written in node.idle()",
          "mcap_process_idle": "into MCAP (writer process), sent in node.idle()"}


class _Motors:
    def command(self, cmd):
        pass

    def stop(self, now_us):
        pass


def _samples():
    """The robot drives a slow circle: IMU increments every 10 ms, a pose every 100 ms."""
    imus, poses = [], []
    for k in range(TICKS):
        t = k * 10000
        imus.append(ImuSample(t + 10000, 10000, (0.002, 0.0, -G_MPS2 * 0.01), (0.0, 0.0, 0.001)))
        if k % 10 == 0:
            yaw = 0.1 * t * 1e-6
            poses.append(PoseSample(t, (math.sin(yaw), 1.0 - math.cos(yaw), 0.0), (0.0, 0.0, yaw)))
    return imus, poses


def run_app(sink, imus, poses, idle=False):
    """(wall s, thread CPU s, idle CPU s) per tick of the app fed and stepped TICKS times (sink: None,
    or the recording sink). ``idle``: ``node.idle()`` after each step (the sink writes what it holds
    between ticks), its CPU time measured apart (and taken out of the second figure)."""
    app = GroundRobotRuntime([(3.0, 0.0), (3.0, 3.0), (0.0, 3.0)], _Motors())
    if sink is not None:
        app.record(sink)
    node_idle = app.node.idle
    idle_s = 0.0
    clock = time.thread_time
    c0 = clock()
    t0 = time.perf_counter()
    if idle:
        for k in range(TICKS):
            app.on_imu(imus[k])
            if k % 10 == 0:
                app.on_pose(poses[k // 10])
            app.step(k * 10000)
            c = clock()
            node_idle()
            idle_s += clock() - c
    else:
        for k in range(TICKS):
            app.on_imu(imus[k])
            if k % 10 == 0:
                app.on_pose(poses[k // 10])
            app.step(k * 10000)
    wall = time.perf_counter() - t0
    cpu = clock() - c0
    return wall / TICKS, (cpu - idle_s) / TICKS, idle_s / TICKS


def run_way(way, imus, poses, tmp):
    """One run of ``way``: (wall s per tick, CPU s per tick in the steps, idle CPU s per tick, close s,
    writer process CPU s or None, records)."""
    records = []
    closer = None
    base, idle = (way[:-5], True) if way.endswith("_idle") else (way, False)
    if base == "none":
        sink = None
    elif base == "memory":
        sink = lambda topic, t, msg: records.append((topic, t, msg))  # noqa: E731
    elif base == "ring":
        ring = RingLogSink(os.path.join(tmp, way + ".bin"), 4 * 1024 * 1024)
        sink, closer = ring, ring
    else:
        log = McapLog(os.path.join(tmp, way + ".mcap"), writer_process=base == "mcap_process")
        sink, closer = log.log, log
    wall, cpu, idle_s = run_app(sink, imus, poses, idle)
    close_s = 0.0
    writer_cpu = None
    if closer is not None:
        t0 = time.perf_counter()
        closer.close()
        close_s = time.perf_counter() - t0
        writer_cpu = getattr(closer, "writer_cpu_s", None)
        n = closer.records if base == "ring" else closer.messages
    else:
        n = len(records)
    return wall, cpu, idle_s, close_s, writer_cpu, n


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=REPEATS, help="rounds (best of them is kept)")
    args = p.parse_args(argv)
    imus, poses = _samples()
    tmp = tempfile.mkdtemp(prefix="bench-replay-")
    inf = math.inf
    wall, cpu, idle, close_s, records = {}, {}, {}, {}, {}
    writer_cpu = inf
    for r in range(args.repeats):
        for i in range(len(WAYS)):
            way = WAYS[(r + i) % len(WAYS)]
            w, c, il, cl, wc, n = run_way(way, imus, poses, tmp)
            wall[way] = min(wall.get(way, inf), w)
            if c < cpu.get(way, inf):
                cpu[way], idle[way] = c, il        # the idle time of the run whose steps were fastest
            close_s[way] = min(close_s.get(way, inf), cl)
            records[way] = n
            if wc is not None and way == "mcap_process":
                writer_cpu = min(writer_cpu, wc)
    t0 = time.perf_counter()
    events, damage = read_recording(os.path.join(tmp, "mcap_process.mcap"))
    result = replay_events(events)
    replay_s = time.perf_counter() - t0
    rec_per_tick = (records["memory"] - 1) / TICKS          # less the /app/config record
    results = {
        "tick_us_cpu": {k: v * 1e6 for k, v in cpu.items()},
        "idle_us_cpu": {k: idle[k] * 1e6 for k in WAYS if k.endswith("_idle")},
        "tick_us_wall": {k: v * 1e6 for k, v in wall.items()},
        "close_ms": {k: close_s[k] * 1e3 for k in WAYS if records.get(k) and not k.startswith(("none", "memory"))},
        "writer_process_cpu_us_per_record": writer_cpu / records["mcap_process"] * 1e6,
        "records_per_tick": rec_per_tick,
        "repeats": args.repeats,
        "replay_sim_seconds_per_wall_second": TICKS * 0.01 / replay_s,
        "replay_identical": result["identical"] and damage is None,
        "python": platform.python_version(),
    }
    for way in WAYS:
        if way.startswith("none"):
            continue
        base = "none_idle" if way.endswith("_idle") else "none"
        results["recording_overhead_" + way] = cpu[way] / cpu[base] - 1.0
        if way.endswith("_idle"):
            results["recording_total_" + way] = (cpu[way] + idle[way] - idle[base]) / cpu[base] - 1.0
    print("%-52s %9s %8s %10s %9s" % ("ground robot app, per tick (best of %d)" % args.repeats, "step CPU",
                                      "+ %", "idle CPU", "wall"))
    for way in WAYS:
        over = "%+7.1f%%" % (100 * results["recording_overhead_" + way]) if not way.startswith("none") else ""
        il = "%10.1f" % (idle[way] * 1e6) if way.endswith("_idle") else ""
        print("%-52s %9.1f %8s %10s %9.1f" % ("  " + LABELS[way], cpu[way] * 1e6, over, il, wall[way] * 1e6))
    print("(us; step CPU: the app's thread in its steps; idle CPU: node.idle() after each step, where the")
    print(" sink writes what it holds; in the first rows the batches are written inside the steps)")
    print("%-52s %9.1f" % ("records per tick", rec_per_tick))
    print("%-52s %s" % ("close() after 2000 ticks (ms)", ", ".join("%s %.1f" % kv for kv in
                                                                  sorted(results["close_ms"].items()))))
    print("%-52s %9.1f us per record (on another core)" % ("writer process CPU",
                                                           results["writer_process_cpu_us_per_record"]))
    print("%-52s %9.1f x real time (identical: %s)" % ("replay of the MCAP recording",
                                                       results["replay_sim_seconds_per_wall_second"],
                                                       results["replay_identical"]))
    write_results("replay", results)


if __name__ == "__main__":
    main()
