"""``python -m harness vescs``: serve simulated VESC motor controllers on pseudo-terminals until interrupted.

Prints one pty path per line (flushed, so a parent process can read them): one per VESC with a UART
(``--count``). Every VESC sits on one simulated CAN bus: ``--can-ids`` names the controller ids, the
first ``--count`` of them have a UART, the rest are reached only through ``COMM_FORWARD_CAN`` on any
UART. Serves in real time (host monotonic clock: the motors are stepped every ``PHYSICS_DT_US``) until
SIGINT/SIGTERM, then prints each VESC's counters to stderr as one JSON object. Binds nothing but ptys.

Fault injection: ``--fault [ID:]NAME[@START_S][+DURATION_S]`` raises a firmware fault code (mc_fault_code,
e.g. abs_over_current, under_voltage; the motor is released while it lasts, as ``mc_interface`` does)
on VESC ``ID`` (default: the first) ``START_S`` seconds after start, for ``DURATION_S`` seconds (default:
until exit); ``--drop-replies P`` loses each reply frame with probability ``P`` (seeded by ``--seed``).
See ``harness/sim/VESC.md``.
"""
import argparse
import json
import select
import signal
import sys
import time

from harness.config import non_negative_int

PHYSICS_DT_US = 1000                    # motor step (us); the ports are serviced at least this often
MAX_CATCH_UP_STEPS = 200                # after a host stall, steps run at once (older ones are skipped)
FAULT_ALIASES = {"over_current": "ABS_OVER_CURRENT", "overcurrent": "ABS_OVER_CURRENT"}

EXAMPLES = """examples:
  python -m harness vescs                                   # one VESC (id 1) on one pty
  python -m harness vescs --count 2                         # two VESCs, ids 1 and 2, a pty each
  python -m harness vescs --can-ids 1,2                     # id 2 behind id 1: COMM_FORWARD_CAN on one pty
  python -m harness vescs --fault 2:under_voltage@5+3       # VESC 2 faults 5 s after start, for 3 s
  python -m harness vescs --fault over_current --drop-replies 0.05 --seed 3
  python -m harness vescs --set v_in_v=36 --set fw_minor=6  # any SimVesc setting (harness/sim/VESC.md)

Stop with Ctrl-C (SIGINT) or SIGTERM: the counters of every VESC go to stderr as JSON.
"""


class VescCliError(ValueError):
    """Bad command-line input (one line, exit status 2)."""


def add_parser(sub):
    p = sub.add_parser("vescs", help="serve simulated VESC motor controllers on ptys (VESC UART protocol)",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
                       description="Start simulated VESCs (motor + speed loop + firmware command timeout) on "
                                   "pseudo-terminals; prints one pty path per line and serves the VESC UART "
                                   "protocol (COMM_FW_VERSION, GET_VALUES, SET_RPM/DUTY/CURRENT, FORWARD_CAN, "
                                   "PING_CAN, ...) until interrupted (Ctrl-C).")
    p.add_argument("--count", type=int, default=1, help="VESCs with a UART, one pty each (default: 1)")
    p.add_argument("--can-ids", metavar="ID,ID,...",
                   help="controller ids of all VESCs on the CAN bus (0..254): the first --count have a pty, "
                        "the rest only answer COMM_FORWARD_CAN (default: 1..count)")
    p.add_argument("--fault", action="append", default=[], metavar="[ID:]NAME[@START_S][+DURATION_S]",
                   help="inject a firmware fault code (repeatable): NAME is an mc_fault_code name such as "
                        "abs_over_current (alias over_current), under_voltage, over_voltage, over_temp_fet, "
                        "or its number")
    p.add_argument("--drop-replies", type=float, default=0.0, metavar="P",
                   help="probability that a reply frame is lost (default: 0)")
    p.add_argument("--seed", type=non_negative_int, default=1, help="seed of the dropped replies (default: 1)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a SimVesc setting for every VESC (repeatable; VALUE is JSON, else a string)")
    p.set_defaults(func=cmd_vescs)


def parse_ids(text, count):
    """Controller ids of the bus: from ``text`` ("1,2") or 1..count."""
    if not isinstance(count, int) or count < 1 or count > 32:
        raise VescCliError("--count must be a whole number 1..32, got %r" % (count,))
    if text is None:
        return list(range(1, count + 1))
    try:
        ids = [int(t) for t in text.split(",")]
    except ValueError:
        raise VescCliError("--can-ids must be integers separated by commas, got %r" % (text,)) from None
    bad = [i for i in ids if not 0 <= i <= 254]
    if bad:
        raise VescCliError("--can-ids: %d is not a CAN id 0..254 (255 is the broadcast id)" % bad[0])
    if len(set(ids)) != len(ids):
        raise VescCliError("--can-ids: each VESC needs its own id, got %s" % text)
    if len(ids) < count:
        raise VescCliError("--can-ids names %d VESCs but --count asks for %d with a UART" % (len(ids), count))
    return ids


