"""The boat's heading reader (boards.wamv.heading_nmea.HeadingNmea) resynchronises on "$" as the GNSS reader
(onboard.comms.nmea.NmeaReader) does: line noise or a sentence cut short before a good sentence on the same line
costs only the noise, and an overlong partial line keeps the sentence that starts after it."""
import pytest

from boards.wamv import heading_nmea as hn


class _Chunks:
    """A transport whose reads return the given byte chunks in turn, then nothing."""

    def __init__(self, chunks):
        self.chunks = list(chunks)

    def read(self, max_bytes=4096, timeout_s=0.0):
        return self.chunks.pop(0) if self.chunks else b""


def _reader(chunks):
    headings, rates = [], []
    h = hn.HeadingNmea(_Chunks(chunks), headings.append, rates.append, 10, 0.01, 0.002)
    for t in range(len(chunks) + 1):
        h.poll(1000 * t)
    return h, headings, rates


def test_noise_before_a_sentence_on_its_line_is_dropped_with_it():
    good = hn.hdt(0.5).encode()
    h, headings, rates = _reader([b"\xff\xfe\x00" + good, b"$HEHDT,12" + hn.rot(0.1).encode(), good])
    assert len(headings) == 2 and len(rates) == 1 and h.bad == 0
    assert headings[0].yaw_rad == pytest.approx(0.5, abs=1e-3) and rates[0].yaw_rate_radps == pytest.approx(0.1, 1e-3)


def test_an_overlong_partial_line_keeps_the_sentence_after_its_last_dollar():
    good = hn.hdt(-1.0)
    noise = b"x" * 150
    # the noise and a sentence's start arrive in one read, the sentence's rest in the next
    h, headings, _rates = _reader([noise + good[:10].encode(), good[10:].encode()])
    assert h.overlong == 1 and len(headings) == 1 and headings[0].yaw_rad == pytest.approx(-1.0, abs=1e-3)
    # a partial line longer than MAX_LINE without a "$" is dropped whole
    h, headings, _rates = _reader([b"y" * 200, good.encode()])
    assert h.overlong == 1 and len(headings) == 1


def test_garbage_alone_is_still_counted_bad():
    h, headings, _rates = _reader([b"garbage\r\n", hn.hdt(0.2).replace("*", "0*").encode()])
    assert headings == [] and h.bad == 2
