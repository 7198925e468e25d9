"""Scenario `uwb-ranging`: N UWB nodes moving in a 4 m x 4 m area, token ring vs broadcast ranging.

Every node runs the onboard UWB protocol (onboard/comms/uwb) on the simulated DW1000 channel
(harness/sim/radio/uwb_channel.py). Nodes move at constant speed (<= 1 m/s, the paper's cap)
bouncing off the walls. For each mode and each N: per-pair update rate (range samples a node
gets for one peer per second, averaged over ordered pairs, after the warm-up) and range error
against the true distance at the sample time (so motion during the exchange is part of it).
``success``: every case measured ranges, their mean error within ``MAX_MEAN_ERROR_M`` (a slow
per-pair rate is a finding, not a failure: the token ring does not scale to 20 nodes). The log (``log.mcap``) holds every range sample
after the warm-up and the nodes' true positions at 10 Hz, the cases one after another on the log's
time axis (``/uwb/case`` says where each starts).
"""
import math
import time

import numpy as np

from harness.sim.clock import SimClock
from harness.config import NON_NEGATIVE, POSITIVE, ConfigError, int_at_least, non_empty_list, one_of, within
from harness.report.plots import figure, label
from harness.sim.radio.uwb_channel import RADIO_DEFAULTS, RADIO_SETTING_RANGES, UwbNetwork, truth_module
from harness.sim.radio.uwb_channel_truth import BouncingMotion  # noqa: F401 (the scenario's motion model)
from onboard.comms.uwb.config import RING_MAX_IDS
from onboard.comms.uwb.frames import MAX_NODE_ID
from onboard.comms.uwb.node import DEFAULTS as PROTOCOL_DEFAULTS
from onboard.core.units import s_to_us

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

# a run of a few seconds (`run --reduced`): both modes, 2 and 4 nodes, 0.5 s each
REDUCED = {"n_nodes": [2, 4], "duration_s": 0.5}
MAX_MEAN_ERROR_M = 0.05               # success: |mean range error| of every case at most this (paper: 0.0086 m)
TRUTH_LOG_PERIOD_US = 100000          # the nodes' true positions in the log: 10 Hz
PROGRESS_STEP_US = 50000              # the progress bar moves every 0.05 s of simulated time


def measure(mode, n, config, random, stream_prefix="uwb", log=None, on_progress=None, impl=None):
    """Run one (mode, N) case; returns its figures (per-pair rate, errors, simulated seconds per wall and
    per CPU second). log: None, or ``log(topic, time_us, message)`` (topics ``range``: every range sample
    after the warm-up, with the true range; ``truth``: every node's position at 10 Hz). on_progress: None,
    or called with the case's simulated seconds so far (its length: :func:`case_duration_us`). impl: the
    channel's implementation (None: $ONBOARD_IMPL; the motion model and range scoring follow it, same results)."""
    clock = SimClock()
    protocol = dict(config.get("protocol", {}))
    protocol["mode"] = mode
    truth = truth_module(impl)
    state_fn = truth.BouncingMotion(n, random.stream("%s.motion.%d" % (stream_prefix, n)), config["area_m"],
                                    config["max_speed_mps"])
    net = UwbNetwork(clock, range(n), random, protocol=protocol, radio=config.get("radio"), state_fn=state_fn,
                     impl=impl)
    warm_us, end_us = _case_times_us(mode, n, config)
    # counts per ordered pair and the error of every sample from the warm-up on (true range: the motion model)
    scored = truth.RangeTruth(state_fn, n, warm_us)

    def log_range(node_id, sample, true_us):
        if true_us >= warm_us:
            log("range", sample.time_us, dict(sample.as_dict(), node_id=node_id, true_range_m=scored.last_true_m,
                                              true_time_us=true_us))

    def log_truth(now_us):
        log("truth", now_us, {"time_us": now_us, "pos_m": [list(p) for p, _v in
                                                          (state_fn(now_us)[i] for i in range(n))]})

    net.keep_samples = False
    net.on_range.append(scored.score)           # the bound method: called without building an argument tuple
    if log is not None:
        net.on_range.append(log_range)          # after the scoring: its true range is the sample's
        clock.call_every(TRUTH_LOG_PERIOD_US, log_truth, start_us=0)
    net.start()
    _advance(clock, warm_us, on_progress)
    frames0 = net.stats["frames"]
    w0, c0 = time.perf_counter(), time.process_time()
    _advance(clock, end_us, on_progress)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    dur = config["duration_s"]
    pairs = n * (n - 1)
    counts = scored.counts
    errors = scored.errors
    rates = [counts[i * n + j] / dur for i in range(n) for j in range(n) if i != j]
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


