"""Pure-Python core shared by every board: runs unchanged on CPython and MicroPython.

Rules (see CONVENTIONS.md): no numpy, no typing at runtime, no dataclasses, no
``@micropython.native``/``viper``; integer microsecond time passed in.
"""
