"""Scenario `fil-leveler`: the thesis's leveling robot in the loop (Cook thesis 4.3, 7.1.1).

The real firmware (firmware/arduino ``leveler`` build: ATmega32U4, AltIMU-10 v4, Dagu Rover 5 profile,
9600-baud XBee-class link) runs in simavr (:mod:`harness.sim.fil_leveler_world`) and drives a simulated
Rover 5 on a deformable mound: the bridge turns its PWM into track speeds and the tracks into encoder
edges, and sets the AltIMU's registers from the robot's attitude on the terrain. The firmware estimates
its tilt (complementary filter) and streams LEVEL_STATE at 20 Hz. On the host runtime (a Node,
:class:`boards.arduino.leveler_app.AvrLeveler`) the hill-sensing behaviour (thesis Alg. 6,
:mod:`onboard.leveling.hill_sensing`) takes the firmware's pitch estimate and commands the wheels over
the same link. The tracks cut the crests they drive over (the stand-in model of the world module) and
the mound's rms height falls.

Optional link dropout: the host's commands stop reaching the board for a while; the firmware's 250 ms
failsafe stops the motors (counted in its status) and the behaviour resumes afterwards.
"""
import math
import time

from boards.arduino import board as AVR
from boards.arduino import protocol as P
from boards.arduino.leveler_app import DEFAULTS as HOST_DEFAULTS, SETTING_RANGES as HOST_RANGES, AvrLeveler
from harness.config import ANY_NUMBER, POSITIVE, RATE_HZ, mounted
from harness.sim.avr_bridge import LINK_DROPOUT_RANGES, DroppableMotors, ensure_built, open_link
from harness.sim.fil_leveler_world import (LEVELER_PLANT_DEFAULTS, LEVELER_PLANT_RANGES, LEVELER_RANGES,
                                           TERRAIN_DEFAULTS, TERRAIN_RANGES, LevelerBridge, LevelerPlant, MoundTerrain,
                                           leveler_size_report, rover5_vehicle)
from harness.sim.vehicles.diffdrive import DiffDriveRobot
from onboard.core.settings import pair
from onboard.core.units import s_to_us
from onboard.estimators.particle_filter_numpy import NumpyDraws
from onboard.leveling.hill_sensing import DEFAULTS as HILL_DEFAULTS, SETTING_RANGES as HILL_RANGES
from onboard.runtime.mcap_log import code_version

DESCRIPTION = "the thesis's 32U4 leveler firmware (AltIMU-10 v4, 9600-baud LEVEL_STATE) in simavr levels a mound"

DEFAULTS = {
    "max_duration_s": 120.0,              # simulated s
    "record_hz": 2,                       # roughness samples per simulated second
    "start_ne_m": [0.25, 0.25],           # the robot's start on the terrain (north_m, east_m), facing the mound
    "start_yaw_deg": 45.0,
    "terrain": dict(TERRAIN_DEFAULTS),    # the mound and the tracks' action (harness.sim.fil_leveler_world)
    "plant": dict(LEVELER_PLANT_DEFAULTS),
    # hill-sensing (Alg. 6) settings; epsilon 0.05 rad (2.9 deg; the thesis gives none): the mound's flanks
    # are at most 8.7 deg and the chassis averages the slope over its 0.25 m
    "hill": dict(HILL_DEFAULTS, pitch_threshold_rad=0.05),
    "host": dict(HOST_DEFAULTS),          # the host app (rate, LEVEL_STATE timeout, Rover 5 geometry)
    "link_dropout": {"start_s": None, "duration_s": 0.0},   # host commands lost from start_s (null: never), s
}

# a run of a few simulated seconds (the identical-seed test, `run --reduced`)
REDUCED = {"max_duration_s": 8.0}

SETTING_RANGES = {**{"max_duration_s": POSITIVE, "record_hz": RATE_HZ, "start_ne_m": pair(ANY_NUMBER),
                     "start_yaw_deg": ANY_NUMBER},
                  **LINK_DROPOUT_RANGES,
                  **mounted(DEFAULTS, ("terrain", TERRAIN_RANGES), ("plant", LEVELER_PLANT_RANGES),
                            ("hill", HILL_RANGES), ("host", HOST_RANGES)),
                  **LEVELER_RANGES}     # terrain.erosion_period_s at least one plant physics step


