"""``python -m harness avr``: the robot_link AVR firmware in simavr with a simulated robot, on a pty.

The real firmware ELF (firmware/arduino, built with make when missing or stale) runs in ``avr_bridge``
(libsimavr) in 1 ms lockstep windows with a plant (:class:`harness.sim.avr_bridge.AvrPlant`): PWM duty
and direction drive the motors, wheel rotation becomes quadrature edges on the encoder pins, the IMU's
registers hold the robot's specific force and rates (+1 g on the chip's z at rest). ``--plant ground``:
the robot drives on flat ground; ``--plant blocks``: it stands on blocks, wheels free, chassis at rest.
Simulated time is paced to ``--speed`` x the host's monotonic clock (``--realtime`` = 1); when the host
cannot keep up it runs as fast as it can and the counters say how fast that was.

Prints the firmware UART's pty path on one line of stdout (flushed), serves until SIGINT/SIGTERM, then
prints its counters as one JSON line on stderr. Binds nothing but a pseudo-terminal. The wire protocol is
firmware/arduino/PROTOCOL.md; a client that opens the port after boot sends GET_HELLO to get the HELLO
again; its commands are signed with the simulator's test key (``firmware/arduino/build/sim_link.key``, key
id 1, PROTOCOL.md section 10). Output nobody reads is discarded once ``UNREAD_LIMIT_BYTES`` wait in the pty (a client opening the
port later reads current frames, not a stale backlog).
"""
import argparse
import json
import math
import signal
import sys
import time

BOARD_CHOICES = ("uno", "leonardo", "leveler")
PLANT_CHOICES = ("ground", "blocks")
MAX_SPEED = 100.0
UNREAD_LIMIT_BYTES = 2048               # pty backlog before unread output is discarded (< 4095, the pty's)
MAX_WINDOWS_PER_PASS = 50               # windows simulated between two looks at the stop flag / clock
IDLE_WAIT_MAX_S = 0.02

EXAMPLES = """examples:
  python -m harness avr                              # Uno firmware, robot on the ground, real time
  python -m harness avr --plant blocks               # on blocks: wheels turn freely, chassis at rest
  python -m harness avr --board leveler --speed 4    # the leveler build (AltIMU, 9600 baud), 4x real time
  python -m harness avr --board leonardo --realtime
  python -m harness avr >pty.txt &                   # in a script: the pty path is pty.txt's first line
  kill -INT $!                                       # SIGINT (Ctrl-C) or SIGTERM stops it

Open the printed path with any serial client (pyserial: serial.Serial(path, 115200); the leveler build
runs at 9600 baud). Frames, messages and rates: firmware/arduino/PROTOCOL.md. Send GET_HELLO (type 0x08,
empty body) to get the boot HELLO again; motor commands must repeat within 250 ms (failsafe). Commands
that move the robot are signed (PROTOCOL.md section 10): the simulated firmware is built with the test
key in firmware/arduino/build/sim_link.key (key id 1; a test key, not one for a robot).

On exit it prints its counters on stderr as one JSON line, e.g.
  {"board": "uno", "plant": "blocks", "sim_s": 12.5, "speed_achieved": 0.99, "rx_bytes": 410, ...}
Exit status: 0 after a clean stop, 2 on bad arguments, 1 when the simulation could not start or failed.
"""


class AvrCliError(ValueError):
    """Bad command-line input (one line, exit status 2)."""


def add_parser(sub):
    p = sub.add_parser("avr", help="serve the AVR robot_link firmware in simavr with a simulated robot on a pty",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
                       description="Run the real robot_link firmware (firmware/arduino) in simavr with a "
                                   "simulated robot (motors, quadrature encoders, IMU) behind a pseudo-terminal; "
                                   "prints its path on one line and serves until interrupted (Ctrl-C).")
    p.add_argument("--board", default="uno", metavar="|".join(BOARD_CHOICES),
                   help="firmware build: uno (ATmega328P), leonardo (ATmega32U4) or leveler (32U4, AltIMU-10 v4, "
                        "9600 baud, LEVEL_STATE) (default: uno)")
    pace = p.add_mutually_exclusive_group()
    pace.add_argument("--speed", default="1.0", metavar="S",
                      help="simulated seconds per wall-clock second, 0 < S <= %g (default: 1.0)" % MAX_SPEED)
    pace.add_argument("--realtime", action="store_true", help="the same as --speed 1")
    p.add_argument("--plant", default="ground", metavar="|".join(PLANT_CHOICES),
                   help="ground: the robot drives on flat ground; blocks: it stands on blocks, wheels free "
                        "(default: ground)")
    p.add_argument("--seed", default="1", metavar="N", help="seed of the IMU noise (default: 1)")
    p.set_defaults(func=cmd_avr)


