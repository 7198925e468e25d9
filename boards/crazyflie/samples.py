"""Sample types only the Crazyflie board produces (shared ones live in onboard.core.samples).

Plain classes with ``FIELDS`` like onboard.core.samples, so they log the same way.
"""
from onboard.core.samples import _Sample

# pm.state values of the crazyflie-firmware power manager
PM_BATTERY = 0
PM_CHARGING = 1
PM_CHARGED = 2
PM_LOW_POWER = 3
PM_SHUTDOWN = 4


class BatterySample(_Sample):
    """Battery voltage (V) and the firmware's power-manager state (pm.state)."""
    FIELDS = ("time_us", "voltage_v", "pm_state")

    def __init__(self, time_us, voltage_v, pm_state=PM_BATTERY):
        self.time_us = int(time_us)
        self.voltage_v = float(voltage_v)
        self.pm_state = int(pm_state)

    @property
    def low(self):
        return self.pm_state in (PM_LOW_POWER, PM_SHUTDOWN)


class DriverFault(_Sample):
    """A fault the driver reports: ``reason`` (e.g. "link_lost", "failsafe:stale:cmd"), when, details."""
    FIELDS = ("time_us", "drone", "reason", "detail")

    def __init__(self, time_us, drone, reason, detail=""):
        self.time_us = int(time_us)
        self.drone = str(drone)
        self.reason = str(reason)
        self.detail = str(detail)
