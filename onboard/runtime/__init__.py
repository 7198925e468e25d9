"""Runtime: scheduler with rate groups, input watchdog, failsafe, clocks (MicroPython-compatible)."""
