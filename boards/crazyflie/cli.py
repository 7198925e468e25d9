"""``python -m boards.crazyflie member``: one swarm member (boards/crazyflie/app.py's recipe) flown
from a host against a Crazyflie with the official cflib.

    python -m boards.crazyflie member --uri radio://0/80/2M/E7E7E7E7E7 --id 0 --peers 1,2 --goal 1.5,0
    python -m boards.crazyflie member --uri udp://127.0.0.1:19850 --id 0 --peers 1 --duration-s 20

Exit status: 0 flew and landed (or was stopped with SIGINT/SIGTERM and landed), 2 bad arguments or
board config (one line), 3 cannot connect / link lost / models missing (one line).
"""
import argparse
import json
import logging
import os
import signal
import sys

from boards.crazyflie.app import CrazyflieMember, member_driver_config
from boards.crazyflie.board import CrazyflieConfigError, load_overrides as load_board_config
from boards.crazyflie.driver import CLOSED, FLYING, LANDED, LINK_LOST, CrazyflieDriver, CrazyflieLinkError
from onboard.impl import IMPLEMENTATIONS
from onboard.runtime.clock import MonotonicClock
from onboard.swarm.member import FLIGHT_AGENT_CONFIG

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(REPO, "models", "swarm")
POLICIES = ("float", "int8", "int8-pure")
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_LINK = 3
RANGE_SLOTS = 8                 # ranging.distance0..7


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``error: <message>`` on stderr, exit status 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, "error: %s (see --help)\n" % message)


def _whole(low):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or v < low:
            raise argparse.ArgumentTypeError("expected a whole number >= %d, got %r" % (low, text))
        return v
    return parse


def _positive(text):
    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not (v > 0 and v != float("inf")):
        raise argparse.ArgumentTypeError("expected a number > 0, got %r" % (text,))
    return v


def _peers(text):
    try:
        out = [int(p) for p in text.split(",") if p.strip() != ""]
    except ValueError:
        out = None
    if out is None or any(p < 0 for p in out) or len(set(out)) != len(out):
        raise argparse.ArgumentTypeError("expected distinct whole numbers >= 0 separated by commas, got %r" % (text,))
    return out


def _point(text):
    try:
        out = [float(p) for p in text.split(",")]
    except ValueError:
        out = None
    if out is None or len(out) != 2 or not all(v - v == 0 for v in out):
        raise argparse.ArgumentTypeError("expected NORTH,EAST in metres (two finite numbers), got %r" % (text,))
    return (out[0], out[1])


def build_parser(prog="python -m boards.crazyflie"):
    parser = _Parser(prog=prog, description="Crazyflie board tools (official cflib).")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser(
        "member", help="fly one swarm member (UWB ranges -> particle filters -> DQN) on a Crazyflie",
        description="Connect to the Crazyflie at --uri with cflib, take off and fly one swarm member "
                    "(onboard.swarm.member) for --duration-s, then land. Neighbour ranges come from the "
                    "Crazyflie's UWB log variables ranging.distance<j> (slot j = neighbour j; no neighbour "
                    "velocities: taken as 0 m/s), its own velocity and heading from stateEstimate.*, the "
                    "goal range from the estimated position and --goal. Prints a JSON report on stdout.",
        epilog="exit status: 0 landed, 2 bad arguments or board config, 3 cannot connect, link lost, or "
               "models missing. Simulated Crazyflies: python -m harness crazyflies --count 2")
    p.add_argument("--uri", required=True, help="cflib link URI, e.g. radio://0/80/2M/E7E7E7E7E7 or "
                                                "udp://127.0.0.1:19850")
    p.add_argument("--id", type=_whole(0), required=True, help="this drone's UWB id (its own ranging slot)")
    p.add_argument("--peers", type=_peers, default=[],
                   help="neighbour ids, comma separated (ranging.distance<id>); default: none listed, every "
                        "neighbour whose range arrives is tracked")
    p.add_argument("--goal", type=_point, default=(0.0, 0.0),
                   help="goal NORTH,EAST in metres in the Crazyflie's position frame (x, -y) (default: 0,0)")
    p.add_argument("--duration-s", type=_positive, default=30.0,
                   help="fly this long, take-off included, then land (default: 30)")
    p.add_argument("--height-m", type=_positive, default=0.5, help="flight height in metres (default: 0.5)")
    p.add_argument("--models", default=MODEL_DIR,
                   help="folder with bearing/ and dqn/ (default: models/swarm of this checkout)")
    p.add_argument("--policy", choices=POLICIES, default="int8",
                   help="DQN: int8 (LiteRT), int8-pure (pure int8 kernel) or float (default: int8)")
    p.add_argument("--estimator", choices=POLICIES, default="int8",
                   help="learned bearing estimator, same choices (default: int8)")
    p.add_argument("--impl", choices=IMPLEMENTATIONS, default=None,
                   help="particle-filter kernels (default: $ONBOARD_IMPL, else pure)")
    p.add_argument("--n-particles", type=_whole(2), default=FLIGHT_AGENT_CONFIG["n_particles"],
                   help="particles per tracked neighbour / goal (default: %d)" % FLIGHT_AGENT_CONFIG["n_particles"])
    p.add_argument("--seed", type=_whole(0), default=1, help="seed of the particle filters' draws (default: 1)")
    p.add_argument("--board-config", default=None,
                   help="board config .toml/.json (table [crazyflie], see boards/crazyflie/board.py) over "
                        "the member's driver settings")
    p.add_argument("--connect-timeout-s", type=_positive, default=10.0,
                   help="give up connecting after this long (default: 10)")
    p.add_argument("--verbose", action="store_true",
                   help="also show cflib's own log messages (link errors, warnings) on stderr; by default "
                        "a failure is our one error line")
    return parser


