"""Fixtures of the AVR firmware tests: the host build of link_protocol.c, the FIL builds."""
import ctypes
import os
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK_C = os.path.join(REPO_ROOT, "firmware", "arduino", "robot_link", "link_protocol.c")


class _Counters(ctypes.Structure):
    _fields_ = [("frames_ok", ctypes.c_uint16), ("crc_errors", ctypes.c_uint16),
                ("cobs_errors", ctypes.c_uint16), ("oversize", ctypes.c_uint16),
                ("empty", ctypes.c_uint16)]


def _decoder_struct(max_encoded, max_decoded):
    class Decoder(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_uint8 * max_encoded), ("frame", ctypes.c_uint8 * max_decoded),
                    ("len", ctypes.c_uint8), ("overflow", ctypes.c_uint8), ("frame_len", ctypes.c_uint8),
                    ("counters", _Counters)]
    return Decoder


class CLink:
    """The firmware's link_protocol.c compiled for the host (gcc), called through ctypes."""

    def __init__(self, so_path):
        from boards.arduino import protocol as P
        self.lib = ctypes.CDLL(so_path)
        self.lib.link_crc16.restype = ctypes.c_uint16
        self.lib.link_crc16.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.lib.link_encode_frame.restype = ctypes.c_size_t
        self.lib.link_encode_frame.argtypes = [ctypes.c_uint8, ctypes.c_uint8, ctypes.c_char_p,
                                               ctypes.c_size_t, ctypes.c_char_p]
        self.lib.link_cobs_decode.restype = ctypes.c_int
        self.lib.link_cobs_decode.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
        self.Decoder = _decoder_struct(P.MAX_ENCODED, P.MAX_DECODED)
        self.lib.link_decoder_feed.restype = ctypes.c_int
        self.lib.link_decoder_feed.argtypes = [ctypes.POINTER(self.Decoder), ctypes.c_uint8]
        self.lib.link_decoder_init.argtypes = [ctypes.POINTER(self.Decoder)]

    def crc16(self, data):
        return self.lib.link_crc16(bytes(data), len(data))

    def encode_frame(self, msg_type, seq, body):
        out = ctypes.create_string_buffer(128)
        n = self.lib.link_encode_frame(msg_type, seq, bytes(body), len(body), out)
        return out.raw[:n]

    def cobs_decode(self, data):
        out = ctypes.create_string_buffer(len(data) + 1)
        n = self.lib.link_cobs_decode(bytes(data), len(data), out)
        return None if n < 0 else out.raw[:n]

    def decode_stream(self, data):
        """Feed bytes one by one; returns (frames as bytes, counters dict)."""
        d = self.Decoder()
        self.lib.link_decoder_init(ctypes.byref(d))
        frames = []
        for b in bytes(data):
            if self.lib.link_decoder_feed(ctypes.byref(d), b) == 1:     # -1: a frame dropped
                frames.append(bytes(d.frame[:d.frame_len]))
        c = d.counters
        return frames, {"frames_ok": c.frames_ok, "crc_errors": c.crc_errors,
                        "cobs_errors": c.cobs_errors, "oversize": c.oversize, "empty": c.empty}


@pytest.fixture(scope="session")
def clink(tmp_path_factory):
    so = str(tmp_path_factory.mktemp("clink") / "liblink_protocol.so")
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror", "-shared", "-fPIC", LINK_C, "-o", so],
                   check=True)
    return CLink(so)


@pytest.fixture(scope="session")
def fil_built():
    """Firmware (both boards) and bridge built (make is a no-op when up to date)."""
    from harness.sim.avr_bridge import ensure_built
    ensure_built()
    return True