def run(config, ctx):
    ensure_built()
    wall_start = time.perf_counter()
    terrain = MoundTerrain(config["terrain"])
    before = terrain.height_m.copy()
    first = terrain.stats()
    robot = DiffDriveRobot(rover5_vehicle(config["start_ne_m"], config["start_yaw_deg"],
                                          config["plant"]["motor_no_load_radps"]))
    bridge = LevelerBridge()
    serial = None
    pitch_err = []
    state_times = []
    try:
        serial, link = open_link(bridge, log=ctx.log)
        plant = LevelerPlant(bridge, robot, terrain, ctx.random.stream("leveler_imu"), config["plant"])
        motors = DroppableMotors(link)
        app = AvrLeveler(link, NumpyDraws(ctx.random.stream("hill_sensing")), config["host"], config["hill"],
                         log=ctx.log, motors=motors)
        if ctx.report is not None:          # the host app at its boundary, for `harness replay`
            app.record(ctx.log, code_version(), 0)
        on_state = link.on_level_state

        def on_level_state(msg, now_us):
            pitch_err.append(msg.pitch_mrad * 1e-3 - plant.pitch_rad)
            state_times.append(msg.t_us)
            on_state(msg, now_us)
        link.on_level_state = on_level_state

        end_us = s_to_us(config["max_duration_s"])
        drop = config["link_dropout"]
        drop_from = s_to_us(drop["start_s"]) if drop["start_s"] is not None and drop["duration_s"] > 0 else None
        drop_to = drop_from + s_to_us(drop["duration_s"]) if drop_from is not None else None
        record_us = 1000000 // config["record_hz"]
        trace = {"t_s": [0.0], "rms_m": [first["rms_m"]], "max_gradient": [first["max_gradient"]]}
        bar = ctx.progress(config["max_duration_s"], "fil-leveler")
        next_app = 0
        next_record = record_us
        t = 0
        while t < end_us:
            t += plant.dt_us
            if drop_from is not None:
                motors.muted = drop_from <= t < drop_to
            st = plant.step(t, serial.tx_bytes)
            if st is not None:
                serial.sync_rx(st.tx_bytes)
            if t >= next_app:
                next_app = app.step(t)
            if t >= next_record:
                next_record += record_us
                s = terrain.stats()
                trace["t_s"].append(t * 1e-6)
                trace["rms_m"].append(s["rms_m"])
                trace["max_gradient"].append(s["max_gradient"])
                ctx.log("/leveler/state", t, {"rms_m": s["rms_m"], "pitch_rad": plant.pitch_rad,
                                              "north_m": robot.north_m, "east_m": robot.east_m,
                                              "mode": app.hill.behaviour.mode_name})
                bar.update_to(t * 1e-6)
        # let a STATUS come back over the radio
        link.request_status(t)
        settle_end = t + 100000
        while t < settle_end:
            t += plant.dt_us
            st = plant.step(t, serial.tx_bytes)
            if st is not None:
                serial.sync_rx(st.tx_bytes)
            link.poll(t)
        wall_s = time.perf_counter() - wall_start
        ctx.timing(wall_time_s=wall_s, sim_to_wall=t * 1e-6 / wall_s if wall_s > 0 else None)
        fw = dict(link.status.fields) if link.status is not None else {}
        bridge_stats = bridge.stats()
        host = app.report()
    finally:
        if serial is not None:
            serial.close()
        bridge.close()

    last = terrain.stats()
    metrics = _metrics(config, first, last, trace, link, fw, bridge_stats, host, pitch_err, motors, terrain,
                       state_times)
    if ctx.report is not None:
        _plots(ctx.report, trace, before, terrain.height_m, terrain.cell_m)
    return metrics


