"""``python -m harness crazyflies --count 4``: serve simulated Crazyflies until interrupted.

Prints one URI per line (flushed, so a parent process can read them), then serves in
realtime (host monotonic clock) until SIGINT/SIGTERM, and prints each drone's packet
counters to stderr on the way out.
"""
import json
import signal
import sys
import threading

from harness.config import non_negative_int


SENSOR_NOISE_CHOICES = {"all": {"attitude_imu": True, "position_velocity_vbat": True},
                        "imu": {"attitude_imu": True, "position_velocity_vbat": False},
                        "off": {"attitude_imu": False, "position_velocity_vbat": False}}


def add_parser(sub):
    p = sub.add_parser("crazyflies", help="serve simulated Crazyflies over UDP for cflib",
                       description="Start N simulated Crazyflies on loopback UDP ports; prints one "
                                   "udp:// URI per line and serves until interrupted (Ctrl-C).")
    p.add_argument("--count", type=int, default=1, help="number of drones (default: 1)")
    p.add_argument("--base-port", type=int, default=19850,
                   help="first UDP port; drone i gets base+i (default: 19850, where cflib scans; "
                        "0 picks free ports)")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default: 127.0.0.1)")
    p.add_argument("--seed", type=non_negative_int, default=1, help="seed of the ranging and sensor noise (default: 1)")
    p.add_argument("--spacing", type=float, default=1.0, help="start spacing along x in metres (default: 1.0)")
    p.add_argument("--sensor-noise", choices=SENSOR_NOISE_CHOICES, default="all",
                   help="seeded noise and biases on the logged estimates: all (attitude, gyro, acc, position, "
                        "velocity, battery: like a real Crazyflie), imu (attitude, gyro, acc only) or off "
                        "(exact values) (default: all)")
    p.set_defaults(func=cmd_crazyflies)


def cmd_crazyflies(args):
    from harness.sim.crazyflie.fleet import SimCrazyflieFleet
    from harness.sim.crazyflie.server import SimServerError

    try:
        fleet = SimCrazyflieFleet(args.count, seed=args.seed,
                                  config={"host": args.host, "base_port": args.base_port,
                                          "spacing_m": args.spacing,
                                          "drone": {"sensor_noise": SENSOR_NOISE_CHOICES[args.sensor_noise]}})
        fleet.start()
    except (ValueError, SimServerError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    done = threading.Event()

    def _stop(_signum, _frame):
        done.set()

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for uri in fleet.uris:
            print(uri)
        sys.stdout.flush()
        while not done.wait(0.5):
            pass
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        fleet.close()
        print(json.dumps(fleet.stats(), sort_keys=True), file=sys.stderr)
    return 0
