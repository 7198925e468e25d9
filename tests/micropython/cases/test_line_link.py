"""Line link (onboard.comms.line_link), pure: runs under CPython (pytest) and inside MicroPython.

A line whose CRC holds is read the same way by both interpreters: an integer field is an optional minus
and ASCII digits, nothing that only one interpreter's ``int()`` takes (underscores, spaces, a plus sign,
non-ASCII digits)."""
from onboard.comms import line_link as ll


def _refused(text):
    try:
        ll.parse_int(text)
    except ll.LinkError:
        return True
    return False


def test_integer_fields_are_plain_decimal():
    assert ll.parse_int("0") == 0 and ll.parse_int("-12") == -12 and ll.parse_int("1000000") == 1000000
    for bad in ("", "-", "1_000", " 5", "5 ", "+5", "0x10", "1.0", "1e3", "\u0661\u0662", "--1"):
        assert _refused(bad), bad


def test_a_line_with_a_valid_crc_and_an_odd_integer_is_refused():
    line = ll.encode("T", ["1_000"])
    tag, fields = ll.decode(line)
    assert tag == "T" and _refused(fields[0])