def _case_times_us(mode, n, config):
    """(end of the warm-up, end of the case) in us of one case's simulated time: the broadcast mode
    listens for the network before it joins (listen_us + (N - 1) * join_stagger_us)."""
    listen_us = PROTOCOL_DEFAULTS["listen_us"] + (n - 1) * PROTOCOL_DEFAULTS["join_stagger_us"]
    warm_us = s_to_us(config["warmup_s"]) + (listen_us if mode == "broadcast" else 0)
    return warm_us, warm_us + s_to_us(config["duration_s"])


def case_duration_us(mode, n, config):
    """Simulated length (us) of one (mode, N) case, warm-up included."""
    return _case_times_us(mode, n, config)[1]


def _advance(clock, end_us, on_progress):
    """clock.advance_to(end_us) in steps of PROGRESS_STEP_US (the same events in the same order)."""
    t = clock.now_us()
    while t < end_us:
        t = min(t + PROGRESS_STEP_US, end_us)
        clock.advance_to(t)
        if on_progress is not None:
            on_progress(t * 1e-6)


SETTING_RANGES = {
    # distinct: the results are keyed by mode and node count (a repeat overwrote the first run's)
    "modes": non_empty_list(one_of("token_ring", "broadcast"), distinct=True),
    "n_nodes": non_empty_list(int_at_least(2), distinct=True),
    "duration_s": POSITIVE, "warmup_s": NON_NEGATIVE, "area_m": POSITIVE, "max_speed_mps": NON_NEGATIVE,
    "protocol.reply_delay_us": int_at_least(1), "protocol.slot_us": int_at_least(1),
    "protocol.antenna_delay_ticks": int_at_least(0),
}
# the radio settings the scenario exposes, with the channel simulator's own rules (drift within a crystal's range)
SETTING_RANGES.update({"radio." + k: RADIO_SETTING_RANGES[k] for k in DEFAULTS["radio"]})


# the most nodes of a network in each mode: the node ids are 0..N-1, and the token ring's membership is a
# RING_MAX_IDS-bit map, the broadcast frames carry ids 0..MAX_NODE_ID (onboard.comms.uwb.config.check_node_id)
MAX_NODES = {"token_ring": RING_MAX_IDS, "broadcast": MAX_NODE_ID + 1}


def check_settings(config):
    """The warm-up is shorter than the measured time; every node count fits every mode's node ids
    (:data:`MAX_NODES`), so that no case stops the run after the earlier ones ran."""
    if config["warmup_s"] >= config["duration_s"]:
        raise ConfigError("setting config.warmup_s must be less than config.duration_s (%r), got %r"
                          % (config["duration_s"], config["warmup_s"]))
    for mode in config["modes"]:
        too_many = [n for n in config["n_nodes"] if n > MAX_NODES[mode]]
        if too_many:
            raise ConfigError("setting config.n_nodes must be at most %d in mode %s (node ids 0..%d), got %s"
                              % (MAX_NODES[mode], mode, MAX_NODES[mode] - 1, ", ".join(map(str, too_many))))


