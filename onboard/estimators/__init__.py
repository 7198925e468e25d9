"""State estimators. Pure modules here run on MicroPython; NumPy/Cython paths are chosen by onboard.impl."""
