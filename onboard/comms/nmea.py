"""NMEA 0183 GNSS sentences (pure): checksum, GGA and RMC parsing, fixes in a local NED frame, and the
GGA writer the harness's simulated receiver uses.

A sentence is ``$<talker><type>,<fields>*<hh>\\r\\n`` with ``hh`` the XOR of the bytes between ``$`` and
``*`` in hexadecimal. Latitude ``ddmm.mmmm,N|S``, longitude ``dddmm.mmmm,E|W``, UTC ``hhmmss.ss``.

- GGA (fix data): time, latitude, longitude, fix quality (0: no fix), satellites, HDOP, altitude (m).
- RMC (recommended minimum): time, status ``A`` (valid) / ``V``, latitude, longitude, speed over ground
  (knots), course over ground (deg from true north).

:class:`LocalFrame` maps latitude/longitude (deg) to (north_m, east_m) about an origin by the local
flat-earth (equirectangular) approximation on the WGS-84 radii of curvature at the origin, good to
millimetres within a few kilometres (a RobotX course). :class:`NmeaReader` splits a byte stream into
sentences and counts what it drops (bad checksum, malformed, no fix). Bad input raises
:class:`NmeaError` (a ValueError) from the parsers and is counted, never fused, by the reader.
"""
import math

WGS84_A_M = 6378137.0
WGS84_E2 = 6.69437999014e-3
KNOT_MPS = 1852.0 / 3600.0
MAX_LINE = 100                 # NMEA 0183 sentences are at most 82 characters; longer lines are dropped


class NmeaError(ValueError):
    pass


def checksum(body):
    """XOR of the characters of ``body`` (the text between '$' and '*') as an int."""
    c = 0
    for ch in body:
        c ^= ord(ch)
    return c


def _fields(line):
    line = line.strip()
    if not line.startswith("$") or len(line) < 9 or line[len(line) - 3] != "*":
        raise NmeaError("not an NMEA sentence: %r" % (line[:20],))
    body = line[1:len(line) - 3]
    try:
        want = int(line[len(line) - 2:], 16)
    except ValueError:
        raise NmeaError("bad checksum field in %r" % (line[:20],))
    if checksum(body) != want:
        raise NmeaError("checksum mismatch in %r" % (line[:20],))
    return body.split(",")


def _digits(text):
    """True for a non-empty run of the digits 0-9 (no sign, space, exponent, "nan" that int/float take)."""
    if not text:
        return False
    for ch in text:
        if ch < "0" or ch > "9":
            return False
    return True


def _angle(value, hemi, deg_digits):
    if len(value) < deg_digits + 2 or hemi not in ("N", "S", "E", "W"):
        raise NmeaError("bad coordinate %r %r" % (value, hemi))
    whole, _, frac = value[deg_digits:].partition(".")
    if not (_digits(value[:deg_digits]) and _digits(whole) and (not frac or _digits(frac))):
        raise NmeaError("bad coordinate %r" % (value,))
    minutes = float(value[deg_digits:])
    if minutes >= 60.0:
        raise NmeaError("coordinate minutes out of range %r" % (value,))
    deg = int(value[:deg_digits]) + minutes / 60.0
    if deg > (90.0 if deg_digits == 2 else 180.0):
        raise NmeaError("coordinate out of range %r" % (value,))
    return -deg if hemi in ("S", "W") else deg


def _decimal(text):
    """True for a plain decimal number: an optional "-", digits with at most one ".", at least one digit (no
    "+", space, exponent, "nan" or "inf", which float() also takes)."""
    digits = text[1:] if text[:1] == "-" else text
    whole, _, frac = digits.partition(".")
    return bool(whole or frac) and (not whole or _digits(whole)) and (not frac or _digits(frac))


def _number(value, what):
    """The float of a plain decimal field (``_decimal``); NmeaError otherwise."""
    if not _decimal(value):
        raise NmeaError("bad %s %r" % (what, value))
    return float(value)