def run(config, ctx):
    cases = [(mode, n) for mode in config["modes"] for n in config["n_nodes"]]
    total_us = sum(case_duration_us(mode, n, config) for mode, n in cases)
    progress = ctx.progress(total_us * 1e-6, "uwb-ranging")
    results = {mode: {} for mode in config["modes"]}
    speed = {mode: {} for mode in config["modes"]}
    offset_us = 0                       # where the case starts on the log's (and the progress bar's) time axis
    for mode, n in cases:
        ctx.log("/uwb/case", offset_us, {"mode": mode, "n": n, "start_us": offset_us})
        prefix = "/uwb/%s/n%d/" % (mode, n)
        log = (lambda topic, t, msg, o=offset_us, p=prefix: ctx.log(p + topic, o + t, msg)) \
            if ctx.report is not None else None
        m = measure(mode, n, config, ctx.random, log=log,
                    on_progress=lambda sim_s, o=offset_us: progress.update_to(o * 1e-6 + sim_s))
        speed[mode][str(n)] = m.pop("sim_seconds_per_wall_second")
        m.pop("sim_seconds_per_cpu_second")
        results[mode][str(n)] = m
        offset_us += case_duration_us(mode, n, config)
    progress.close()
    ctx.timing(sim_seconds_per_wall_second=speed)
    metrics = {"results": results,
               "per_pair_hz": {mode: {str(n): results[mode][str(n)]["per_pair_hz"] for n in config["n_nodes"]}
                               for mode in config["modes"]},
               "success": all(r["samples"] > 0 and abs(r["error_mean_m"]) <= MAX_MEAN_ERROR_M
                              for by_n in results.values() for r in by_n.values())}
    if ctx.report is not None:
        _plots(ctx.report, config, results)
    return metrics


PAPER_ERROR_MEAN_M = 0.0085569         # pocket III-A: range error N(0.0085569 m, 0.061295 m^2)
PAPER_ERROR_STD_M = math.sqrt(0.061295)


def _or_nan(value):
    """A figure to plot: ``value``, or NaN (no point) for None."""
    return math.nan if value is None else value


def _plots(report, config, results):
    fig, ax = figure(1, 2, title="uwb-ranging: token ring vs broadcast, N nodes in a %g m x %g m area"
                     % (config["area_m"], config["area_m"]), size_in=(11.5, 4.4))
    ns = config["n_nodes"]
    for k, mode in enumerate(config["modes"]):
        ax[0].plot(ns, [results[mode][str(n)]["per_pair_hz"] for n in ns], "o-", color="C%d" % k, label=mode)
        dodge = 0.12 * (k - (len(config["modes"]) - 1) / 2.0)        # side by side, not on top of each other
        # a case without range samples (or with one: no std) has no point (or no bar), not an error of 0 m
        ax[1].errorbar([n + dodge for n in ns], [_or_nan(results[mode][str(n)]["error_mean_m"]) for n in ns],
                       yerr=[_or_nan(results[mode][str(n)]["error_std_m"]) for n in ns], fmt="o-", capsize=3,
                       color="C%d" % k, label="%s: mean +- std" % mode)
    ax[0].axhline(20.0, color="k", ls="--", lw=0.8, label="20 Hz target")
    ax[0].set_yscale("log")
    label(ax[0], "per-pair update rate", "nodes N", "range samples per pair (Hz)")
    ax[1].axhline(PAPER_ERROR_MEAN_M, color="k", ls=":", lw=0.8, label="paper's mean error (pocket III-A)")
    ax[1].axhspan(PAPER_ERROR_MEAN_M - PAPER_ERROR_STD_M, PAPER_ERROR_MEAN_M + PAPER_ERROR_STD_M, color="0.5",
                  alpha=0.12, label="paper's mean +- std")
    label(ax[1], "range error (measured - true)", "nodes N", "range error (m)")
    for a in ax:
        a.set_xticks(ns)
    report.save_figure(fig, "uwb_rate_and_error_vs_n")
