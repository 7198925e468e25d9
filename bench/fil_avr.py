"""AVR firmware-in-the-loop benchmark, both boards measured side by side.

- flash / RAM of the robot_link firmware per board (avr-size, as `make firmware` prints), and of the
  32U4 leveler build (AltIMU-10 v4, Rover 5 profile, 9600-baud LEVEL_STATE; the fil-leveler scenario);
- simulated-to-wall-clock speed of the FIL loop at three levels:
    free     simavr alone: firmware idle, 100 ms windows, no host traffic
    lockstep 1 ms (and 5 ms) lockstep windows with the host driver on the pty, simulated
             motors, encoders and IMU, wheel commands at 50 Hz (the FIL test rig)
    mission  the fil-avr scenario: runtime (planar EKF + follower) + the above
  (this machine is shared and noisy: compare ratios within one run);
- command round trip in simulated time: PING -> PONG, wheel command -> telemetry echo,
  and DUTY command sent -> PWM compare register changed (50 us windows);
- int8 policy inference time on the AVR: needs the policy lane's C kernel
  (firmware/policy_avr); reported as unavailable until it exists.
Writes bench/results/fil_avr.json.
"""
import argparse
import copy
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from boards.arduino import board as C  # noqa: E402
from harness.sim.avr_bridge import AvrBridge, FilRig, LockstepSerial, ensure_built, sim_signer, size_report  # noqa: E402
from harness.sim.fil_leveler_world import leveler_size_report  # noqa: E402
from harness.scenarios import load  # noqa: E402
from harness.scenarios.context import RunContext  # noqa: E402
from onboard.core.samples import WheelCmd  # noqa: E402
from results_file import write_results  # noqa: E402 (bench/ is the script's folder)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARDS = ["uno", "leonardo"]


def free_speed(board, sim_s=4.0):
    with AvrBridge(board) as bridge:
        t0 = time.perf_counter()
        t = 0
        while t < sim_s * 1e6:
            t += 100000
            bridge.run(t, -1, 0, 0)
        wall = time.perf_counter() - t0
        inside = bridge.stats()["wall_run_s"]
    return {"sim_s": sim_s, "wall_s": wall, "sim_to_wall": sim_s / wall, "simavr_only_sim_to_wall": sim_s / inside}


def lockstep_speed(board, sim_s=3.0, window_us=1000):
    with FilRig(board, plant={"bridge_window_us": window_us}) as rig:
        rig.keep_messages = False
        t0 = time.perf_counter()
        rig.run_for(int(sim_s * 1e6), lambda r: r.t_us % 20000 == 0 and r.link.command(WheelCmd(r.t_us, 8.0, 6.0)))
        wall = time.perf_counter() - t0
        steps = rig.bridge.steps
        lat = rig.link.cmd_latency_stats
    return {"sim_s": sim_s, "wall_s": wall, "sim_to_wall": sim_s / wall,
            "wall_us_per_window": wall / steps * 1e6, "window_us": window_us,
            "cmd_to_telemetry_us_mean": lat["sum_us"] / lat["n"], "cmd_to_telemetry_us_max": lat["max_us"]}


def mission_speed(board):
    mod = load("fil-avr")
    cfg = copy.deepcopy(mod.DEFAULTS)
    cfg["board"] = board
    ctx = RunContext(1)
    m = mod.run(cfg, ctx)
    return {"success": m["success"], "sim_s": m["sim_time_s"], "wall_s": ctx.timings["wall_time_s"],
            "sim_to_wall": ctx.timings["sim_to_wall"], "path_error_rms_m": m["path_error_rms_m"]}


def round_trips(board):
    """Simulated-time latencies on the link (115200 baud: 86.8 us per byte)."""
    out = {}
    with FilRig(board, plant={"imu_model": "truth"}) as rig:
        rig.run_for(50000)
        rtts = []
        for k in range(20):
            rig.link.pong = None
            rig.link.ping(rig.t_us)
            rig.run_until(lambda r: r.link.pong is not None, 50000)
            rtts.append(rig.link.ping_rtt_us)
            rig.run_for(7000 + 1000 * (k % 5))
        out["ping_rtt_us_1ms_steps"] = {"mean": sum(rtts) / len(rtts), "min": min(rtts), "max": max(rtts)}
    # finer: 50 us windows, DUTY command -> Timer1 compare register changes
    with AvrBridge(board) as bridge:
        ser = LockstepSerial(bridge.pty_path).open()
        from boards.arduino.driver import AvrRobotLink
        link = AvrRobotLink(ser, signer=sim_signer())         # the firmware takes signed commands only
        t = 0
        while t < 50000:
            t += 1000
            st = bridge.run(t, ser.tx_bytes, 0, 0)
            ser.sync_rx(st.tx_bytes)
            link.poll(t)
        delays, rtts = [], []
        for k in range(20):
            duty = 100 + 10 * k
            sent = t
            link.duty(duty, duty, sent)
            while True:
                t += 50
                st = bridge.run(t, ser.tx_bytes, 0, 0)
                ser.sync_rx(st.tx_bytes)
                link.poll(t)
                if st.ocr_left == duty * 2 or t - sent > 20000:
                    break
            delays.append(t - sent)
            link.pong = None
            sent = t
            link.ping(sent)
            while link.pong is None and t - sent < 20000:
                t += 50
                st = bridge.run(t, ser.tx_bytes, 0, 0)
                ser.sync_rx(st.tx_bytes)
                link.poll(t)
            rtts.append(t - sent)
            t += 3000 + 700 * (k % 7)
            st = bridge.run(t, ser.tx_bytes, 0, 0)
            ser.sync_rx(st.tx_bytes)
            link.poll(t)
        ser.close()
    out["duty_cmd_to_pwm_us_50us_steps"] = {"mean": sum(delays) / len(delays), "min": min(delays),
                                             "max": max(delays)}
    out["ping_rtt_us_50us_steps"] = {"mean": sum(rtts) / len(rtts), "min": min(rtts), "max": max(rtts)}
    out["wire_time_us"] = {"duty_frame_10B": 10 * 10e6 / C.LINK_BAUD, "ping_10B_plus_pong_14B": 24 * 10e6 / C.LINK_BAUD}
    return out


