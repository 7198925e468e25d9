"""Faults of the MCAP log (``onboard.runtime.mcap_log.McapLog``): a message that cannot be encoded, a very
long log, a write error (disk full), a log closed twice."""
import json
import os
import random

import pytest
from mcap.reader import make_reader

from onboard.runtime.mcap_log import McapLog


def _read(path):
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        return [(ch.topic, msg.sequence, json.loads(msg.data))
                for _, ch, msg in reader.iter_messages(log_time_order=False)]


def test_a_message_that_cannot_be_encoded_loses_none_of_the_others_of_its_batch(tmp_path):
    path = str(tmp_path / "log.mcap")
    log = McapLog(path)
    log.log("/t", 1, {"a": 1})
    log.log("/t", 2, {"a": object()})           # not JSON
    log.log("/t", 3, {"a": 3})
    log.log("/u", 3, {"b": 4})
    with pytest.raises(TypeError):
        log.flush()
    log.log("/t", 4, {"a": 5})
    log.close()
    log.close()                                 # twice: nothing more
    assert [(t, m) for t, _, m in _read(path)] == [("/t", {"a": 1}), ("/t", {"a": 3}), ("/u", {"b": 4}),
                                                    ("/t", {"a": 5})]
    assert log.messages == 4


def test_sequence_numbers_wrap_around_in_a_very_long_log(tmp_path):
    """MCAP sequence numbers are uint32: a topic's 2**32-th message (~50 days at 1 kHz) wraps to 0 rather
    than failing every write of that topic from then on."""
    path = str(tmp_path / "log.mcap")
    log = McapLog(path, batch_records=1)
    log.log("/imu", 1, {"k": 0})
    log._seq["/imu"] = 2 ** 32 - 1               # as after 2**32 - 1 messages on the topic
    log.log("/imu", 2, {"k": 1})
    log.log("/imu", 3, {"k": 2})
    log.close()
    assert [(s, m["k"]) for _, s, m in _read(path)] == [(0, 0), (2 ** 32 - 1, 1), (0, 2)]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_log_on_a_full_disk_raises_and_still_closes_its_file():
    log = McapLog("/dev/full")
    rnd = random.Random(5)
    with pytest.raises(OSError):
        for k in range(5000):                    # incompressible: the chunks reach the file
            log.log("/t", k, {"s": "%032x" % rnd.getrandbits(128)})
        log.flush()
    with pytest.raises(OSError):
        log.close()
    assert log._fh.closed
    log.close()                                  # a second close: nothing more
