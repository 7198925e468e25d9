"""A board's ring log whose u32 record sequence wraps past 2**32 during the session, pulled and converted to MCAP
(onboard.deploy.pull_log.convert) and read back by ``harness replay`` (harness.replay.read_recording): every
tick in the order it ran, none reported lost. Before, the records from sequence 2**32 on were not written
(CPython's struct refused the number: counted unencodable) and those the reader found after a wrap were
sorted before the older ones."""
from harness.replay import read_recording
from onboard.core.samples import ImuSample
from onboard.deploy.pull_log import convert, describe
from onboard.runtime.node import STEP_TOPIC
from onboard.runtime.ring_log import RingLogSink, read_log_file

U32 = 1 << 32
CONFIG = {"app": "wrap", "config": {}, "code_version": "test", "node": "wrap"}


def test_a_recording_across_the_sequence_wrap_replays_every_tick_in_order(tmp_path):
    path = str(tmp_path / "board.bin")
    sink = RingLogSink(path, 65536, meta_bytes=1024)
    sink("/app/config", 0, CONFIG)
    sink.records = U32 - 31                  # 31 records before the wrap: the tick of k = 15 straddles it
    for k in range(40):
        t_us = (k + 1) * 10000
        sink("/app/in/imu", t_us, ImuSample(t_us, 10000, (0.0, 0.0, 0.01 * k), (0.0, 0.0, -0.098)))
        sink(STEP_TOPIC, t_us, {"time_us": t_us, "tick": k})
    sink.close()
    assert sink.unencodable == 0
    contents = read_log_file(path)
    assert contents.dropped == 0 and contents.torn == 0 and not contents.damaged
    assert (contents.first_seq, contents.last_seq) == (U32 - 31, 48)
    counts = convert(contents, str(tmp_path / "board.mcap"))
    assert counts["ticks"] == 39 and counts["left_out"] == 1          # the last tick is left out (may be cut)
    line = describe(contents, counts)
    assert "more than 2**32" in line and "oldest %d records" % (U32 - 31) not in line
    events, damage = read_recording(str(tmp_path / "board.mcap"))
    assert damage is None
    ticks = [data["tick"] for topic, _, _, data in events if topic == STEP_TOPIC]
    assert ticks == list(range(39))
    inputs = [time_us for topic, _, time_us, _ in events if topic == "/app/in/imu"]
    assert inputs == [(k + 1) * 10000 for k in range(40)]
