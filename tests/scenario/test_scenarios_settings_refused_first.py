"""Settings that broke a run part-way (after earlier cases ran and the report folder was made), or that were
taken but silently meant something else, are refused before the run with one line (exit 2); the helpers that
turn a run's figures into metrics keep metrics.json finite; RunContext.map closes its progress bar when a job
raises."""
import math

import pytest
from tqdm import tqdm

from harness import scenarios
from harness.cli import main
from harness.config import ConfigError
from harness.scenarios.context import RunContext


def _refused(tmp_path, capsys, scenario, *items):
    out = tmp_path / "run"
    argv = ["run", scenario, "--quiet", "--out", str(out)]
    for item in items:
        argv += ["--set", item]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: setting") and err.count("\n") == 1, err
    assert not out.exists()             # refused before the report folder was made
    return err


# ---------------------------------------------------------------- uwb-ranging: node ids of each mode
def test_uwb_token_ring_of_more_than_32_nodes_is_refused_before_the_broadcast_cases_run(tmp_path, capsys):
    err = _refused(tmp_path, capsys, "uwb-ranging", "n_nodes=[2, 33]", 'modes=["broadcast", "token_ring"]',
                   "duration_s=0.01", "warmup_s=0")
    assert "config.n_nodes must be at most 32 in mode token_ring" in err and "got 33" in err


def test_uwb_broadcast_node_counts_stop_at_255():
    with pytest.raises(ConfigError, match="at most 255 in mode broadcast"):
        scenarios.prepare("uwb-ranging", {"modes": ["broadcast"], "n_nodes": [256]})
    scenarios.prepare("uwb-ranging", {"modes": ["broadcast"], "n_nodes": [255, 33]})
    scenarios.prepare("uwb-ranging", {"modes": ["token_ring"], "n_nodes": [32]})


# ---------------------------------------------------------------- vesc-waypoints: the injected faults
@pytest.mark.parametrize("code", [0, 256, 300])
def test_vesc_fault_code_outside_a_reply_byte_or_none_is_refused(code):
    """300 went out clamped to 255 in the GetValues reply; 0 (FAULT_CODE_NONE) injected no fault at all."""
    with pytest.raises(ConfigError, match="config.faults.fault_code must be an integer in 1..255"):
        scenarios.prepare("vesc-waypoints", {"faults": {"vesc_fault_s": 0.2, "fault_code": code}})


def test_vesc_replug_before_the_unplug_is_refused(tmp_path, capsys):
    """The replug did nothing (the port was still plugged) and resumed_after_replug_s was timed from it."""
    err = _refused(tmp_path, capsys, "vesc-waypoints", "faults.unplug_s=3", "faults.replug_s=1")
    assert "config.faults.replug_s must be < 0 (never) or at least config.faults.unplug_s (3.0), got 1.0" in err


def test_vesc_fault_settings_that_work_are_taken():
    scenarios.prepare("vesc-waypoints", {"faults": {"unplug_s": 3.0, "replug_s": 3.0, "fault_code": 255}})
    scenarios.prepare("vesc-waypoints", {"faults": {"unplug_s": -1.0, "replug_s": 1.0}})
    scenarios.prepare("vesc-waypoints", {"faults": {"unplug_s": 3.0, "replug_s": -1.0}})


# ---------------------------------------------------------------- mp-board
@pytest.mark.parametrize("duration_s", [0.001, 0.0099, 1e5])
def test_mp_board_duration_outside_one_to_max_ticks_is_refused(duration_s):
    """0.001 s made no tick (a deploy, nothing compared, success); 1e5 s built 1e7 ticks of lines first."""
    with pytest.raises(ConfigError, match="config.duration_s must last 1..1000000 IMU ticks"):
        scenarios.prepare("mp-board", {"duration_s": duration_s})
    scenarios.prepare("mp-board", {"duration_s": 0.01})