def _metrics(config, first, last, trace, link, fw, bridge_stats, host, pitch_err, motors, terrain, state_times):
    size = leveler_size_report()
    states = link.level_state_frames
    imu_id = link.imu_id.fields if link.imu_id is not None else {}
    handshake_ok = imu_id.get("ok_mask") == AVR.ALTIMU_ALL_OK and all(
        imu_id.get(dev + "_whoami") == AVR.ALTIMU[dev][1] for dev in AVR.ALTIMU_DEVICES)
    span_us = state_times[-1] - state_times[0] if len(state_times) > 1 else 0
    rate_hz = (len(state_times) - 1) * 1e6 / span_us if span_us > 0 else None
    capacity, needed, max_hz = P.link_budget(AVR.LEVELER_LINK_BAUD, P.BODY_LEN[P.MSG_LEVEL_STATE], P.LEVEL_STATE_HZ)
    counters = link.counters()
    tx_dropped = link.level_state.tx_dropped if link.level_state is not None else None
    overrun = bool(tx_dropped or counters["rx_seq_gaps"] or link.decoder.errors() or bridge_stats["tx_dropped"])
    rms_drop = 1.0 - last["rms_m"] / first["rms_m"] if first["rms_m"] > 0 else 0.0
    n = len(pitch_err)
    hill = host["node"]["hill"]
    m = {
        "success": bool(handshake_ok and not overrun and last["rms_m"] < first["rms_m"]
                        and abs(last["volume_error_m3"]) < 1e-9),
        "rms_initial_m": first["rms_m"], "rms_final_m": last["rms_m"], "rms_reduction": rms_drop,
        "max_gradient_initial": first["max_gradient"], "max_gradient_final": last["max_gradient"],
        "volume_error_m3": last["volume_error_m3"],
        "tracks_cut_m3": terrain.cut_m3, "eroded_m3": terrain.eroded_m3,
        "roughness_over_time": {"t_s": trace["t_s"], "rms_m": trace["rms_m"]},
        "imu_handshake": dict(imu_id, ok=handshake_ok),
        "level_state": {"frames": states, "rate_hz": rate_hz, "budget_hz": P.LEVEL_STATE_HZ,
                        "max_rate_hz_that_fits": max_hz, "link_bytes_per_s": capacity,
                        "bytes_per_s_needed": needed, "tx_dropped": tx_dropped, "overrun": overrun,
                        "phase_echoed": link.level_state.phase if link.level_state is not None else None},
        "pitch_error_rms_rad": math.sqrt(sum(e * e for e in pitch_err) / n) if n else None,
        "behaviour": hill,
        "link": counters,
        "commands_dropped_by_dropout": motors.dropped,
        "firmware": fw,
        "firmware_flash_bytes": size["flash_bytes"], "firmware_flash_max_bytes": size["flash_max_bytes"],
        "firmware_ram_bytes": size["ram_bytes"], "firmware_ram_max_bytes": size["ram_max_bytes"],
        "bridge": {k: bridge_stats[k] for k in ("tx_bytes", "rx_bytes", "tx_dropped", "resets",
                                                "lsm303d_burst_reads", "l3gd20h_burst_reads", "lps25h_burst_reads")},
    }
    return m


def _plots(report, trace, before, after, cell_m):
    from harness.report.plots import figure, label
    fig, ax = figure(1, 1, title="fil-leveler: mound roughness (leveler firmware in simavr)")
    a = ax
    a.plot(trace["t_s"], [v * 1000.0 for v in trace["rms_m"]], color="C0", label="rms height")
    label(a, "rms height about the mean", "simulated time (s)", "rms (mm)")
    report.save_figure(fig, "roughness")
    fig, ax = figure(1, 2, title="terrain heights before and after (mm)")
    lo, hi = 1000.0 * min(before.min(), after.min()), 1000.0 * max(before.max(), after.max())
    extent = (0, before.shape[1] * cell_m, 0, before.shape[0] * cell_m)
    for a, grid, name in ((ax[0], before, "before"), (ax[1], after, "after")):
        im = a.imshow(grid * 1000.0, origin="lower", vmin=lo, vmax=hi, cmap="terrain", extent=extent)
        cb = a.figure.colorbar(im, ax=a)
        cb.set_label("height (mm)")
        label(a, name, "east (m)", "north (m)", legend=False)
    report.save_figure(fig, "terrain")
