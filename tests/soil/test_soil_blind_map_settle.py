"""harness.scenarios.soil.soil_blind_map.settle: the map's loose soil comes to rest over the whole map, wherever
the map's origin lies."""
from harness.scenarios.soil import soil_blind_map
from onboard.soil.blind_map import BlindMapper
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap


class _Terrain:
    def __init__(self):
        self.iterations = None

    def settle(self, iterations):
        self.iterations = iterations


class _Episode:
    def __init__(self, grid):
        self.grid = grid
        self.world = type("World", (), {})()
        self.world.terrain = _Terrain()
        mapping = type("Mapping", (), {})()
        mapping.mapper = BlindMapper(grid)
        self.app = type("App", (), {"part": lambda _self, name: mapping})()


def _piles(origin_ne_m):
    """A map with a 0.5 m loose pile in its south-west and north-east corner cells, settled."""
    g = GridMap({"size_m": [2.0, 2.0], "cell_m": 0.1, "origin_ne_m": origin_ne_m})
    for k in (0, g.size - 1):
        g.layer(ELEVATION)[k] = 0.5
        g.layer(LOOSE)[k] = 0.5
    e = _Episode(g)
    soil_blind_map.settle(e, 5)
    assert e.world.terrain.iterations == 5
    return g.layer(ELEVATION)[0], g.layer(ELEVATION)[g.size - 1]


def test_settle_erodes_the_whole_map_when_the_map_is_moved():
    at_origin = _piles([0.0, 0.0])
    assert at_origin[0] < 0.5 and at_origin[1] < 0.5          # both piles slumped
    # the same map moved: the square settled was centred on the map's size, not its position, and missed it
    assert _piles([-5.0, 3.0]) == at_origin