def parse_args(args):
    """(board, plant, speed, seed) from the parsed arguments; AvrCliError on bad input."""
    if args.board not in BOARD_CHOICES:
        raise AvrCliError("--board %r: one of %s" % (args.board, ", ".join(BOARD_CHOICES)))
    if args.plant not in PLANT_CHOICES:
        raise AvrCliError("--plant %r: one of %s" % (args.plant, ", ".join(PLANT_CHOICES)))
    speed = 1.0
    if not args.realtime:
        try:
            speed = float(args.speed)
        except ValueError:
            raise AvrCliError("--speed %r is not a number" % (args.speed,)) from None
        if not (math.isfinite(speed) and 0.0 < speed <= MAX_SPEED):
            raise AvrCliError("--speed must be a finite number in (0, %g], got %r" % (MAX_SPEED, args.speed))
    try:
        seed = int(args.seed)
    except ValueError:
        raise AvrCliError("--seed %r is not a whole number" % (args.seed,)) from None
    if seed < 0:
        raise AvrCliError("--seed must be >= 0, got %d" % seed)
    return args.board, args.plant, speed, seed


def build(board, plant, seed):
    """(bridge, plant) of a board's firmware around its simulated robot; the bridge discards unread output."""
    from harness.sim.avr_bridge import PLANT_DEFAULTS, AvrBridge, AvrPlant, on_blocks
    from harness.sim.rng import RunRandom
    from harness.sim.vehicles.diffdrive import DiffDriveRobot

    env = {"BRIDGE_DROP_UNREAD": str(UNREAD_LIMIT_BYTES)}
    robot_cls = on_blocks(DiffDriveRobot) if plant == "blocks" else DiffDriveRobot
    if board == "leveler":
        from harness.sim.fil_leveler_world import (LEVELER_PLANT_DEFAULTS, LevelerBridge, LevelerPlant,
                                                   MoundTerrain, rover5_vehicle)
        terrain = MoundTerrain({"mounds": []})                # flat ground
        robot = robot_cls(rover5_vehicle(motor_no_load_radps=LEVELER_PLANT_DEFAULTS["motor_no_load_radps"]))
        bridge = LevelerBridge(env=env)
        return bridge, LevelerPlant(bridge, robot, terrain, RunRandom(seed).stream("leveler_imu"))
    from harness.sim.sensors.imu import PlanarImu
    robot = robot_cls({"max_wheel_radps": PLANT_DEFAULTS["motor_no_load_radps"]})
    imu = PlanarImu(robot, RunRandom(seed).stream("avr_imu"))
    bridge = AvrBridge(board, env=env)
    return bridge, AvrPlant(bridge, robot, imu)


class Server:
    """Steps the plant (and with it the firmware) paced to ``speed`` x the monotonic clock."""

    def __init__(self, bridge, plant, speed):
        self.bridge = bridge
        self.plant = plant
        self.speed = speed
        self.t_us = 0
        self.wall_s = 0.0
        self.late_windows = 0            # windows simulated after their wall-clock due time + 100 ms

    def serve(self, stopped):
        """Run until ``stopped()`` is true."""
        dt_us = self.plant.dt_us
        t0 = time.monotonic()
        while not stopped():
            due_us = (time.monotonic() - t0) * 1e6 * self.speed
            n = 0
            while self.t_us + dt_us <= due_us and n < MAX_WINDOWS_PER_PASS:
                self.t_us += dt_us
                if self.plant.step(self.t_us, -1) is not None:      # -1: whatever the client wrote so far
                    n += 1
                    if due_us - self.t_us > 100000 * self.speed:
                        self.late_windows += 1
            if n == 0:
                ahead_s = (self.t_us + dt_us - due_us) / (1e6 * self.speed)
                time.sleep(min(max(ahead_s, 0.0), IDLE_WAIT_MAX_S))
        self.wall_s = time.monotonic() - t0

    def counters(self, board, plant_name):
        st = self.bridge.stats()
        robot = self.plant.robot
        sim_s = self.t_us * 1e-6
        return {"board": board, "plant": plant_name, "speed": self.speed, "sim_s": round(sim_s, 3),
                "wall_s": round(self.wall_s, 3),
                "speed_achieved": round(sim_s / self.wall_s, 3) if self.wall_s > 0 else None,
                "late_windows": self.late_windows,
                "rx_bytes": st.get("rx_bytes"), "tx_bytes": st.get("tx_bytes"),
                "tx_flushed_unread": st.get("tx_flushed"), "tx_dropped": st.get("tx_dropped"),
                "resets": st.get("resets"), "enc_left_ticks": st.get("enc_left"),
                "enc_right_ticks": st.get("enc_right"), "distance_m": round(robot.distance_m, 4)}


def cmd_avr(args):
    from harness.sim.avr_bridge import FilError, ensure_built
    try:
        board, plant_name, speed, seed = parse_args(args)
    except AvrCliError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    try:
        ensure_built()
        bridge, plant = build(board, plant_name, seed)
    except (FilError, OSError) as exc:
        print("error: the simulation could not start: %s" % str(exc).strip().splitlines()[0], file=sys.stderr)
        return 1
    stop = []

    def _stop(_signum, _frame):
        stop.append(True)

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    server = Server(bridge, plant, speed)
    rc = 0
    try:
        print(bridge.pty_path)
        sys.stdout.flush()
        server.serve(lambda: bool(stop))
    except FilError as exc:
        print("error: the simulation failed: %s" % exc, file=sys.stderr)
        rc = 1
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        counters = None
        try:
            counters = server.counters(board, plant_name)
        except FilError:
            pass
        bridge.close()
        if counters is not None:
            print(json.dumps(counters, sort_keys=True), file=sys.stderr)
    return rc
