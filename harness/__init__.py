"""Simulation harness: simulated clock, vehicles, sensors, scenarios, reports.

The harness imports ``onboard`` and feeds it through the same entry points real
drivers use; ``onboard`` never imports the harness.
"""
