"""``python -m harness virtual-board``: serve the virtual MicroPython board until interrupted.

Prints the board's pty path on one line of stdout (flushed, so a parent process can
read it), serves until SIGINT/SIGTERM, then prints the board's counters (serial bytes
in/out, soft resets, interrupts, boots) as one JSON line on stderr. The board itself:
``harness/sim/virtual_board/README.md``. Binds nothing but
a pseudo-terminal.
"""
import json
import os
import signal
import sys
import threading

BLOCK_BYTES = 4096                      # the simulated flash's allocation unit
MIN_FLASH_BYTES = 16 * BLOCK_BYTES
MAX_FLASH_BYTES = 64 * 1024 * 1024
DEFAULT_FLASH_BYTES = 1441792           # a Pico's MicroPython filesystem

EXAMPLES = """examples:
  python -m harness virtual-board                          # prints e.g. /dev/pts/7; Ctrl-C stops it
  mpremote connect /dev/pts/7 exec "print(1+1)"           # in a second terminal
  mpremote connect /dev/pts/7 fs ls                        # the board's flash: boot.py, lib/...
  mpremote connect /dev/pts/7                              # its REPL; Ctrl-C interrupts running code
  python -m harness virtual-board --flash-dir myflash      # flash kept in a host folder between runs
  python -m harness virtual-board --flash-bytes 262144     # a 256 KiB flash (ENOSPC beyond)
  python -m harness virtual-board >pty.txt &               # in a script: the path is pty.txt's
  kill -INT $!                                             # first line; SIGINT stops the board

On exit (SIGINT/SIGTERM) it prints its counters on stderr as one JSON line:
  {"boots": 3, "bytes_in": 1204, "bytes_out": 877, "interrupts": 1,
   "interrupts_dropped_at_idle": 0, "soft_resets": 2}
(interrupts: Ctrl-C that stopped running code with KeyboardInterrupt; a Ctrl-C with no
code running is an ordinary REPL character, as on a board)
Exit status: 0 after a clean stop, 2 on bad arguments, 1 when the board could not
start or stopped by itself.
"""


class ArgumentError(ValueError):
    pass


def add_parser(sub):
    import argparse
    p = sub.add_parser("virtual-board", help="serve the virtual MicroPython board on a pty for mpremote",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
                       description="Start the virtual MicroPython board (the real MicroPython 1.27, "
                                   "WebAssembly build under node) behind a pseudo-terminal; prints its "
                                   "path on one line and serves until interrupted (Ctrl-C). Any serial "
                                   "client (mpremote, pyserial, a terminal program) can open the path.")
    p.add_argument("--flash-dir", metavar="DIR",
                   help="host folder mirroring the board's flash: loaded at start, written after "
                        "every change (created if missing; default: a flash that lives only in memory)")
    p.add_argument("--flash-bytes", metavar="N", default=str(DEFAULT_FLASH_BYTES),
                   help="flash size in bytes, %d..%d, a multiple of %d (default: %d)"
                        % (MIN_FLASH_BYTES, MAX_FLASH_BYTES, BLOCK_BYTES, DEFAULT_FLASH_BYTES))
    p.set_defaults(func=cmd_virtual_board)


def parse_flash_bytes(text):
    """--flash-bytes N: an integer number of bytes within limits, whole blocks; ArgumentError otherwise."""
    try:
        n = int(str(text).replace("_", ""), 10)
    except ValueError:
        raise ArgumentError("--flash-bytes: %r is not an integer number of bytes" % (text,))
    if not MIN_FLASH_BYTES <= n <= MAX_FLASH_BYTES:
        raise ArgumentError("--flash-bytes: %d is outside %d..%d" % (n, MIN_FLASH_BYTES, MAX_FLASH_BYTES))
    if n % BLOCK_BYTES:
        raise ArgumentError("--flash-bytes: %d is not a multiple of the %d-byte block" % (n, BLOCK_BYTES))
    return n


SYNC_TMP = ".vbsync~"                    # a file the board was writing when it stopped: not on its flash


def flash_dir_bytes(path):
    """Flash space the files under ``path`` take on the board (whole 4 KiB blocks per file
    and per folder, the board's own rule; the board's unfinished ``*.vbsync~`` writes are no files)."""
    used = 0
    for root, dirs, files in os.walk(path):
        used += len(dirs) * BLOCK_BYTES
        for name in files:
            if name.endswith(SYNC_TMP):
                continue
            size = os.path.getsize(os.path.join(root, name))
            used += max(1, -(-size // BLOCK_BYTES)) * BLOCK_BYTES
    return used


def check_flash_dir(path, flash_bytes):
    """--flash-dir DIR: a folder (created if missing) whose files fit the flash; ArgumentError otherwise."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ArgumentError("--flash-dir: %s is not a folder" % path)
    if not os.path.exists(path):
        try:
            os.makedirs(path)
        except OSError as exc:
            raise ArgumentError("--flash-dir: cannot create %s: %s" % (path, exc.strerror or exc))
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise ArgumentError("--flash-dir: %s is not readable and writable" % path)
    used = flash_dir_bytes(path)
    if used > flash_bytes:
        raise ArgumentError("--flash-dir: %s holds %d bytes of flash blocks, more than --flash-bytes %d"
                            % (path, used, flash_bytes))
    return os.path.abspath(path)


def cmd_virtual_board(args):
    from harness.sim.virtual_board import VirtualBoard, VirtualBoardError

    try:
        flash_bytes = parse_flash_bytes(args.flash_bytes)
        fs_dir = check_flash_dir(args.flash_dir, flash_bytes) if args.flash_dir else None
    except ArgumentError as exc:
        print("python -m harness virtual-board: error: %s (see `python -m harness virtual-board --help`)"
              % exc, file=sys.stderr)
        return 2
    done = threading.Event()

    def _stop(_signum, _frame):
        done.set()

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    board = VirtualBoard(flash_bytes=flash_bytes, fs_dir=fs_dir)
    counters = None
    status = 0
    try:
        try:
            board.start()
        except VirtualBoardError as exc:
            print("error: %s" % exc, file=sys.stderr)
            return 1
        print(board.port)
        sys.stdout.flush()
        print("virtual MicroPython board on %s (flash %d bytes%s); try: mpremote connect %s; "
              "Ctrl-C stops it" % (board.port, flash_bytes, ", mirrored to %s" % fs_dir if fs_dir else "",
                                   board.port), file=sys.stderr)
        while not done.wait(0.5):
            if not board.alive():
                print("error: the virtual board stopped by itself", file=sys.stderr)
                status = 1
                break
        if board.alive():
            try:
                counters = board.counters()
            except VirtualBoardError as exc:
                print("error: %s" % exc, file=sys.stderr)
                status = 1
    finally:
        board.stop()
        for s, h in old.items():
            signal.signal(s, h)
    if counters is not None:
        print(json.dumps(counters, sort_keys=True), file=sys.stderr)
    return status
