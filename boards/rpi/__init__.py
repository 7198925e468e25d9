"""Raspberry Pi ground-robot board: VESC motors over UART, MPU-6050 IMU over I2C, the
runtime as a systemd service with an MCAP log (see README.md in this folder)."""
