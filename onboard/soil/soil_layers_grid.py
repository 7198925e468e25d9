"""The grid map's layers as a Foxglove ``foxglove.Grid`` message (CPython host side: base64 of float32s),
so a log shows the soil layers and the FEE index map growing while one scrubs it.

Layout (Foxglove's Grid, foxglove_msgs 3.x: ``timestamp``, ``frame_id``, ``pose``, ``column_count``,
``cell_size`` {x, y}, ``row_stride``, ``cell_stride``, ``fields`` [{name, offset, type}], ``data``): frame
``world`` (ENU, x east, y north, z up; ``onboard.runtime.mcap_log``), the pose at the map's south-west
corner (east, north of ``origin_ne_m``), identity orientation, so a column runs east (j) and a row north (i):
row i, column j is map cell (i, j), the map's own storage order. One little-endian float32 per layer and
cell (``NumericType`` FLOAT32 = 7); JSON message encoding carries ``data`` as base64. The schema is
``onboard.runtime.mcap_log``'s (``GRID`` in ``FOXGLOVE_SCHEMAS``).
"""
import base64
import struct

from onboard.runtime.mcap_log import GRID, NUMERIC_TYPES  # noqa: F401 - GRID: the schema name, for callers
from onboard.soil.grid_map import FEE_INDEX, SOIL_KEYS, UPDATES, soil_mean, soil_var

FLOAT32 = NUMERIC_TYPES.index("FLOAT32")      # foxglove.NumericType
FLOAT32_MAX = 3.4028234663852886e38          # the largest finite float32
DEFAULT_LAYERS = [FEE_INDEX, UPDATES] + [soil_mean(k) for k in SOIL_KEYS] + [soil_var("phi_rad")]


def grid_message(grid, time_us, layers=None):
    """A ``foxglove.Grid`` dict of the ``layers`` (names; default :data:`DEFAULT_LAYERS`) of ``grid`` at
    ``time_us`` (module docstring); a non-finite value is written as 0, a finite one beyond float32's range
    as the largest float32 of its sign."""
    names = list(DEFAULT_LAYERS if layers is None else layers)
    stores = [grid.layer(name) for name in names]
    stride = 4 * len(names)
    pack = struct.Struct("<%df" % len(names)).pack
    buf = bytearray()
    for k in range(grid.size):
        vals = []
        for s in stores:
            v = s[k]
            if not v - v == 0:
                v = 0.0
            elif v > FLOAT32_MAX:
                v = FLOAT32_MAX
            elif v < -FLOAT32_MAX:
                v = -FLOAT32_MAX
            vals.append(v)
        buf += pack(*vals)
    t = int(time_us)
    return {"timestamp": {"sec": t // 1000000, "nsec": (t % 1000000) * 1000}, "frame_id": "world",
            "pose": {"position": {"x": grid.origin_e_m, "y": grid.origin_n_m, "z": 0.0},
                     "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}},
            "column_count": grid.n_east, "cell_size": {"x": grid.cell_m, "y": grid.cell_m},
            "row_stride": stride * grid.n_east, "cell_stride": stride,
            "fields": [{"name": name, "offset": 4 * k, "type": FLOAT32} for k, name in enumerate(names)],
            "data": base64.b64encode(bytes(buf)).decode("ascii")}
