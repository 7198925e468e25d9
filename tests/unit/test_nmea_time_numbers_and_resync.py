"""NMEA sentences with a valid checksum but a malformed time or number field, and the reader's resynchronisation
after line noise (onboard.comms.nmea)."""
import math

import pytest

from onboard.comms import nmea

GGA = "GPGGA,%s,4807.038,N,01131.000,E,%s,%s,%s,%s,M,46.9,M,,"
RMC = "GPRMC,123519,A,4807.038,N,01131.000,E,%s,%s,230394,003.1,W"


def _sentence(body):
    return "$%s*%02X" % (body, nmea.checksum(body))


def _gga(time="123519", quality="1", sats="08", hdop="0.9", alt="545.4"):
    return _sentence(GGA % (time, quality, sats, hdop, alt))


@pytest.mark.parametrize("time", ["1235nan", "1235inf", "12351e1", "-12351", "+12351", " 23519", "1235.9",
                                  "993519", "126019", "123561", "1235191", "123519.x", "12_519"])
def test_a_malformed_or_out_of_range_utc_time_is_refused(time):
    with pytest.raises(nmea.NmeaError):
        nmea.parse(_gga(time=time))
    reader = nmea.NmeaReader()
    assert reader.feed((_gga(time=time) + "\r\n").encode()) == [] and reader.bad == 1


@pytest.mark.parametrize("field, value", [("hdop", "nan"), ("hdop", "inf"), ("alt", "nan"), ("alt", "-inf"),
                                          ("alt", "1e3"), ("sats", " 8"), ("sats", "+8"), ("quality", "-1"),
                                          ("quality", " 1")])
def test_a_gga_number_that_is_no_plain_decimal_is_refused(field, value):
    with pytest.raises(nmea.NmeaError):
        nmea.parse(_gga(**{field: value}))


@pytest.mark.parametrize("speed, course", [("nan", "084.4"), ("inf", "084.4"), ("022.4", "nan"), ("022.4", "-inf"),
                                           ("1e2", "084.4")])
def test_an_rmc_speed_or_course_that_is_no_plain_decimal_is_refused(speed, course):
    with pytest.raises(nmea.NmeaError):
        nmea.parse(_sentence(RMC % (speed, course)))


def test_valid_times_and_numbers_parse_as_before():
    f = nmea.parse(_gga(time="235959.99", alt="-12.5", hdop=".9"))
    assert f.utc_s == pytest.approx(86399.99) and f.alt_m == -12.5 and f.hdop == 0.9 and f.sats == 8
    assert nmea.parse(_gga(time="000000")).utc_s == 0.0
    assert nmea.parse(_gga(time="235960")).utc_s == 86400.0          # a leap second
    f = nmea.parse(_sentence(RMC % ("022.4", "084.4")))
    assert f.speed_mps == pytest.approx(22.4 * nmea.KNOT_MPS) and f.course_rad == pytest.approx(math.radians(84.4))
    f = nmea.parse(_sentence(RMC % ("", "")))
    assert f.speed_mps == 0.0 and f.course_rad == 0.0


def test_a_sentence_right_after_line_noise_is_read():
    """Noise (or the rest of a sentence cut short) before a ``$`` on the same line, and a run of noise over
    MAX_LINE that ends in the start of a sentence: the sentence still gives its fix."""
    good = _gga() + "\r\n"
    reader = nmea.NmeaReader()
    assert len(reader.feed(("\x07\x13xx" + good).encode())) == 1
    assert len(reader.feed(("$GPGGA,1235" + good).encode())) == 1          # a sentence cut short, then one whole
    noise = "z" * 150
    assert reader.feed((noise + good[:20]).encode()) == [] and reader.overlong == 1
    assert len(reader.feed(good[20:].encode())) == 1
    assert reader.fixes == 3 and reader.bad == 0
    assert reader.feed(("x" * 300).encode()) == [] and reader.overlong == 2      # still bounded
    assert reader.feed(b"\n") == [] and reader.bad == 1


@pytest.mark.parametrize("lat, lon", [(float("nan"), 0.0), (0.0, float("inf")), (90.0, 0.0), (-90.0, 5.0),
                                      (91.0, 0.0), (0.0, 181.0)])
def test_a_local_frame_origin_that_is_not_finite_or_at_a_pole_is_refused(lat, lon):
    """NaN made every position NaN; at a pole the east radius is ~0 (cos 90 deg in floats: 6e-17), so one metre
    east became 1e11 degrees of longitude."""
    with pytest.raises(ValueError, match="origin"):
        nmea.LocalFrame(lat, lon)


def test_a_local_frame_round_trips_near_its_origin():
    frame = nmea.LocalFrame(-33.7, 151.2)
    lat, lon = frame.to_latlon(*frame.to_ne(-33.701, 151.203))
    assert lat == pytest.approx(-33.701, abs=1e-12) and lon == pytest.approx(151.203, abs=1e-12)
