"""Crazyflie board: the runtime's driver on the official cflib (see driver.py, README.md).

Nothing is imported here so that ``import boards.crazyflie`` stays cheap; use
``from boards.crazyflie.driver import CrazyflieDriver, CrazyflieSwarm``.
"""
