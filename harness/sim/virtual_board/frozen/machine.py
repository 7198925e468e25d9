"""SIMULATION SHIM of MicroPython's `machine` module for the virtual board.

Not the real `machine` module: the WebAssembly MicroPython has no hardware, so
this frozen module stands in for the parts the board packages use (Pin, PWM,
I2C, UART constructors, freq, unique_id, reset). Pins and PWM duty cycles are
recorded so tests can read them back (`Pin.value()`, `PWM.duty_u16()`); I2C has
no devices attached (scan() is empty, reads raise OSError(ENODEV)).
"""
import sys

SIMULATED = True
_FREQ_HZ = 125000000


def freq(hz=None):
    global _FREQ_HZ
    if hz is None:
        return _FREQ_HZ
    _FREQ_HZ = int(hz)


def unique_id():
    return b"VBOARD01"


def reset():
    raise SystemExit("machine.reset() on the virtual board: use a soft reset (Ctrl-D)")


def soft_reset():
    raise SystemExit("soft reset")


class Pin:
    IN = 0
    OUT = 1
    PULL_UP = 1
    PULL_DOWN = 2

    def __init__(self, id, mode=-1, pull=-1, value=None):
        self.id = id
        self.mode = mode
        self._value = 0 if value is None else int(bool(value))

    def init(self, mode=-1, pull=-1, value=None):
        self.mode = mode
        if value is not None:
            self._value = int(bool(value))

    def value(self, v=None):
        if v is None:
            return self._value
        self._value = int(bool(v))

    def on(self):
        self._value = 1

    def off(self):
        self._value = 0

    def __call__(self, v=None):
        return self.value(v)

    def __repr__(self):
        return "Pin(%r) [simulated]" % (self.id,)


class PWM:
    def __init__(self, pin, freq=1000, duty_u16=0):
        self.pin = pin
        self._freq = freq
        self._duty = duty_u16

    def freq(self, hz=None):
        if hz is None:
            return self._freq
        self._freq = hz

    def duty_u16(self, d=None):
        if d is None:
            return self._duty
        d = int(d)
        if d < 0 or d > 65535:
            raise ValueError("duty_u16 out of range")
        self._duty = d

    def deinit(self):
        self._duty = 0


class I2C:
    def __init__(self, id=0, scl=None, sda=None, freq=400000):
        self.id = id
        self.scl = scl
        self.sda = sda
        self.freq = freq

    def scan(self):
        return []

    def readfrom_mem_into(self, addr, reg, buf):
        raise OSError(19)        # ENODEV: nothing on the simulated bus

    def writeto_mem(self, addr, reg, buf):
        raise OSError(19)


class UART:
    """The virtual board's only serial line is its REPL/USB link (sys.stdin/stdout)."""

    def __init__(self, id=0, baudrate=115200, **kw):
        self.id = id
        self.baudrate = baudrate

    def write(self, data):
        return sys.stdout.write(data if isinstance(data, str) else data.decode())

    def read(self, n=1):
        return sys.stdin.buffer.read(n)