def _count(value, what):
    """The int of a field of digits, 0 when empty; NmeaError otherwise (a sign, a space)."""
    if not value:
        return 0
    if not _digits(value):
        raise NmeaError("bad %s %r" % (what, value))
    return int(value)


def _time_s(value):
    """Seconds of the UTC day (0 <= s < 86401, a leap second included) from ``hhmmss`` or ``hhmmss.ss``."""
    whole, dot, frac = value.partition(".")
    if len(whole) != 6 or not _digits(whole) or (dot and frac and not _digits(frac)):
        raise NmeaError("bad UTC time %r" % (value,))
    h, m, sec = int(whole[0:2]), int(whole[2:4]), float(value[4:])
    if h > 23 or m > 59 or sec >= 61.0:
        raise NmeaError("UTC time out of range %r" % (value,))
    return h * 3600 + m * 60 + sec


class Fix:
    """One parsed position: ``kind`` "GGA" or "RMC", ``utc_s`` seconds of the UTC day, ``lat_deg``,
    ``lon_deg``, ``valid`` (GGA quality > 0 / RMC status A), ``hdop`` (GGA, else None), ``sats`` (GGA),
    ``alt_m`` (GGA), ``speed_mps`` and ``course_rad`` (RMC, else None)."""

    def __init__(self, kind, utc_s, lat_deg, lon_deg, valid, hdop=None, sats=None, alt_m=None, speed_mps=None,
                 course_rad=None):
        self.kind, self.utc_s, self.lat_deg, self.lon_deg, self.valid = kind, utc_s, lat_deg, lon_deg, valid
        self.hdop, self.sats, self.alt_m, self.speed_mps, self.course_rad = hdop, sats, alt_m, speed_mps, course_rad


def parse(line):
    """A :class:`Fix` from one GGA or RMC sentence (any talker), None for other sentence types; raises
    :class:`NmeaError` for a malformed or corrupted one."""
    f = _fields(line)
    kind = f[0][2:] if len(f[0]) == 5 else ""
    try:
        if kind == "GGA" and len(f) >= 10:
            quality = _count(f[6], "fix quality")
            if quality == 0:
                return Fix("GGA", _time_s(f[1]), None, None, False)
            return Fix("GGA", _time_s(f[1]), _angle(f[2], f[3], 2), _angle(f[4], f[5], 3), True,
                       _number(f[8], "HDOP") if f[8] else None, _count(f[7], "satellite count"),
                       _number(f[9], "altitude") if f[9] else None)
        if kind == "RMC" and len(f) >= 9:
            if f[2] != "A":
                return Fix("RMC", _time_s(f[1]), None, None, False)
            return Fix("RMC", _time_s(f[1]), _angle(f[3], f[4], 2), _angle(f[5], f[6], 3), True,
                       speed_mps=_number(f[7] or "0", "speed") * KNOT_MPS,
                       course_rad=math.radians(_number(f[8] or "0", "course")))
    except ValueError as e:
        if isinstance(e, NmeaError):
            raise
        raise NmeaError("bad field in %s: %s" % (kind, e))
    return None


def _coord(deg, deg_digits, pos, neg):
    hemi = pos if deg >= 0 else neg
    deg = abs(deg)
    d = int(deg)
    minutes = (deg - d) * 60.0
    if minutes >= 59.9999995:          # rounding to 6 decimals would print 60.000000
        d, minutes = d + 1, 0.0
    fmt = "%02d%09.6f" if deg_digits == 2 else "%03d%09.6f"
    return fmt % (d, minutes), hemi