def load_models(model_dir, policy="int8", estimator="int8"):
    """(bearing estimator, DQN runner) from ``model_dir`` (bearing/ and dqn/; see harness/scenarios/swarm/README.md)."""
    from onboard.swarm.bearing_net import BearingNet, BearingPolicy
    from onboard.swarm.dqn import DqnFloat

    bearing_dir = os.path.join(model_dir, "bearing")
    dqn_dir = os.path.join(model_dir, "dqn")
    if estimator == "float":
        net = BearingNet.load(os.path.join(bearing_dir, "weights.npz"))
    else:
        net = BearingPolicy.load(bearing_dir, backend="litert" if estimator == "int8" else "pure")
    if policy == "float":
        dqn = DqnFloat.load(os.path.join(dqn_dir, "weights.npz"))
    else:
        from onboard.policy import load_policy
        dqn = load_policy(dqn_dir, backend="litert" if policy == "int8" else "pure")
    return net, dqn


def member_slots(range_peer_ids, own_id, peers):
    """The ranging slots j (``ranging.distance<j>``, 0..RANGE_SLOTS-1: the firmware logs no more) whose
    peer ``range_peer_ids[j]`` is not ``own_id`` and, where ``peers`` lists any, is one of them."""
    return [j for j, pid in enumerate(range_peer_ids[:RANGE_SLOTS]) if pid != own_id and (not peers or pid in peers)]


class _Stop:
    def __init__(self):
        self.requested = False

    def __call__(self, _signum, _frame):
        self.requested = True


def run_member(args, clock=None, out=None):
    """Fly one member as ``args`` say; returns (exit status, report dict)."""
    import numpy as np

    from onboard.estimators import particle_filter as pf_mod
    from onboard.estimators.particle_filter_numpy import NumpyDraws

    out = out or sys.stdout
    clock = clock or MonotonicClock()
    overrides = {}
    if args.board_config:
        overrides = load_board_config(args.board_config)       # only what the file sets
    overrides.setdefault("connect_timeout_s", args.connect_timeout_s)
    overrides["flight_height_m"] = args.height_m
    peers = [p for p in args.peers if p != args.id]
    slots = member_slots(overrides.get("range_peer_ids", list(range(RANGE_SLOTS))), args.id, peers)
    cfg = member_driver_config(slots, overrides=overrides)
    for need in ("bearing", "dqn"):
        if not os.path.isdir(os.path.join(args.models, need)):
            raise FileNotFoundError("models not found: %s has no %s/ folder" % (args.models, need))
    net, dqn = load_models(args.models, args.policy, args.estimator)
    kernels = pf_mod.kernels_for(args.impl)
    agent_cfg = dict(FLIGHT_AGENT_CONFIG, n_particles=args.n_particles)
    driver = CrazyflieDriver(args.uri, cfg, name="cf%d" % args.id)
    driver.connect()
    report = {"uri": args.uri, "id": args.id, "connected": True}
    stop = _Stop()
    old = {}
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            try:
                old[s] = signal.signal(s, stop)
            except ValueError:          # not the main thread: no signal handling
                pass
        start_us = clock.now_us()
        app = CrazyflieMember(driver, dqn, net, NumpyDraws(np.random.default_rng(args.seed)), args.id,
                              peers, goal_ne_m=args.goal, agent_config=agent_cfg, kernels=kernels,
                              start_us=start_us)
        driver.take_off(start_us, args.height_m)
        end_us = start_us + int(round(args.duration_s * 1e6))
        chunk_us = 100000
        t = start_us
        flying = False
        while t < end_us and not stop.requested and driver.state not in (LINK_LOST, LANDED, CLOSED):
            t = min(end_us, t + chunk_us)
            app.node.run(clock, t)
            flying = flying or driver.state == FLYING
        report["ran_s"] = (clock.now_us() - start_us) * 1e-6
        report["reached_flight_height"] = flying
        status = EXIT_OK
        if driver.state == LINK_LOST:
            status = EXIT_LINK
        else:
            _land(driver, clock)
        report["member"] = app.report()
        report["driver"] = driver.report()
        report["stopped_by_signal"] = stop.requested
        return status, report
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        driver.close()


def _land(driver, clock):
    """Land (high-level commander) and keep polling/stepping at the setpoint rate until landed (bounded)."""
    now = clock.now_us()
    driver.land(now)
    period_us = driver.setpoint_period_us
    limit_us = now + int((driver.cfg["land_time_s"] + 2.0) * 1e6)
    t = now
    while driver.state not in (LANDED, LINK_LOST, CLOSED) and t < limit_us:
        t += period_us
        clock.sleep_until_us(t)
        driver.poll(clock.now_us())
        driver.step(clock.now_us())


def main(argv=None, clock=None, prog="python -m boards.crazyflie"):
    """The command line; returns the exit status. ``clock`` (now_us, sleep_until_us) defaults to the host's."""
    args = build_parser(prog).parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(levelname)s: %(message)s")
    else:               # cflib logs link errors itself (a traceback and all); the CLI says them in one line
        logging.getLogger("cflib").setLevel(logging.CRITICAL + 1)
    try:
        status, report = run_member(args, clock=clock)
    except CrazyflieConfigError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return EXIT_USAGE
    except (CrazyflieLinkError, FileNotFoundError) as exc:
        print("error: %s" % str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_LINK
    except ValueError as exc:           # a setting out of range (member, agent, particle filter)
        print("error: %s" % str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(report, sort_keys=True, default=str))
    sys.stdout.flush()
    if status == EXIT_LINK:
        print("error: link to %s lost" % args.uri, file=sys.stderr)
    return status
