"""Desk runs of the Raspberry Pi service without the IMU wired: the simulated MPU-6050 passed in.

``python -m harness.sim.rpi_bench run --config rpi.json`` is ``python -m boards.rpi run --config
rpi.json`` (same subcommands, options, output and exit status) with one more I2C bus:
``imu.bus = "bench-sim"`` is the harness's register-level MPU-6050 at rest
(``harness.sim.i2c.sim_mpu6050_bus``). The board code never imports the harness; this module
hands the simulated bus to ``boards.rpi.service`` through its ``i2c_buses`` parameter.
"""
import sys

from boards.rpi import service
from harness.sim.i2c import sim_mpu6050_bus

I2C_BUSES = {service.BENCH_SIM_BUS: sim_mpu6050_bus}


def main(argv=None):
    """``boards.rpi.service.main`` with the simulated buses of ``I2C_BUSES``; returns the exit status."""
    return service.main(argv, i2c_buses=I2C_BUSES, prog="python -m harness.sim.rpi_bench")


if __name__ == "__main__":
    sys.exit(main())