def policy_on_avr():
    path = os.path.join(ROOT, "firmware", "policy_avr")
    if not os.path.isdir(path):
        return {"available": False, "note": "firmware/policy_avr (policy lane's int8 C kernel) not present yet"}
    return {"available": False, "note": "firmware/policy_avr exists; timing it in simavr is not wired up here yet"}


def main():
    ensure_built()
    res = {"boards": {}, "policy_int8_on_avr": policy_on_avr()}
    for b in BOARDS:
        r = {"mcu": C.BOARDS[b]["mcu"], "size": size_report(b)}
        r["free"] = free_speed(b)
        r["lockstep"] = lockstep_speed(b)
        r["lockstep_5ms"] = lockstep_speed(b, window_us=5000)
        r["mission"] = mission_speed(b)
        r["round_trip"] = round_trips(b)
        res["boards"][b] = r
    res["leveler_build"] = {"mcu": C.LEVELER_MCU, "size": leveler_size_report()}

    print("AVR firmware-in-the-loop (robot_link), both boards in one run")
    print("%-9s %-11s %14s %12s" % ("board", "mcu", "flash [B]", "RAM [B]"))
    for b, r in res["boards"].items():
        s = r["size"]
        print("%-9s %-11s %6d / %5d %5d / %4d" % (b, r["mcu"], s["flash_bytes"], s["flash_max_bytes"],
                                                 s["ram_bytes"], s["ram_max_bytes"]))
    s = res["leveler_build"]["size"]
    print("%-9s %-11s %6d / %5d %5d / %4d   (leonardo + AltIMU-10 v4 + Rover 5 + LEVEL_STATE)" % (
        "leveler", s["mcu"], s["flash_bytes"], s["flash_max_bytes"], s["ram_bytes"], s["ram_max_bytes"]))
    print()
    print("simulated / wall-clock speed")
    print("%-9s %10s %10s %10s %10s %10s %15s" % ("board", "simavr", "free", "lock 1ms", "lock 5ms",
                                                 "mission", "lock1ms/free"))
    for b, r in res["boards"].items():
        print("%-9s %9.1fx %9.1fx %9.1fx %9.1fx %9.1fx %15.2f" % (
            b, r["free"]["simavr_only_sim_to_wall"], r["free"]["sim_to_wall"], r["lockstep"]["sim_to_wall"],
            r["lockstep_5ms"]["sim_to_wall"], r["mission"]["sim_to_wall"],
            r["lockstep"]["sim_to_wall"] / r["free"]["sim_to_wall"]))
    print()
    print("round trips in simulated time [us] (mean / min / max)")
    for b, r in res["boards"].items():
        rt = r["round_trip"]
        for name in ("ping_rtt_us_50us_steps", "duty_cmd_to_pwm_us_50us_steps", "ping_rtt_us_1ms_steps"):
            v = rt[name]
            print("%-9s %-32s %8.0f %8.0f %8.0f" % (b, name, v["mean"], v["min"], v["max"]))
        print("%-9s %-32s %8.0f %8s %8.0f" % (b, "wheel cmd -> telemetry echo", r["lockstep"]["cmd_to_telemetry_us_mean"],
                                              "", r["lockstep"]["cmd_to_telemetry_us_max"]))
    u, l = res["boards"]["uno"], res["boards"]["leonardo"]
    lev = res["leveler_build"]["size"]
    res["ratios"] = {"leonardo_over_uno_flash": l["size"]["flash_bytes"] / u["size"]["flash_bytes"],
                     "leonardo_over_uno_lockstep_speed": l["lockstep"]["sim_to_wall"] / u["lockstep"]["sim_to_wall"],
                     "leveler_over_leonardo_flash": lev["flash_bytes"] / l["size"]["flash_bytes"],
                     "leveler_over_leonardo_ram": lev["ram_bytes"] / l["size"]["ram_bytes"]}
    print()
    print("ratios:", ", ".join("%s %.2f" % kv for kv in res["ratios"].items()))
    print("int8 policy on the AVR:", res["policy_int8_on_avr"]["note"])
    write_results("fil_avr", res)


if __name__ == "__main__":
    # no options: the parser gives --help (the docstring) and refuses unknown arguments before anything runs
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