def test_mp_board_compare_counts_a_nan_on_one_side_as_a_difference():
    from harness.scenarios.mp_board import compare
    from onboard.runtime.link_runtime import STATE_KEYS
    ref = [(10000, {k: 1.0 for k in STATE_KEYS})]
    board = [(10000, dict(ref[0][1], north_m=math.nan))]
    worst, where = compare(board, ref)
    assert worst == math.inf and where.startswith("north_m at 10000 us")
    both = [(10000, dict(ref[0][1], north_m=math.nan))]
    assert compare(board, both) == (0.0, None)          # the same NaN on both sides: the board did what CPython did
    assert compare([(10000, dict(ref[0][1], east_m=math.inf))], [(10000, dict(ref[0][1], east_m=-math.inf))])[0] \
        == math.inf


def test_mp_board_metrics_of_an_infinite_difference_are_finite_json():
    """Differing tick times gave max_abs_diff inf: the metrics check stopped the run as a broken scenario."""
    from harness.scenarios.mp_board import comparison_metrics
    m = comparison_metrics(math.inf, "tick time differs at 10000 vs 20000", 1e-9)
    assert m == {"success": False, "max_abs_diff": None, "worst_at": "tick time differs at 10000 vs 20000"}
    scenarios.check_metrics("mp-board", m)
    assert comparison_metrics(0.0, None, 1e-9) == {"success": True, "max_abs_diff": 0.0, "worst_at": None}


# ---------------------------------------------------------------- swarm
def test_swarm_repeated_drone_count_is_refused(tmp_path, capsys):
    """[2, 2] flew the same flights twice and counted them twice under the key "2"."""
    err = _refused(tmp_path, capsys, "swarm-fixed", "drone_counts=[2, 2]")
    assert "config.drone_counts must be a list of integers >= 1, each at most once" in err


@pytest.mark.parametrize("name", ["swarm-fixed", "swarm-random"])
def test_swarm_cflib_token_ring_of_more_than_32_drones_is_refused(name):
    """33 drones on the cflib link's token ring: the UWB network refused node id 32 when the flight set up, after
    the flights before it flew."""
    with pytest.raises(ConfigError, match="setting config.drone_counts: .* at most 32 in mode token_ring"):
        scenarios.prepare(name, {"drone_counts": [2, 33], "episode": {"arena_m": 40.0}})
    with pytest.raises(ConfigError, match="setting config.large_swarm.drones: .* at most 255 in mode broadcast"):
        scenarios.prepare(name, {"large_swarm": {"drones": 256, "arena_m": 400.0},
                                 "episode": {"goal_separation_m": 0.0}})


def test_swarm_direct_link_has_no_uwb_node_bound():
    scenarios.prepare("swarm-fixed", {"drone_counts": [33], "episode": {"link": "direct", "arena_m": 40.0}})


# ---------------------------------------------------------------- RunContext.map
def _fails_on_two(job):
    if job == 2:
        raise RuntimeError("job 2 failed")
    return job * 10


@pytest.mark.parametrize("first", [None, _fails_on_two])
def test_run_context_map_closes_its_bar_when_a_job_raises(first):
    ctx = RunContext(1, show_progress=True)
    desc = "map-closes-its-bar-%s" % (first is not None)
    with pytest.raises(RuntimeError, match="job 2 failed") as raised:
        ctx.map(_fails_on_two, [2, 1] if first else [1, 2, 3], workers=1, desc=desc, first=first)
    # while the exception is still held (the CLI prints its message then), no bar of the map is open
    open_bars = [bar for bar in list(getattr(tqdm, "_instances", ())) if bar.desc == desc and not bar.disable]
    assert raised.value is not None and not open_bars
    assert ctx.map(_fails_on_two, [1, 3], workers=1, desc=desc) == [10, 30]


