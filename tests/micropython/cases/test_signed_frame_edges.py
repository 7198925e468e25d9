"""Signed frames and the line link at their edges (onboard.comms.signed_frame, onboard.comms.line_link), pure: runs
under CPython (pytest) and inside MicroPython."""
from onboard.comms import line_link as ll
from onboard.comms import signed_frame as sf

KEY = bytes(range(16, 48))


def _raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc:
        return True
    return False


def test_a_negative_reserve_is_refused():
    """A verifier saving ``counter + reserve`` with a negative reserve would, after a reboot, accept the last
    frames it had accepted before (a replay): it is a SigningError, as is a reserve that is no integer."""
    for reserve in (-1, -100000, 1.5, "100", True, None):
        assert _raises(sf.SigningError, sf.FrameVerifier, {0: KEY}, reserve=reserve)
    assert sf.FrameVerifier({0: KEY}, reserve=0).reserve == 0


def test_a_stamp_that_is_no_finite_number_is_a_signing_error_and_changes_nothing():
    signer = sf.FrameSigner(KEY)
    for stamp in (float("inf"), float("-inf"), float("nan"), "5", True):
        assert _raises(sf.SigningError, signer.frame, b"x", stamp)
    assert signer.counter == 0
    signer.frame(b"x", 1000.7)                       # a finite float stamp: its whole part
    assert signer.counter == 1000
    signer.frame(b"x", 10)                           # below the last counter: last + 1
    assert signer.counter == 1001


def test_sign_refuses_a_counter_that_is_no_integer():
    for counter in (5.0, "5", None, -1, sf.COUNTER_MAX + 1):
        assert _raises(sf.SigningError, sf.sign, KEY, 0, 0, counter, b"x")
    frame = sf.sign(KEY, 0, 0, sf.COUNTER_MAX, b"x")
    assert sf.FrameVerifier({0: KEY}).open(frame) == b"x"


def test_a_crc_trailer_must_be_four_hex_digits():
    """``T,452`` has the CRC 0x0050: ``*0050`` (either case) opens it; a sign, a space, an underscore or a 0x
    prefix in the four characters is no CRC (CPython's int(x, 16) read them all as 0x50)."""
    assert ll.decode(b"T,452*0050\n") == ("T", ["452"])
    assert ll.encode("T", ["452"]) == b"T,452*0050\n"
    for trailer in (b"+050", b" 050", b"0_50", b"0x50", b"0X50"):
        assert _raises(ll.LinkError, ll.decode, b"T,452*" + trailer + b"\n"), trailer
    assert ll.decode(b"Q*ab24") == ("Q", [])


def test_siphash_refuses_a_message_or_key_given_as_an_integer_or_text():
    """``bytes(5)`` is five zero bytes: a message passed as the integer 5 was MACed as b"\\0" * 5."""
    from onboard.comms.siphash import siphash24
    key = bytes(range(16))
    for k, msg in ((key, 5), (key, True), (key, "abc"), ("0123456789abcdef", b"x")):
        assert _raises(ValueError, siphash24, k, msg)
    assert siphash24(key, b"").hex() == "310e0edd47db6f72"           # the reference's first vector
    assert siphash24(bytearray(key), [1, 2]) == siphash24(key, b"\x01\x02")