def parse_fault(text, ids):
    """(controller id, fault code, start_s, duration_s or None) of one ``--fault`` value."""
    from onboard.comms.vesc import codec

    spec = text.strip()
    vesc_id = ids[0]
    duration_s = None
    start_s = 0.0
    try:
        if ":" in spec:
            head, spec = spec.split(":", 1)
            vesc_id = int(head)
        if "+" in spec:
            spec, dur = spec.split("+", 1)
            duration_s = float(dur)
        if "@" in spec:
            spec, start = spec.split("@", 1)
            start_s = float(start)
    except ValueError:
        raise VescCliError("--fault %r: expected [ID:]NAME[@START_S][+DURATION_S]" % (text,)) from None
    if vesc_id not in ids:
        raise VescCliError("--fault %r: no VESC with id %d (ids: %s)" % (text, vesc_id, ",".join(map(str, ids))))
    if not (start_s >= 0.0 and start_s < 1e7) or (duration_s is not None and not (0.0 < duration_s < 1e7)):
        raise VescCliError("--fault %r: START_S must be >= 0 and DURATION_S > 0 (seconds)" % (text,))
    name = FAULT_ALIASES.get(spec.lower(), spec.upper())
    if name.isdecimal():                # int() takes these ("²" is a digit that int() refuses)
        code = int(name)
    elif name in codec.FAULT_NAMES:
        code = codec.FAULT_NAMES.index(name)
    else:
        raise VescCliError("--fault %r: unknown fault %r (one of %s)"
                           % (text, spec, ", ".join(n.lower() for n in codec.FAULT_NAMES[1:])))
    if not 1 <= code <= 255:
        raise VescCliError("--fault %r: the fault code must be 1..255" % (text,))
    return vesc_id, code, start_s, duration_s


def build(args):
    """(ports, vescs by id, fault schedule) from the parsed arguments; VescCliError / ValueError on bad input."""
    from harness.config import ConfigError, parse_set
    from harness.sim.rng import RunRandom
    from harness.sim.vesc import SimVesc, SimVescPort

    ids = parse_ids(args.can_ids, args.count)
    faults = sorted((parse_fault(f, ids) for f in args.fault), key=lambda f: f[2])
    if not (0.0 <= args.drop_replies <= 1.0):
        raise VescCliError("--drop-replies must be a probability in [0, 1], got %r" % (args.drop_replies,))
    try:
        overrides = parse_set(args.set) if args.set else {}
    except ConfigError as exc:
        raise VescCliError(str(exc)) from None
    if "controller_id" in overrides:
        raise VescCliError("--set controller_id: use --can-ids")
    vescs = {i: SimVesc(dict(overrides, controller_id=i)) for i in ids}
    bus = [vescs[i] for i in ids]
    random = RunRandom(args.seed)
    ports = []
    try:
        for i in ids[:args.count]:
            ports.append(SimVescPort(vescs[i], can_bus=bus, drop_reply_prob=args.drop_replies,
                                     rng=random.stream("vesc.replies.%d" % i)))
    except Exception:
        for p in ports:
            p.close()
        raise
    return ports, vescs, faults


def serve(ports, vescs, faults, done):
    """Service the ports and step the motors in real time until ``done()`` is true."""
    fds = [p.pty.master_fd for p in ports]
    t0 = time.monotonic_ns() // 1000
    sim_us = 0
    pending = list(faults)

    def raise_due_faults():
        while pending and pending[0][2] * 1e6 <= sim_us:
            vesc_id, code, _start_s, duration_s = pending.pop(0)
            vescs[vesc_id].inject_fault(code, sim_us, duration_s)

    raise_due_faults()                  # the ones from the start hold before the first request
    while not done():
        now_us = time.monotonic_ns() // 1000 - t0
        steps = (now_us - sim_us) // PHYSICS_DT_US
        if steps > MAX_CATCH_UP_STEPS:
            sim_us += (steps - MAX_CATCH_UP_STEPS) * PHYSICS_DT_US
            steps = MAX_CATCH_UP_STEPS
        for _ in range(steps):
            sim_us += PHYSICS_DT_US
            raise_due_faults()
            for v in vescs.values():
                v.step(PHYSICS_DT_US * 1e-6, sim_us)
        for p in ports:
            p.service(sim_us)
        try:
            select.select(fds, [], [], PHYSICS_DT_US * 1e-6)
        except InterruptedError:
            pass
    for p in ports:                     # what arrived before the stop is still answered and counted
        p.service(sim_us)
    return sim_us


def counters(ports, vescs, sim_us):
    from harness.sim.vesc import COMMAND_NAMES

    out = {"uptime_s": round(sim_us * 1e-6, 3), "vescs": {}}
    port_of = {p.local.controller_id: p for p in ports}
    for i, v in vescs.items():
        cmds = {COMMAND_NAMES.get(k, str(k)) if isinstance(k, int) else k: n for k, n in v.commands.items()}
        entry = {"commands": dict(sorted(cmds.items())), "unanswered": v.unanswered, "timeouts": v.timeouts,
                 "fault_code": v.fault_code, "erpm": round(v.erpm, 1)}
        if i in port_of:
            entry["uart"] = port_of[i].report()
        out["vescs"][str(i)] = entry
    return out


def cmd_vescs(args):
    try:
        ports, vescs, faults = build(args)
    except ValueError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 2
    stop = []

    def _stop(_signum, _frame):
        stop.append(True)

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    sim_us = 0
    try:
        for p in ports:
            print(p.slave_path)
        sys.stdout.flush()
        sim_us = serve(ports, vescs, faults, lambda: bool(stop))
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        for p in ports:
            p.close()
        print(json.dumps(counters(ports, vescs, sim_us), sort_keys=True), file=sys.stderr)
    return 0
