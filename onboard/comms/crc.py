"""CRCs used by the wire protocols (pure Python, MicroPython-compatible).

Table-driven CRC-16 with polynomial 0x1021, MSB first:
- CRC-16/XMODEM (init 0x0000): VESC UART frames.
- CRC-16/CCITT-FALSE (init 0xFFFF): the AVR firmware protocol, UWB frames.
Check values (for b"123456789"): XMODEM 0x31C3, CCITT-FALSE 0x29B1.
"""

def _make_table():
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ 0x1021) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
        table.append(crc)
    return table


_TABLE_1021 = _make_table()


def crc16_1021(data, init):
    crc = init
    table = _TABLE_1021
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[((crc >> 8) ^ b) & 0xFF]
    return crc


def crc16_xmodem(data):
    """CRC-16/XMODEM of ``data`` (bytes-like): poly 0x1021, init 0, no reflection."""
    return crc16_1021(data, 0x0000)


def crc16_ccitt_false(data):
    """CRC-16/CCITT-FALSE of ``data``: poly 0x1021, init 0xFFFF, no reflection."""
    return crc16_1021(data, 0xFFFF)
