"""Recording benchmark: what recording the ground robot's app at its boundary costs per tick.

The app (planar EKF + way-point drive on one Node, onboard.runtime.ground_robot) runs the same
seeded 20 s of IMU (100 Hz) and pose (10 Hz) samples three ways, side by side in one run, best of
five each:
- not recording;
- recording into an in-memory list (the Node's own cost: entry-point wrappers, tick hook, outputs);
- recording into an MCAP file (onboard.runtime.mcap_log.McapLog: JSON encoding + zstd chunks),
  what the scenarios and the Raspberry Pi service do;
- recording into the compact binary ring log (onboard.runtime.ring_log.RingLogSink: packed doubles,
  CRC-32 per record), what a MicroPython board does and a host could do, converting to MCAP later.
Also: replaying that MCAP file (read + rebuild + compare) against the simulated time it covers.
Writes bench/results/replay.json.
"""
import json
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.replay import read_recording, replay_events  # noqa: E402
from onboard.core.samples import ImuSample, PoseSample  # noqa: E402
from onboard.runtime.ground_robot import GroundRobotRuntime  # noqa: E402
from onboard.runtime.mcap_log import McapLog  # noqa: E402
from onboard.runtime.ring_log import RingLogSink  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "replay.json")
TICKS = 2000                    # 20 s at the app's 100 Hz base rate
REPEATS = 5
G_MPS2 = 9.80665


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


def run_app(sink, imus, poses):
    """Seconds per tick of the app fed and stepped TICKS times (sink: None, or the recording sink)."""
    app = GroundRobotRuntime([(3.0, 0.0), (3.0, 3.0), (0.0, 3.0)], _Motors())
    if sink is not None:
        app.record(sink)
    t0 = time.perf_counter()
    for k in range(TICKS):
        app.on_imu(imus[k])
        if k % 10 == 0:
            app.on_pose(poses[k // 10])
        app.step(k * 10000)
    return (time.perf_counter() - t0) / TICKS


def main():
    imus, poses = _samples()
    tmp = tempfile.mkdtemp(prefix="bench-replay-")
    best = {"none": math.inf, "memory": math.inf, "mcap": math.inf, "ring": math.inf}
    for _ in range(REPEATS):
        best["none"] = min(best["none"], run_app(None, imus, poses))
        records = []
        best["memory"] = min(best["memory"], run_app(lambda topic, t, msg: records.append((topic, t, msg)),
                                                     imus, poses))
        log = McapLog(os.path.join(tmp, "app.mcap"))
        best["mcap"] = min(best["mcap"], run_app(log.log, imus, poses))
        log.close()
        ring = RingLogSink(os.path.join(tmp, "app.bin"), 4 * 1024 * 1024)
        best["ring"] = min(best["ring"], run_app(ring, imus, poses))
        ring.close()
    t0 = time.perf_counter()
    events, damage = read_recording(os.path.join(tmp, "app.mcap"))
    result = replay_events(events)
    replay_s = time.perf_counter() - t0
    results = {
        "tick_us": {k: v * 1e6 for k, v in best.items()},
        "recording_overhead_memory": best["memory"] / best["none"] - 1.0,
        "recording_overhead_mcap": best["mcap"] / best["none"] - 1.0,
        "recording_overhead_ring_log": best["ring"] / best["none"] - 1.0,
        "records_per_tick": len(records) / TICKS,
        "replay_sim_seconds_per_wall_second": TICKS * 0.01 / replay_s,
        "replay_identical": result["identical"] and damage is None,
    }
    print("%-46s %10s" % ("ground robot app, per tick (best of %d)" % REPEATS, "us"))
    for key, label in (("none", "not recording"), ("memory", "recording into a list"),
                       ("mcap", "recording into MCAP"), ("ring", "recording into the binary ring log")):
        print("%-46s %10.1f" % ("  " + label, results["tick_us"][key]))
    print("%-46s %9.1f %%" % ("recording overhead, list", 100 * results["recording_overhead_memory"]))
    print("%-46s %9.1f %%" % ("recording overhead, MCAP", 100 * results["recording_overhead_mcap"]))
    print("%-46s %9.1f %%" % ("recording overhead, binary ring log", 100 * results["recording_overhead_ring_log"]))
    print("%-46s %10.1f" % ("records per tick", results["records_per_tick"]))
    print("%-46s %10.1f x real time (identical: %s)" % ("replay of the MCAP recording",
                                                         results["replay_sim_seconds_per_wall_second"],
                                                         results["replay_identical"]))
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as fh:
        json.dump(results, fh, indent=2, sort_keys=True)
        fh.write("\n")
    print("wrote", RESULTS)


if __name__ == "__main__":
    main()
