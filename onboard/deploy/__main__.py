"""Command line: ``python -m onboard.deploy BOARD --port PORT [--mpy] [--dry-run] [--no-start]``, or
``python -m onboard.deploy BOARD --port PORT --pull-log OUT.mcap`` (fetch and convert the board's ring log).
AVR boards (``uno``, ``leonardo``; ``onboard.deploy.avr``): build the firmware with its link key, flash it
with avrdude through the board's bootloader, check that it answers HELLO."""
import argparse
import json
import sys

from onboard.cli import OneLineParser
from onboard.core.settings import POSITIVE, argument
from onboard.deploy.avr import is_avr_board, list_avr_boards
from onboard.deploy.build import DeployError, build, list_boards, mpy_cross_version


EPILOG = """exit status: 0 deployed (or up to date / dry run), 2 bad arguments, board package or link key,
3 no board on the port, board not responding or port gone during the deploy (a copy cut short
stays in the staging folder: the previous version stays active), 4 MicroPython/.mpy version mismatch,
5 not enough flash, 6 copy or verification failed (the previous version stays active);
with --pull-log: 7 no log on the board or nothing readable in it, 8 converted but damaged
(records dropped by CRC, a torn last write, a cut file: the readable records were converted).
AVR boards: 2 bad arguments, key or firmware build, 3 no port, no bootloader or no HELLO answering,
5 firmware larger than the flash, 6 avrdude failed or the wrong firmware answered.

examples:
  python -m onboard.deploy pico_rp2040 --port /dev/ttyACM0 --mpy --link-key link.key
  python -m onboard.deploy nano_esp32 --port /dev/ttyACM0 --dry-run
  python -m onboard.deploy pico_rp2040 --build-only --mpy      # list the file set, no board
  python -m onboard.deploy pico_rp2040 --port /dev/ttyACM0 --pull-log run.mcap   # then:
  python -m harness replay run.mcap
  python -m onboard.deploy uno --port /dev/ttyACM0 --link-key avr.key   # build, avrdude, HELLO
  python -m onboard.deploy leonardo --port /dev/ttyACM0 --link-key avr.key --link-port /dev/ttyUSB0
  python -m onboard.deploy uno --build-only --unsigned                  # build only, no board
"""


