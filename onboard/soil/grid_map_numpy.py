"""NumPy views of an ``onboard.soil.grid_map.GridMap``'s layers (CPython only; the harness's side).

A view shares the layer's storage (no copy): ``view(grid, name)[i, j]`` is cell (i, j), i north, j east,
and writing through it changes the map the pure code reads. Heights are up [m].
"""
import numpy as np


def view(grid, name):
    """Writable (n_north, n_east) float64 array over layer ``name`` (no copy)."""
    return np.frombuffer(grid.layer(name), dtype=np.float64).reshape(grid.n_north, grid.n_east)


def centres(grid):
    """(north_m, east_m): two (n_north, n_east) arrays of the cell centres."""
    n = grid.origin_n_m + (np.arange(grid.n_north) + 0.5) * grid.cell_m
    e = grid.origin_e_m + (np.arange(grid.n_east) + 0.5) * grid.cell_m
    return np.meshgrid(n, e, indexing="ij")


def load(grid, name, values):
    """Copy a (n_north, n_east) array into layer ``name`` (ValueError on a shape mismatch)."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (grid.n_north, grid.n_east):
        raise ValueError("layer %s needs shape %s, got %s" % (name, (grid.n_north, grid.n_east), values.shape))
    view(grid, name)[...] = values
