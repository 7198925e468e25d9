"""Raspberry Pi Pico (RP2040) running MicroPython: pins, rates, memory budget.

Wiring: H-bridge (e.g. DRV8833) PWM on GP16/GP18 with direction on GP17/GP19;
LSM6DSOX IMU breakout on I2C0 (SDA GP4, SCL GP5). Official RP2040 MicroPython
builds use single-precision floats: expect agreement with CPython at ~1e-6,
not 1e-9 (the virtual board, like CPython, uses doubles).
"""
from micropython import const

NAME = "pico_rp2040"
VERSION = "1"
# pins (GPIO numbers)
PIN_PWM_LEFT = const(16)
PIN_DIR_LEFT = const(17)
PIN_PWM_RIGHT = const(18)
PIN_DIR_RIGHT = const(19)
PIN_I2C_SDA = const(4)
PIN_I2C_SCL = const(5)
I2C_ID = const(0)
I2C_FREQ_HZ = const(400000)
IMU_I2C_ADDR = const(0x6A)
IMU_AXES_FRD = ((0, 1), (1, -1), (2, -1))   # body F, R, D <- sensor (axis, sign)
PWM_FREQ_HZ = const(20000)
# rates (Hz): control and aiding divide the IMU rate
IMU_RATE_HZ = const(100)
AIDING_RATE_HZ = const(10)
CONTROL_RATE_HZ = const(50)
HIL_WAIT_MS = const(2000)      # wait this long after READY for a host hello (H,lockstep)
# command link signing (onboard.comms.signed_frame): every host line is a signed line under the key that
# `python -m onboard.deploy BOARD --port PORT --link-key FILE` provisions at LINK_KEY_PATH; the verifier's
# counter mark survives reboots in LINK_MARK_PATH. LINK_SIGNING = "off" takes unsigned lines (an explicit
# choice: a bench board on a cable nobody else can reach); "required" with no key refuses every line
LINK_SIGNING = "required"
LINK_KEY_PATH = "/link.key"
LINK_MARK_PATH = "/link.ctr"
# robot
WHEELBASE_M = 0.30
WHEEL_RADIUS_M = 0.05
MAX_WHEEL_RADPS = 25.0
WAYPOINTS_NE_M = ((2.0, 0.0), (2.0, 2.0), (0.0, 2.0))
# memory budget: heap that must stay free after the runtime is built (bytes)
RAM_RESERVE_BYTES = const(40000)
# flight recorder (boards/mp_common/mp_app.py): the app's recording in a ring log on flash, the
# file preallocated at its full size on the first boot (LOG_BYTES 0: no log). manifest.json's
# log_path / log_bytes say the same to the deploy's flash check.
LOG_PATH = "/app_log.bin"
LOG_BYTES = const(262144)        # 256 KiB: ~14 s of lockstep/run at 100 Hz (~18.5 kB/s of records)
LOG_FLUSH_RECORDS = const(200)   # flush (a littlefs commit) every 200 records: ~0.65 s at ~310 records/s
