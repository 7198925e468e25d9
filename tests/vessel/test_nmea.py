"""NMEA GGA/RMC parsing, checksums, the local frame and the reader's counters (onboard.comms.nmea)."""
import math

import pytest

from onboard.comms import nmea

GGA = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"
RMC = "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A"


def test_known_sentences():
    f = nmea.parse(GGA)
    assert f.kind == "GGA" and f.valid and f.sats == 8 and f.hdop == 0.9 and f.alt_m == 545.4
    assert f.lat_deg == pytest.approx(48 + 7.038 / 60) and f.lon_deg == pytest.approx(11 + 31.0 / 60)
    assert f.utc_s == 12 * 3600 + 35 * 60 + 19
    r = nmea.parse(RMC)
    assert r.kind == "RMC" and r.speed_mps == pytest.approx(22.4 * 1852 / 3600)
    assert r.course_rad == pytest.approx(math.radians(84.4))


@pytest.mark.parametrize("line", [GGA[:-1] + "0", GGA.replace("4807", "4808"), "GPGGA,1*00", "$GPGGA*ZZ",
                                  "$GPGGA,12,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*" ])
def test_bad_sentences_raise(line):
    body = line[1:line.rfind("*")] if line.startswith("$") and "*" in line else None
    if body is not None and line.endswith("*"):
        line = line + "%02X" % nmea.checksum(body)
    with pytest.raises(nmea.NmeaError):
        nmea.parse(line)


def test_writer_round_trip_and_frame():
    frame = nmea.LocalFrame(21.3099, -157.8887)
    for n, e in [(0.0, 0.0), (123.456, -78.9), (-1500.0, 2500.0)]:
        lat, lon = frame.to_latlon(n, e)
        f = nmea.parse(nmea.gga(3600.5, lat, lon))
        n2, e2 = frame.to_ne(f.lat_deg, f.lon_deg)
        assert abs(n2 - n) < 0.005 and abs(e2 - e) < 0.005       # 6 decimals of minutes: ~2 mm
    assert not nmea.parse(nmea.gga(1.0, 0, 0, quality=0)).valid


def test_reader_counts_and_splits():
    r = nmea.NmeaReader()
    frame = nmea.LocalFrame(10.0, 20.0)
    good = nmea.gga(1.0, *frame.to_latlon(5.0, 6.0))
    stream = good + "$GPGGA,garbage*00\r\n" + RMC + "\r\n" + nmea.gga(2.0, 0, 0, quality=0) + good[:20]
    fixes = r.feed(stream.encode("ascii"))
    assert len(fixes) == 1 and r.bad == 1 and r.ignored == 1 and r.no_fix == 1
    assert len(r.feed(good[20:].encode("ascii"))) == 1
    assert r.feed(b"x" * 200) == [] and r.overlong == 1


def test_gga_time_rounds_into_the_next_minute_never_to_60_seconds():
    """hhmmss.ss: 59.996 s past a minute is the next minute (the old "%05.2f" of the seconds wrote 60.00)."""
    for utc_s, text in ((59.996, "000100.00"), (3599.999, "010000.00"), (86399.996, "000000.00"),
                        (3600.5, "010000.50"), (75.25, "000115.25")):
        assert nmea.gga(utc_s, 1.0, 2.0).split(",")[1] == text, utc_s
