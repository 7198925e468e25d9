"""The runtime deployed to the virtual MicroPython board gives the same outputs as CPython (1e-9)."""
import pytest

from harness.sim import virtual_board
from harness.config import merge
from harness.scenarios import load
from harness.scenarios.context import RunContext
from onboard.comms import line_link as ll
from onboard.runtime.link_runtime import LinkRuntime, runtime_config

pytestmark = pytest.mark.timeout(180)


@pytest.mark.slow
@pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package")
@pytest.mark.parametrize("mpy", [False, True])
def test_board_matches_cpython(mpy):
    mod = load("mp-board")
    cfg = merge(mod.DEFAULTS, {"duration_s": 1.5, "mpy": mpy})
    metrics = mod.run(cfg, RunContext(3))
    assert metrics["ticks"] == 150
    assert metrics["board_report"]["ticks"] == 150 and metrics["board_report"]["bad_lines"] == 0
    assert metrics["board_report"]["updates"] > 10 and metrics["board_report"]["predicts"] > 100
    assert metrics["max_abs_diff"] <= 1e-9, metrics["worst_at"]
    assert metrics["success"]
    assert abs(metrics["final_north_m"]) > 0.05        # the robot moved: not a trivial all-zero run


def test_bad_lines_are_rejected_counted_and_change_nothing():
    mod = load("mp-board")
    board = mod._Board("pico_rp2040")
    from onboard.runtime.ground_robot import GroundRobotRuntime
    rt = GroundRobotRuntime(board.WAYPOINTS_NE_M, mod._RecordingMotors(), config=runtime_config(board))
    link = LinkRuntime(rt)
    ticks = mod.make_lines(merge(mod.DEFAULTS, {"duration_s": 0.3}), RunContext(1).random.stream("imu"),
                           RunContext(1).random.stream("aiding"), board)
    for lines in ticks[:10]:
        for line in lines:
            link.handle_line(line)
    x_before, p_before = list(rt.estimator.x), list(rt.estimator.P)
    good = ticks[10][0]
    bad = [good[:-6] + b"*0000\n",                          # CRC mismatch
           b"I,1,2,3*" + b"%04X\n" % ll.crc16_ccitt_false(b"I,1,2,3"),   # too few fields
           b"no trailer\n", b"Z*" + b"%04X\n" % ll.crc16_ccitt_false(b"Z"),   # unknown tag
           ll.encode("I", ["100", "0", "00"] + ["0" * 16] * 5)]  # dt_us = 0 and a bad float
    for line in bad:
        replies = link.handle_line(line)
        assert len(replies) == 1 and replies[0].startswith(b"X,")
    assert link.bad_lines == len(bad)
    assert rt.estimator.x == x_before and rt.estimator.P == p_before


def test_floats_cross_the_link_bit_exactly():
    for x in (0.1, -1e-300, 3.141592653589793, 1e308, -0.0):
        assert ll.hex_f64(ll.f64_hex(x)) == x
    with pytest.raises(ll.LinkError):
        ll.hex_f64("zz" * 8)