# ---------------------------------------------------------------- the runtime's scheduler rates
def test_grading_imu_rate_the_scheduler_cannot_run_is_refused_before_the_report(tmp_path, capsys):
    """imu.rate_hz 40 with the runtime's 50 Hz control: the runtime refused it when the episode was built."""
    err = _refused(tmp_path, capsys, "grading", "imu.rate_hz=40", "max_legs=1")
    assert "config.imu.rate_hz, config.aiding_rate_hz, config.motors, config.vesc.telemetry_rate_hz must be rates " \
           "one scheduler can run" in err and "got 40, 10, 'direct', 50" in err


def test_grading_vesc_telemetry_rate_counts_only_with_the_vesc_motors():
    with pytest.raises(ConfigError, match="rates one scheduler can run"):
        scenarios.prepare("grading", {"motors": "vesc", "vesc": {"telemetry_rate_hz": 40}})
    scenarios.prepare("grading", {"motors": "direct", "vesc": {"telemetry_rate_hz": 40}})
    scenarios.prepare("grading", {"motors": "vesc", "imu": {"rate_hz": 200}, "aiding_rate_hz": 20})
    from harness.scenarios.grading.episode import DEFAULTS, invalid_setting
    import copy
    bad = copy.deepcopy(DEFAULTS)
    bad["imu"]["rate_hz"] = 40
    assert "must be rates one scheduler can run" in invalid_setting(bad)      # the sweep's check too


def test_fil_avr_aiding_rate_the_scheduler_cannot_run_is_refused():
    """aiding 40 Hz beside the firmware's 100 Hz telemetry: refused after the firmware was built and simavr ran."""
    with pytest.raises(ConfigError, match="config.aiding.rate_hz, config.runtime.control_rate_hz must be rates one "
                                          "scheduler can run with the IMU group at the firmware's telemetry rate "
                                          r"\(100 Hz\).*got 40, 50"):
        scenarios.prepare("fil-avr", {"aiding": {"rate_hz": 40}})
    scenarios.prepare("fil-avr", {"aiding": {"rate_hz": 20}, "runtime": {"control_rate_hz": 25}})


# ---------------------------------------------------------------- boat-hil-lag: the heading plan
@pytest.mark.parametrize("plan", [[[6.0, "north", 1.5]], [[True, 0.0, 1.5]], [[6.0, 0.0, None]], [[4e-7, 0.0, 1.5]],
                                  [[6.0, 0.0]]])
def test_boat_hil_lag_plan_the_app_refuses_is_refused_first(plan):
    """A heading or speed that is no number passed the rule and the boat app raised a traceback mid-run."""
    with pytest.raises(ConfigError, match=r"config.plan must be a non-empty list of \[duration_s >= 1e-06, "
                                          r"heading_deg, speed_mps\] numbers"):
        scenarios.prepare("boat-hil-lag", {"plan": plan})


def test_boat_hil_lag_plan_the_app_takes_is_taken():
    from boards.wamv.app import _checked_plan
    plan = [[6e-7, -30, 0], [10, 60.5, 1.5]]
    scenarios.prepare("boat-hil-lag", {"plan": plan})
    assert len(_checked_plan(plan)) == 2


# ---------------------------------------------------------------- boat studies: list values that key the results
@pytest.mark.parametrize("scenario, over, key", [
    ("boat-model-fit", {"cases": ["paper", "paper"]}, "cases"),
    ("robotx-course", {"lidars": ["vlp16", "vlp16"]}, "lidars"),
    ("robotx-course", {"layouts": ["compact", "wide", "compact"]}, "layouts"),
    ("boat-sim-gap", {"arbiters": ["damn", "damn"]}, "arbiters"),
    ("boat-sim-gap", {"lidars": ["planar", "planar"]}, "lidars"),
])
def test_boat_repeated_list_value_is_refused(scenario, over, key):
    """A repeat fitted the case again and overwrote the first fit (model-fit), or ran the variant's seeds again
    and counted each run twice in its table (robotx-course, boat-sim-gap)."""
    with pytest.raises(ConfigError, match="setting config.%s must be a non-empty list of distinct values" % key):
        scenarios.prepare(scenario, over)


