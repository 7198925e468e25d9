"""Soil-property mapping with a blade (soil paper): the fundamental equation of earthmoving (``fee``), the
grid map with named layers (``grid_map``), blind mapping of the blade-swept soil (``blind_map``) and the
Bayesian soil-property layers with the FEE index map (``soil_layers``: Alg. 4, section 3.2).

The modules without ``_numpy`` in their name are pure and run on MicroPython (their MicroPython-tier case is
``tests/micropython/cases/test_soil_fee_map.py``); ``fee_numpy`` (the FEE over arrays, for windowed
estimators), ``grid_map_numpy`` (NumPy views of the layers, no copy) and ``blind_map_numpy`` (the erosion
kernel) are their NumPy companions, imported only on CPython, by the harness. ``cut_estimator`` (per-cut
property estimates by bounded nonlinear least squares, NumPy and SciPy), ``machine_forces`` (the force from
the drive torque and the lift-cylinder pressure) and ``loader_app`` (the loader's app: blind mapping and
per-cut estimation as parts on a Node) and ``soil_layers_grid`` (the layers as a ``foxglove.Grid`` message) are
host-side too: CPython only.
"""
