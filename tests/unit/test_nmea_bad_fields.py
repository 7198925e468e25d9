"""NMEA sentences whose checksum holds but whose coordinate fields are malformed (onboard.comms.nmea).

The NMEA checksum is an XOR of the characters: two flips of one bit in two characters, or a receiver's
own bug, leave it valid. A coordinate with a sign in its degrees, minutes of 60 or more, or minutes that
are no plain decimal is a bad sentence (NmeaError, counted ``bad`` by the reader), never a fix."""
import pytest

from onboard.comms import nmea


def _sentence(body):
    return "$%s*%02X" % (body, nmea.checksum(body))


GOOD_LAT = "4807.038"


@pytest.mark.parametrize("lat", ["-107.038", "48-7.038", "4899.000", "4860.000", "48nan", "48inf", "+807.038",
                                 " 807.038", "48-0.5"])
def test_a_malformed_latitude_with_a_valid_checksum_is_refused(lat):
    line = _sentence("GPGGA,123519,%s,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,," % lat)
    with pytest.raises(nmea.NmeaError):
        nmea.parse(line)
    reader = nmea.NmeaReader()
    assert reader.feed((line + "\r\n").encode("ascii")) == [] and reader.bad == 1


@pytest.mark.parametrize("lon", ["-1131.000", "01160.000", "011-1.000"])
def test_a_malformed_longitude_with_a_valid_checksum_is_refused(lon):
    with pytest.raises(nmea.NmeaError):
        nmea.parse(_sentence("GPRMC,123519,A,%s,N,%s,E,022.4,084.4,230394,003.1,W" % (GOOD_LAT, lon)))


def test_well_formed_coordinates_still_parse():
    f = nmea.parse(_sentence("GPGGA,123519,%s,S,17959.999,W,1,08,0.9,545.4,M,46.9,M,," % GOOD_LAT))
    assert f.lat_deg == pytest.approx(-(48 + 7.038 / 60)) and f.lon_deg == pytest.approx(-(179 + 59.999 / 60))
    f = nmea.parse(_sentence("GPGGA,123519,9000.0000,N,00000,E,1,08,0.9,545.4,M,46.9,M,,"))
    assert f.lat_deg == 90.0 and f.lon_deg == 0.0
