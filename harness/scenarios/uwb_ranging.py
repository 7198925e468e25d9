"""Scenario `uwb-ranging`: N UWB nodes moving in a 4 m x 4 m area, token ring vs broadcast ranging.

Every node runs the onboard UWB protocol (onboard/comms/uwb) on the simulated DW1000 channel
(harness/sim/radio/uwb_channel.py). Nodes move at constant speed (<= 1 m/s, the paper's cap)
bouncing off the walls. For each mode and each N: per-pair update rate (range samples a node
gets for one peer per second, averaged over ordered pairs, after the warm-up) and range error
against the true distance at the sample time (so motion during the exchange is part of it).
"""
import math
import time

import numpy as np

from harness.sim.clock import SimClock
from harness.config import (NON_NEGATIVE, POSITIVE, ConfigError, check_ranges, int_at_least, non_empty_list, one_of,
                            within)
from harness.sim.radio.uwb_channel import RADIO_DEFAULTS, UwbNetwork
from onboard.comms.uwb.node import DEFAULTS as PROTOCOL_DEFAULTS

DESCRIPTION = "UWB ranging: token ring (paper) vs broadcast (scalable), N nodes in 4 m x 4 m"

DEFAULTS = {
    "modes": ["token_ring", "broadcast"],
    "n_nodes": [2, 4, 5, 10, 20],
    "duration_s": 2.0,           # measured time after the warm-up
    "warmup_s": 0.2,             # plus the broadcast power-on listen (listen_us + N * join_stagger_us)
    "area_m": 4.0,
    "max_speed_mps": 1.0,
    "protocol": {k: PROTOCOL_DEFAULTS[k] for k in ("reply_delay_us", "slot_us", "antenna_delay_ticks")},
    "radio": {k: RADIO_DEFAULTS[k] for k in ("data_rate_kbps", "prf_mhz", "preamble_symbols",
                                             "clock_drift_ppm_max", "loss_prob", "nlos_pair_fraction")},
}


def bouncing_state_fn(n, rng, area_m, max_speed_mps):
    """state_fn for UwbNetwork: n nodes at constant speed reflecting off the walls of [0, area]^2."""
    p0 = rng.uniform(0.0, area_m, size=(n, 2))
    speed = rng.uniform(0.2, 1.0, size=n) * max_speed_mps
    heading = rng.uniform(-math.pi, math.pi, size=n)
    v0 = np.stack([speed * np.cos(heading), speed * np.sin(heading)], axis=1)

    def fold(x, v):
        period = 2.0 * area_m
        x = x % period
        return (x, v) if x <= area_m else (period - x, -v)

    def state(now_us):
        t = now_us * 1e-6
        out = {}
        for i in range(n):
            x, vx = fold(p0[i, 0] + v0[i, 0] * t, v0[i, 0])
            y, vy = fold(p0[i, 1] + v0[i, 1] * t, v0[i, 1])
            out[i] = ((x, y), (vx, vy))
        return out
    return state


def measure(mode, n, config, random, stream_prefix="uwb"):
    """Run one (mode, N) case; returns its figures (per-pair rate, errors, wall/CPU cost)."""
    clock = SimClock()
    protocol = dict(config.get("protocol", {}))
    protocol["mode"] = mode
    state_fn = bouncing_state_fn(n, random.stream("%s.motion.%d" % (stream_prefix, n)), config["area_m"],
                                 config["max_speed_mps"])
    net = UwbNetwork(clock, range(n), random, protocol=protocol, radio=config.get("radio"), state_fn=state_fn)
    listen_us = PROTOCOL_DEFAULTS["listen_us"] + (n - 1) * PROTOCOL_DEFAULTS["join_stagger_us"]
    warm_us = int(config["warmup_s"] * 1e6) + (listen_us if mode == "broadcast" else 0)
    end_us = warm_us + int(config["duration_s"] * 1e6)
    errors = []
    counts = {}

    def on_range(node_id, sample, true_us):
        if true_us >= warm_us:
            key = (node_id, sample.peer_id)
            counts[key] = counts.get(key, 0) + 1
            errors.append(sample.range_m - net.true_range_m(node_id, sample.peer_id, true_us))

    net.keep_samples = False
    net.on_range.append(on_range)
    net.start()
    clock.advance_to(warm_us)
    frames0 = net.stats["frames"]
    w0, c0 = time.perf_counter(), time.process_time()
    clock.advance_to(end_us)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    dur = config["duration_s"]
    pairs = n * (n - 1)
    rates = [counts.get((i, j), 0) / dur for i in range(n) for j in range(n) if i != j]
    e = np.array(errors) if errors else np.zeros(0)
    return {
        "per_pair_hz": float(np.mean(rates)),
        "per_pair_hz_min": float(np.min(rates)),
        "pairs_ranged": int(sum(1 for r in rates if r > 0)),
        "pairs": pairs,
        "error_mean_m": float(e.mean()) if len(e) else None,
        "error_std_m": float(e.std(ddof=1)) if len(e) > 1 else None,
        "error_abs_p95_m": float(np.percentile(np.abs(e), 95)) if len(e) else None,
        "samples": int(len(e)),
        "frames_per_s": (net.stats["frames"] - frames0) / dur,
        "channel": dict(net.stats),
        "sim_seconds_per_wall_second": dur / wall if wall > 0 else None,
        "sim_seconds_per_cpu_second": dur / cpu if cpu > 0 else None,
    }


