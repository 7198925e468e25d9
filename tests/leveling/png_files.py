"""A minimal 8-bit grayscale PNG writer for the leveling tests' terrain files (written by hand, not by the
library the project's reader uses)."""
import struct
import zlib


def png_gray8(path, rows):
    """Write ``rows`` (a list of rows of 0-255 ints) to ``path`` as an 8-bit grayscale PNG."""
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + bytes(r) for r in rows)

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