def build_parser():
    p = OneLineParser(prog="python -m onboard.deploy", description=(
        "Deploy the onboard runtime to a MicroPython board with mpremote: builds the board's file "
        "set (only the modules it imports), optionally precompiles to .mpy with mpy-cross, copies "
        "only files whose sha256 changed into a staging folder, verifies them by sha256, switches "
        "the active folder and soft-resets the board so main.py starts. AVR boards (uno, leonardo): builds "
        "the robot_link firmware with its link key, flashes it with avrdude through the board's bootloader "
        "(optiboot; the 32U4's 1200-baud touch + Caterina) and checks that it answers HELLO."),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("board", help="board package under boards/ (MicroPython: %s; AVR: %s)"
                   % (", ".join(list_boards()), ", ".join(list_avr_boards())))
    p.add_argument("--port", help="serial port of the board (e.g. /dev/ttyACM0, or a pty path)")
    p.add_argument("--mpy", action="store_true", help="precompile to .mpy for the board's MicroPython")
    p.add_argument("--dry-run", action="store_true", help="list what would change, copy nothing")
    p.add_argument("--no-start", action="store_true", help="do not soft-reset/start the runtime afterwards (AVR: do not check for HELLO)")
    p.add_argument("--timeout", type=argument(POSITIVE), default=10.0, metavar="S",
                   help="timeout of each mpremote call in seconds (plus 0.5 s per KiB copied; default 10); AVR: "
                        "how long to wait for HELLO after flashing")
    p.add_argument("--build-only", action="store_true", help="build the file set and list it; no board")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--boards-dir", metavar="DIR", help="folder of board packages (default: boards/)")
    p.add_argument("--pull-log", metavar="OUT.mcap",
                   help="deploy nothing: copy the board's ring log (manifest log_path) with mpremote to "
                        "OUT.bin and convert it to OUT.mcap for `python -m harness replay`")
    p.add_argument("--link-key", metavar="FILE",
                   help="provision the command link's key (a file of hex digits: python3 -c 'import secrets; "
                        "print(secrets.token_hex(16))' > link.key); the board refuses unsigned lines, and "
                        "every line when it has no key. AVR boards: the firmware's SipHash key, 32 hex digits, "
                        "built in with make KEY=FILE")
    avr = p.add_argument_group("AVR boards (uno, leonardo)")
    avr.add_argument("--unsigned", action="store_true",
                     help="build the firmware with SIGNING=off: it accepts unsigned commands (only on purpose)")
    avr.add_argument("--key-id", type=int, default=0, metavar="N",
                     help="key id 0..255 built into the firmware with --link-key (default 0)")
    avr.add_argument("--link-port", metavar="PORT",
                     help="leonardo: the serial port of the link (Serial1), where HELLO is checked")
    avr.add_argument("--attempts", type=int, metavar="N",
                     help="avrdude -x attempts=N: STK500 sync attempts, ~5 s each (default avrdude's 10)")
    avr.add_argument("--build-dir", metavar="DIR",
                     help="firmware build folder (default build/deploy/avr/)")
    p.add_argument("--log-bin", metavar="FILE",
                   help="with --pull-log: convert this already copied ring log instead (no board, no --port)")
    return p


def _pull_log(args):
    from onboard.deploy.pull_log import pull_log
    log = (lambda msg: None) if args.json else print
    result = pull_log(args.board, args.port, args.pull_log, timeout_s=args.timeout, log=log,
                      boards_dir=args.boards_dir, log_bin=args.log_bin)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    if result["exit_code"]:
        print("error: damaged log: %s (the readable records were converted)" % result["summary"], file=sys.stderr)
    return result["exit_code"]


def _deploy_avr(args):
    from onboard.deploy.avr import build_firmware, deploy_avr, load_avr_manifest, read_avr_key
    log = (lambda msg: None) if args.json else print
    for flag, name in ((args.mpy, "--mpy"), (args.pull_log, "--pull-log"), (args.log_bin, "--log-bin")):
        if flag:
            print("error: %s is for MicroPython boards, %s is an AVR board" % (name, args.board), file=sys.stderr)
            return 2
    if args.unsigned and args.link_key:
        print("error: --unsigned and --link-key exclude each other", file=sys.stderr)
        return 2
    if not 0 <= args.key_id <= 255:
        print("error: --key-id takes 0..255", file=sys.stderr)
        return 2
    if args.attempts is not None and args.attempts < 1:
        print("error: --attempts takes 1 or more", file=sys.stderr)
        return 2
    key_path = read_avr_key(args.link_key) if args.link_key else None
    if args.build_only:
        manifest = load_avr_manifest(args.board, args.boards_dir)
        fw = build_firmware(manifest, args.build_dir, key_path, args.key_id, args.unsigned, log=log)
        if args.json:
            print(json.dumps(fw, sort_keys=True))
        else:
            print("%7d  %s  %s  (of %d bytes of flash)" % (fw["flash_bytes"], fw["sha256"][:12], fw["hex"],
                                                          fw["flash_max_bytes"]))
        return 0
    if not args.port:
        print("error: --port is required (or --build-only)", file=sys.stderr)
        return 2
    result = deploy_avr(args.board, args.port, dry_run=args.dry_run, verify=not args.no_start,
                        timeout_s=args.timeout, log=log, boards_dir=args.boards_dir, key_path=key_path,
                        key_id=args.key_id, unsigned=args.unsigned, link_port=args.link_port,
                        build_dir=args.build_dir, attempts=args.attempts)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        if is_avr_board(args.board, args.boards_dir):
            return _deploy_avr(args)
        if args.build_only:
            manifest, built = build(args.board, mpy=args.mpy, boards_dir=args.boards_dir)
            for path, (_, digest, size) in sorted(built.items()):
                print("%7d  %s  %s" % (size, digest[:12], path))
            total = sum(v[2] for v in built.values())
            extra = " (mpy-cross %s, mpy v%s)" % mpy_cross_version() if args.mpy else ""
            print("%d files, %d bytes%s" % (len(built), total, extra))
            return 0
        if args.log_bin and not args.pull_log:
            print("error: --log-bin goes with --pull-log OUT.mcap", file=sys.stderr)
            return 2
        if args.pull_log and args.log_bin:
            return _pull_log(args)
        if not args.port:
            print("error: --port is required (or --build-only)", file=sys.stderr)
            return 2
        if args.pull_log:
            return _pull_log(args)
        from onboard.deploy.deployer import deploy, read_link_key
        from onboard.deploy.device import soft_reset_and_start
        log = (lambda msg: None) if args.json else print
        link_key = read_link_key(args.link_key) if args.link_key else None
        result = deploy(args.board, args.port, mpy=args.mpy, dry_run=args.dry_run,
                        timeout_s=args.timeout, log=log, boards_dir=args.boards_dir, link_key=link_key)
        if not args.dry_run and not args.no_start:
            try:
                ready = soft_reset_and_start(args.port, timeout_s=args.timeout)
            except DeployError as exc:
                switched = (" (/active -> %s)" % result["plan"]["staging"]) if result["switched"] else ""
                raise type(exc)("%s is deployed%s but was not started: %s" % (args.board, switched, exc))
            result["started"] = ready is not None
            result["ready_line"] = ready.decode(errors="replace") if ready else None
            log("started: %s" % (result["ready_line"] or "no READY line within %.0f s" % args.timeout))
        if args.json:
            print(json.dumps(result, sort_keys=True))
        return 0
    except DeployError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