# checked before anything runs (harness.config rules)
SETTING_RANGES = {
    "modes": non_empty_list(one_of("token_ring", "broadcast")), "n_nodes": non_empty_list(int_at_least(2)),
    "duration_s": POSITIVE, "warmup_s": NON_NEGATIVE, "area_m": POSITIVE, "max_speed_mps": NON_NEGATIVE,
    "protocol.reply_delay_us": int_at_least(1), "protocol.slot_us": int_at_least(1),
    "protocol.antenna_delay_ticks": int_at_least(0),
    "radio.data_rate_kbps": one_of(110, 850, 6800), "radio.prf_mhz": one_of(16, 64),
    "radio.preamble_symbols": int_at_least(1), "radio.clock_drift_ppm_max": NON_NEGATIVE,
    "radio.loss_prob": within(0.0, 1.0), "radio.nlos_pair_fraction": within(0.0, 1.0),
}


def run(config, ctx):
    check_ranges(config, SETTING_RANGES)
    if config["warmup_s"] >= config["duration_s"]:
        raise ConfigError("setting config.warmup_s must be less than config.duration_s (%r), got %r"
                          % (config["duration_s"], config["warmup_s"]))
    results = {}
    for mode in config["modes"]:
        results[mode] = {}
        for n in config["n_nodes"]:
            m = measure(mode, n, config, ctx.random)
            del m["sim_seconds_per_wall_second"], m["sim_seconds_per_cpu_second"]   # keep metrics reproducible
            results[mode][str(n)] = m
            ctx.log("/uwb/case", 0, {"mode": mode, "n": n, "per_pair_hz": m["per_pair_hz"],
                                      "error_mean_m": m["error_mean_m"], "error_std_m": m["error_std_m"]})
    metrics = {"results": results,
               "per_pair_hz": {mode: {str(n): results[mode][str(n)]["per_pair_hz"] for n in config["n_nodes"]}
                               for mode in config["modes"]}}
    if ctx.report is not None:
        _plots(ctx.report, config, results)
    return metrics


def _plots(report, config, results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for mode in config["modes"]:
        ns = config["n_nodes"]
        ax[0].plot(ns, [results[mode][str(n)]["per_pair_hz"] for n in ns], "o-", label=mode)
        ax[1].errorbar(ns, [results[mode][str(n)]["error_mean_m"] or 0.0 for n in ns],
                       yerr=[results[mode][str(n)]["error_std_m"] or 0.0 for n in ns], fmt="o-", capsize=3,
                       label=mode)
    ax[0].axhline(20.0, color="k", ls="--", lw=0.8, label="20 Hz target")
    ax[0].set_yscale("log")
    ax[0].set_xlabel("nodes N")
    ax[0].set_ylabel("per-pair update rate (Hz)")
    ax[0].legend()
    ax[1].axhline(0.0085569, color="k", ls=":", lw=0.8, label="paper mu")
    ax[1].set_xlabel("nodes N")
    ax[1].set_ylabel("range error mean +- std (m)")
    ax[1].legend()
    report.save_figure(fig, "uwb_rate_and_error_vs_n")
