"""Onboard autonomy runtime.

Package ``__init__`` files under ``onboard`` import nothing heavy: the pure modules
(``onboard.core`` and the pure paths above it) must import on MicroPython.
"""
