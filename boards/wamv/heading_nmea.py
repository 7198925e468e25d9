"""Heading and rate of turn as NMEA 0183 on a serial line (pure parsing): the boat's heading source on a
Linux computer, e.g. a GNSS compass or an INS that outputs ``HDT`` and ``ROT`` sentences.

- ``$--HDT,<heading_deg>,T*hh``: true heading, degrees from true north towards east (the yaw of FRD in NED);
- ``$--THS,<heading_deg>,<mode>*hh``: true heading and status (mode ``A`` autonomous, ``E`` estimated
  (dead reckoning), ``M`` manual, ``S`` simulator, ``V`` not valid: dropped);
- ``$--ROT,<rate_deg_per_min>,<status>*hh``: rate of turn in degrees per minute, negative when the bow
  turns to port; status ``A`` valid, ``V`` invalid (dropped). Converted to the yaw rate about body down
  (rad/s, + turns right, the sign of ``onboard.vessel.samples.YawRateSample``): rad/s = deg/min * pi / 10800.

:class:`HeadingNmea` is an io part of the boat app (``boards.wamv.app``): it polls its transport at
``rate_hz`` and hands ``HeadingSample`` / ``YawRateSample`` s (stamped with the tick's time) to the app's
``on_heading`` / ``on_yaw_rate`` entries. Malformed and invalid sentences are counted, never fused. As
``onboard.comms.nmea.NmeaReader``, a sentence starts at the last ``$`` of its line (line noise or a sentence
cut short before it is dropped with it), and a partial line longer than ``nmea.MAX_LINE`` is dropped up to
its last ``$``.
"""
import math

from onboard.comms import nmea
from onboard.vessel.samples import HeadingSample, YawRateSample

DEG_PER_MIN_TO_RADPS = math.pi / 10800.0


def parse(line):
    """("heading", yaw_rad in (-pi, pi]) for HDT/THS, ("rate", yaw_rate_radps) for ROT, None for other
    sentence types; raises ``nmea.NmeaError`` for a corrupt, malformed, invalid or non-finite one."""
    f = nmea._fields(line)
    kind = f[0][2:] if len(f[0]) == 5 else ""
    if kind not in ("HDT", "THS", "ROT"):
        return None
    if len(f) < 3 or not f[1]:
        raise nmea.NmeaError("empty %s" % kind)
    try:
        value = float(f[1])
    except ValueError:
        raise nmea.NmeaError("bad field in %s: %r" % (kind, f[1]))
    if value - value != 0.0:
        raise nmea.NmeaError("non-finite %s %r" % (kind, f[1]))
    if kind == "ROT":
        if f[2] != "A":
            raise nmea.NmeaError("ROT not valid (status %r)" % f[2])
        return ("rate", value * DEG_PER_MIN_TO_RADPS)
    if kind == "THS" and f[2] not in ("A", "E"):
        raise nmea.NmeaError("THS not valid (mode %r)" % f[2])
    yaw = math.radians(value % 360.0)
    return ("heading", yaw - 2.0 * math.pi if yaw > math.pi else yaw)


def _sentence(body):
    return "$%s*%02X\r\n" % (body, nmea.checksum(body))


def hdt(yaw_rad, talker="HE"):
    """An HDT sentence for a heading (rad, from north towards east)."""
    return _sentence("%sHDT,%.2f,T" % (talker, math.degrees(yaw_rad) % 360.0))


def rot(yaw_rate_radps, talker="HE"):
    """A valid ROT sentence for a yaw rate (rad/s, + turns right)."""
    return _sentence("%sROT,%.2f,A" % (talker, yaw_rate_radps / DEG_PER_MIN_TO_RADPS))


class HeadingNmea:
    """io part: HDT/THS and ROT sentences on ``transport`` -> ``on_heading(HeadingSample)`` and
    ``on_yaw_rate(YawRateSample)``; ``heading_sigma_rad``, ``rate_sigma_radps``: the variances the samples
    carry. Counters: ``headings``, ``rates``, ``bad`` (corrupt, malformed or invalid), ``ignored`` (other
    sentence types), ``overlong``."""

    def __init__(self, transport, on_heading, on_yaw_rate, rate_hz, heading_sigma_rad, rate_sigma_radps):
        self.transport, self.on_heading, self.on_yaw_rate, self.rate_hz = transport, on_heading, on_yaw_rate, rate_hz
        self.heading_var_rad2 = heading_sigma_rad * heading_sigma_rad
        self.rate_var_rad2ps2 = rate_sigma_radps * rate_sigma_radps
        self._buf = ""
        self.headings = self.rates = self.bad = self.ignored = self.overlong = 0

    def attach(self, node):
        node.every("heading", self.rate_hz, self.poll, io=True)

    def poll(self, now_us):
        data = self.transport.read(4096, 0.0)
        if not data:
            return
        self._buf += bytes(data).decode("ascii", "replace")
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            start = line.rfind("$")            # a sentence starts at the line's last "$" (as nmea.NmeaReader)
            if start > 0:
                line = line[start:]
            if len(line) > nmea.MAX_LINE:
                self.overlong += 1
                continue
            try:
                got = parse(line)
            except nmea.NmeaError:
                self.bad += 1
                continue
            if got is None:
                self.ignored += 1
            elif got[0] == "heading":
                self.headings += 1
                self.on_heading(HeadingSample(now_us, got[1], self.heading_var_rad2))
            else:
                self.rates += 1
                self.on_yaw_rate(YawRateSample(now_us, got[1], self.rate_var_rad2ps2))
        if len(self._buf) > nmea.MAX_LINE:
            start = self._buf.rfind("$")
            self._buf = self._buf[start:] if start >= 0 and len(self._buf) - start <= nmea.MAX_LINE else ""
            self.overlong += 1

    def report(self):
        return {"headings": self.headings, "rates": self.rates, "bad": self.bad, "ignored": self.ignored,
                "overlong": self.overlong}