@pytest.mark.parametrize("key, value, needle", [
    ("seeds", 3, "robotx.seeds: set by boat-sim-gap's own setting seeds instead"),
    ("lidars", ["planar"], "robotx.lidars: set by boat-sim-gap's own setting lidars instead"),
    ("layouts", ["compact"], "robotx.layouts: set by boat-sim-gap's own setting layout instead"),
    ("arbiter", "potential_field", "robotx.arbiter: set by boat-sim-gap's own setting arbiters instead"),
    ("min_completion", 0.5, "robotx.min_completion: not used by boat-sim-gap"),
])
def test_boat_sim_gap_robotx_setting_it_overrides_is_refused(key, value, needle):
    """robotx.seeds = 3 was taken and the run flew the scenario's own seeds (10): the setting did nothing."""
    with pytest.raises(ConfigError, match=needle):
        scenarios.prepare("boat-sim-gap", {"robotx": {key: value}})
    scenarios.prepare("boat-sim-gap", {"robotx": {"time_limit_s": 300.0}})


@pytest.mark.parametrize("duration_s, settle_s, rate_hz", [(6.05, 6.01, 10), (6.0, 5.99, 10), (6.0, 5.5, 1)])
def test_boat_hil_lag_settle_window_shorter_than_a_control_period_is_refused(duration_s, settle_s, rate_hz):
    """duration 6.05 s, settle 6.01 s at 10 Hz: no heading sample after settle_s, and every case reported an
    rms heading error of 0.0 (a perfect track) and a monotonic error."""
    with pytest.raises(ConfigError, match="must be at least one control period apart"):
        scenarios.prepare("boat-hil-lag", {"duration_s": duration_s, "settle_s": settle_s,
                                           "control_rate_hz": rate_hz})
    scenarios.prepare("boat-hil-lag", {"duration_s": duration_s, "settle_s": duration_s - 1.0 / rate_hz,
                                       "control_rate_hz": rate_hz})


# ---------------------------------------------------------------- ins-eskf: the plotted estimate
def test_ins_eskf_record_indices_are_the_samples_the_records_scored():
    """t_s * 1e6 truncated put 13 of the 1201 records of a 120 s run (4.1 s: 4099999.99...) one IMU sample early in
    the trajectory plot's estimate (truth of the sample before minus the error of this one)."""
    import numpy as np
    from harness.scenarios.ins_eskf import record_indices
    from harness.sim.trajectory import dozer_legs, generate
    traj = generate(dozer_legs(120.0), 100)
    t_us = np.arange(int(traj.t_us[0]), int(traj.t_us[-1]) + 1, 100000)
    rec = {"t_s": np.asarray(t_us / 1e6, dtype=float)}
    assert (record_indices(rec, traj) == (t_us - int(traj.t_us[0])) // traj.dt_us).all()


# ---------------------------------------------------------------- seconds to whole microseconds and ticks
def test_mp_board_tick_count_rounds_the_duration_to_whole_microseconds_first():
    """0.29 s at 100 Hz made 28 ticks (int(0.29 * 100) is int(28.999999999999996))."""
    from harness.scenarios.mp_board import _Board, make_lines, tick_count
    from harness.sim.rng import RunRandom
    assert [tick_count(d, 100) for d in (0.29, 0.3, 0.5, 0.01, 0.0149, 4.1)] == [29, 30, 50, 1, 1, 410]
    random = RunRandom(1)
    _module, config = scenarios.prepare("mp-board", {"duration_s": 0.29})
    ticks = make_lines(config, random.stream("imu"), random.stream("aiding"), _Board(config["board"]))
    assert len(ticks) == 29


def test_uwb_case_times_are_the_settings_in_whole_microseconds():
    """int(4.1 * 1e6) is 4099999: each case measured 1 us less than duration_s, its rates divided by duration_s."""
    from harness.scenarios.uwb_ranging import case_duration_us
    _module, config = scenarios.prepare("uwb-ranging", {"duration_s": 4.1, "warmup_s": 0.57})
    assert case_duration_us("token_ring", 2, config) == 570000 + 4100000
