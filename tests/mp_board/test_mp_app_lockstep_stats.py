"""The board app's lockstep ``STATS`` reply (boards/mp_common/mp_app.py ``lockstep``): the count of tick lines it
timed, with the command link signed (the boards' default, ``LINK_SIGNING = "required"``) as well as unsigned, run
unchanged in real MicroPython 1.27 and in CPython. A signed tick line starts with the signed-line mark, not ``T``:
it must be counted all the same, and lines that are no tick (an IMU sample, a refused line) must not be."""
import pytest

from tests.mp_board.board_script import UNSIGNED_BOARD, run_board_script

SCRIPT = """
import json
import time
import board
import machine
import mp_app
from onboard.comms import line_link as ll
from onboard.comms.signed_frame import FrameSigner, FrameVerifier
from onboard.runtime.link_runtime import LinkRuntime

if not hasattr(time, "ticks_us"):          # CPython: the MicroPython tick functions lockstep() times with
    time.ticks_us = lambda: int(time.monotonic() * 1000000)
    time.ticks_diff = lambda a, b: a - b
""" + UNSIGNED_BOARD + """


class Lines:
    def __init__(self, lines):
        self.lines = list(lines)

    def readline(self):
        return self.lines.pop(0) if self.lines else b""


KEY = bytes(range(16))
out = {}
for signed in (False, True):
    runtime, link, io = mp_app.build_app(b, machine)
    if signed:
        link = LinkRuntime(runtime, FrameVerifier({0: KEY}), require_signed=True)
        signer = FrameSigner(KEY)
        wrap = lambda line: ll.sign_line(signer, line)
    else:
        wrap = lambda line: line
    lines = [wrap(ll.encode("H", ["lockstep"]))]
    for k in range(1, 6):
        lines.append(wrap(ll.encode("I", ["%d" % (k * 10000), "10000", ll.f64_hex(0.0), ll.f64_hex(0.0),
                                          ll.f64_hex(-0.0980665), ll.f64_hex(0.0), ll.f64_hex(0.0),
                                          ll.f64_hex(0.0)])))
        lines.append(wrap(ll.encode("T", ["%d" % (k * 10000)])))
    lines.append(b"Tjunk\\n")                  # no tick: refused (unsigned, or a bad frame)
    lines.append(b"STATS\\n")
    lines.append(b"EXIT\\n")
    replies = []
    mp_app._write = replies.append
    link.handle_line(lines.pop(0))
    mp_app.lockstep(link, Lines(lines))
    stats = [r for r in replies if r[:6] == b"STATS,"]
    out["signed" if signed else "unsigned"] = {"stats": ll.decode(stats[-1])[1] if stats else None,
                                               "ticks": link.ticks,
                                               "s_lines": len([r for r in replies if r[:2] == b"S,"])}
print("LOCKSTEP " + json.dumps(out))
"""

BOARD_FILES = {"board.py": "boards/pico_rp2040/board.py", "mp_app.py": "boards/mp_common/mp_app.py",
               "mp_drivers.py": "boards/mp_common/mp_drivers.py",
               "machine.py": "harness/sim/virtual_board/frozen/machine.py"}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("interpreter", ["cpython", pytest.param("micropython", marks=pytest.mark.micropython)])
def test_stats_counts_the_tick_lines_signed_or_not(interpreter, tmp_path):
    r = run_board_script(interpreter, SCRIPT, BOARD_FILES, "LOCKSTEP", tmp_path)
    for mode in ("unsigned", "signed"):
        assert r[mode]["ticks"] == 5 and r[mode]["s_lines"] == 5, r      # the run itself worked
        n, total_us, max_us = (int(v) for v in r[mode]["stats"])
        assert n == 5, (mode, r[mode]["stats"])
        assert 0 <= max_us <= total_us, r[mode]["stats"]
