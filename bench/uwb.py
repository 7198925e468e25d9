"""UWB benchmark: per-pair ranging update rate vs N for the token ring and the broadcast mode,
and the channel simulator's speed for N = 20. Writes bench/results/uwb.json.

Same radio settings for both modes (harness/sim/radio/uwb_channel.py RADIO_DEFAULTS): DW1000
channel 5, 6.8 Mb/s, PRF 64 MHz, 128-symbol preamble + 8-symbol SFD, +-20 ppm clocks, RX noise
calibrated to the paper's N(0.0085569 m, 0.061295 m^2); token ring: DS-TWR with 1 ms reply
delays, 100 us turnaround; broadcast: 1 ms slots. Nodes move at <= 1 m/s in 4 m x 4 m.
per_pair_hz = range samples one node gets for one peer per second, averaged over ordered pairs.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.sim.rng import RunRandom  # noqa: E402
from harness.scenarios.uwb_ranging import DEFAULTS, measure  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "uwb.json")
NS = [2, 4, 5, 10, 20]
MODES = ["token_ring", "broadcast"]
TARGET_HZ = 20.0


def main():
    cfg = json.loads(json.dumps(DEFAULTS))
    cfg["duration_s"] = 3.0
    per_pair = {m: {} for m in MODES}
    rows = []
    speed = {}
    for mode in MODES:
        for n in NS:
            r = measure(mode, n, cfg, RunRandom(1))
            per_pair[mode][str(n)] = round(r["per_pair_hz"], 3)
            rows.append((mode, n, r))
            if n == 20:
                speed[mode] = {"wall": r["sim_seconds_per_wall_second"], "cpu": r["sim_seconds_per_cpu_second"]}
    # where the token ring drops below the target (the paper "only scales to five drones")
    sweep = {}
    short = dict(cfg, duration_s=1.5)
    for n in range(2, 9):
        sweep[str(n)] = round(measure("token_ring", n, short, RunRandom(2))["per_pair_hz"], 3)
    max_n = max([int(n) for n, hz in sweep.items() if hz >= TARGET_HZ] or [0])

    print("%-11s %4s %12s %14s %12s %12s %10s" % ("mode", "N", "per-pair Hz", "vs token ring", "err mean m",
                                                  "err std m", "frames/s"))
    for mode, n, r in rows:
        ratio = r["per_pair_hz"] / per_pair["token_ring"][str(n)]
        print("%-11s %4d %12.2f %14.2f %12.4f %12.4f %10.0f" % (mode, n, r["per_pair_hz"], ratio,
                                                                r["error_mean_m"], r["error_std_m"], r["frames_per_s"]))
    print("token ring per-pair Hz by N:", sweep, "-> largest N with >= %.0f Hz: %d" % (TARGET_HZ, max_n))
    for mode in MODES:
        print("N=20 %-10s simulated s per wall s: %.2f (per CPU s: %.2f)" % (mode, speed[mode]["wall"],
                                                                          speed[mode]["cpu"]))
    out = {
        "per_pair_hz": per_pair,
        "sim_seconds_per_wall_second": round(min(s["wall"] for s in speed.values()), 3),
        "sim_seconds_per_wall_second_by_mode": {m: round(speed[m]["wall"], 3) for m in MODES},
        "sim_seconds_per_cpu_second_by_mode": {m: round(speed[m]["cpu"], 3) for m in MODES},
        "token_ring_sweep_per_pair_hz": sweep,
        "token_ring_max_n_at_target": max_n,
        "target_per_pair_hz": TARGET_HZ,
        "range_error": {mode: {str(n): {"mean_m": r["error_mean_m"], "std_m": r["error_std_m"]}}
                        for mode, n, r in rows if n == 10},
        "settings": {"protocol": cfg["protocol"], "radio": cfg["radio"], "duration_s": cfg["duration_s"]},
    }
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as fh:
        json.dump(out, fh, indent=2, sort_keys=True)
        fh.write("\n")
    print("wrote", RESULTS)


if __name__ == "__main__":
    main()