def gga(utc_s, lat_deg, lon_deg, quality=1, sats=10, hdop=0.9, alt_m=0.0, talker="GP"):
    """A GGA sentence (with checksum and CRLF) for a fix; ``quality`` 0 writes an empty position."""
    # whole centiseconds first, so that 59.996 s becomes the next minute, never "60.00" (hhmmss.ss)
    cs = int(round(utc_s * 100.0)) % 8640000
    h, cs = cs // 360000, cs % 360000
    m, cs = cs // 6000, cs % 6000
    t = "%02d%02d%02d.%02d" % (h, m, cs // 100, cs % 100)
    if quality:
        la, lh = _coord(lat_deg, 2, "N", "S")
        lo, oh = _coord(lon_deg, 3, "E", "W")
        body = "%sGGA,%s,%s,%s,%s,%s,%d,%02d,%.1f,%.1f,M,0.0,M,," % (talker, t, la, lh, lo, oh, quality, sats, hdop,
                                                                      alt_m)
    else:
        body = "%sGGA,%s,,,,,0,00,,,M,,M,," % (talker, t)
    return "$%s*%02X\r\n" % (body, checksum(body))


class LocalFrame:
    """Latitude/longitude (deg) <-> local (north_m, east_m) about ``origin`` (lat_deg, lon_deg). ValueError for an
    origin that is not finite, at a pole (|lat| = 90: east is undefined there) or outside [-90, 90] x [-180, 180]."""

    def __init__(self, lat0_deg, lon0_deg):
        self.lat0_deg, self.lon0_deg = float(lat0_deg), float(lon0_deg)
        if not (-90.0 < self.lat0_deg < 90.0 and -180.0 <= self.lon0_deg <= 180.0):
            raise ValueError("local frame origin (%r, %r) deg: latitude must be in (-90, 90) and longitude in "
                             "[-180, 180]" % (lat0_deg, lon0_deg))
        s = math.sin(math.radians(self.lat0_deg))
        w = math.sqrt(1.0 - WGS84_E2 * s * s)
        self.r_north_m = WGS84_A_M * (1.0 - WGS84_E2) / (w * w * w)      # meridian radius of curvature
        self.r_east_m = WGS84_A_M / w * math.cos(math.radians(self.lat0_deg))  # prime vertical x cos(lat)

    def to_ne(self, lat_deg, lon_deg):
        return (math.radians(lat_deg - self.lat0_deg) * self.r_north_m,
                math.radians(lon_deg - self.lon0_deg) * self.r_east_m)

    def to_latlon(self, north_m, east_m):
        return (self.lat0_deg + math.degrees(north_m / self.r_north_m),
                self.lon0_deg + math.degrees(east_m / self.r_east_m))


class NmeaReader:
    """Sentences from a byte stream (``feed(data)`` -> the complete lines' valid fixes of ``kinds``).
    A sentence starts at the last ``$`` of its line (bytes before it, line noise or the rest of a sentence
    cut short, are dropped with it), so a sentence right after garbage still parses; a partial line longer
    than MAX_LINE is dropped up to its last ``$``. Counters: ``sentences`` (complete lines), ``fixes``,
    ``no_fix``, ``bad`` (checksum or malformed), ``ignored`` (other sentence types), ``overlong``."""

    def __init__(self, kinds=("GGA",)):
        self.kinds = tuple(kinds)
        self._buf = ""
        self.sentences = self.fixes = self.no_fix = self.bad = self.ignored = self.overlong = 0

    def feed(self, data):
        if isinstance(data, (bytes, bytearray)):
            data = bytes(data).decode("ascii", "replace")
        self._buf += data
        out = []
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self.sentences += 1
            start = line.rfind("$")
            if start > 0:
                line = line[start:]
            if len(line) > MAX_LINE:
                self.overlong += 1
                continue
            try:
                fix = parse(line)
            except NmeaError:
                self.bad += 1
                continue
            if fix is None or fix.kind not in self.kinds:
                self.ignored += 1
            elif not fix.valid:
                self.no_fix += 1
            else:
                self.fixes += 1
                out.append(fix)
        if len(self._buf) > MAX_LINE:
            start = self._buf.rfind("$")
            self._buf = self._buf[start:] if start >= 0 and len(self._buf) - start <= MAX_LINE else ""
            self.overlong += 1
        return out

    def report(self):
        return {"sentences": self.sentences, "fixes": self.fixes, "no_fix": self.no_fix, "bad": self.bad,
                "ignored": self.ignored, "overlong": self.overlong}
