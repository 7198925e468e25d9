"""Blind mapping (onboard.soil.blind_map; soil paper Algs. 1-3, 5 and eq. 12): exact volumes of a straight
cut, FEE geometry recovered on planar surfaces, width, swept footprint without aliasing, erosion's
conservation, repose and masks, the sweep trigger and bad poses."""
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onboard.soil import blind_map
from onboard.soil.blind_map import BladePose, BlindMapError, BlindMapper
from onboard.soil.grid_map import ELEVATION, LOOSE, GridMap

R = math.radians
DT_US = 16667          # 60 Hz


def _drive(mapper, start_ne, heading_rad, length_m, height_of, pitch_rad, speed_mps=1.0, roll_rad=0.0,
           yaw_offset_rad=0.0, t0_us=0):
    """Poses at 60 Hz along a straight line; the edge centre's height (up) is height_of(north, east)."""
    records = []
    steps = max(1, int(round(length_m / speed_mps * 60.0)))
    for k in range(steps + 1):
        s = length_m * k / steps
        n = start_ne[0] + s * math.cos(heading_rad)
        e = start_ne[1] + s * math.sin(heading_rad)
        rec = mapper.on_blade_pose(BladePose(t0_us + k * DT_US, n, e, -height_of(n, e), roll_rad, pitch_rad,
                                             heading_rad + yaw_offset_rad))
        if rec is not None:
            records.append(rec)
    last = mapper.flush()
    if last is not None:
        records.append(last)
    return records


@pytest.mark.parametrize("erosion", [False, True])
def test_straight_cut_through_flat_ground_moves_exact_volumes(erosion):
    """Blade 1.85 m wide centred at east 2.0 m (edge over east 1.075..2.925: 18 cell centres across), cut
    0.1 m deep from north 1.02 m to 3.02 m (20 cell centres along): 360 cells x 0.1 m x 0.01 m^2 of bank."""
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"erosion": {"enabled": erosion}, "pile": {"side_spill_per_m": 0.0}})
    records = _drive(m, (1.02, 2.0), 0.0, 2.0, lambda n, e: -0.1, R(10.0))
    bank = sum(r.bank_cut_m3 for r in records)
    assert bank == pytest.approx(0.36, abs=1e-12)
    assert m.lost_m3 == 0.0
    assert g.volume_m3(LOOSE) == pytest.approx(1.2 * 0.36, abs=1e-12)
    assert g.volume_m3(ELEVATION) == pytest.approx(0.2 * 0.36, abs=1e-12)
    heights = g.layer(ELEVATION)
    for i in range(g.n_north):
        for j in range(g.n_east):
            n, e = g.centre(i, j)
            in_lane = 1.02 < n < 3.02 and 1.075 < e < 2.925
            if not erosion:
                if in_lane:
                    assert heights[g.flat(i, j)] == pytest.approx(-0.1, abs=1e-12)
                elif n < 3.02 or not 1.075 < e < 2.925:
                    assert heights[g.flat(i, j)] == 0.0          # deposits only ahead of the final edge
    assert all(r.valid for r in records[:-1])


def test_deposit_cells_lie_outside_the_swept_footprint_along_m_hat():
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"erosion": {"enabled": False}, "deposit_normal_weight": 0.5})
    # blade yawed 25 deg right of its travel north: m_hat lies between travel and blade normal
    rec = None
    for k in range(10):
        rec = m.on_blade_pose(BladePose(k * DT_US, 1.0 + 0.03 * k, 2.0, 0.1, 0.0, R(10.0), R(25.0))) or rec
    rec = m.flush() or rec
    assert rec is not None and rec.cut_cells > 0
    mn, me = rec.m_hat_ne
    assert me > 0.1 and mn > 0.5
    lane = blind_map.swept_footprint(g, [BladePose(0, 1.0, 2.0, 0.1, 0.0, R(10.0), R(25.0)),
                                         BladePose(1, 1.27, 2.0, 0.1, 0.0, R(10.0), R(25.0))], 1.85)
    loose = g.layer(LOOSE)
    deposited = [k for k in range(g.size) if loose[k] > 0.0]
    assert deposited and not any(k in lane for k in deposited)


def _planar_case(alpha_deg, rho_deg, depth_m, heading_deg, cell_m=0.05):
    """One sweep on the plane rising alpha along the heading; the blade's face at rho - alpha from the
    horizontal, its edge at ``depth_m`` perpendicular to the surface."""
    alpha, heading = R(alpha_deg), R(heading_deg)
    t = (math.cos(heading), math.sin(heading))
    g = GridMap({"size_m": [8.0, 8.0], "cell_m": cell_m})
    h = g.layer(ELEVATION)
    for i in range(g.n_north):
        for j in range(g.n_east):
            n, e = g.centre(i, j)
            h[g.flat(i, j)] = (n * t[0] + e * t[1]) * math.tan(alpha)
    m = BlindMapper(g, {"erosion": {"enabled": False}, "blade_height_sigma_m": 0.0})
    pitch = R(90.0 - (rho_deg - alpha_deg))

    def edge_height(n, e):
        return (n * t[0] + e * t[1]) * math.tan(alpha) - depth_m / math.cos(alpha)

    records = _drive(m, (3.0, 3.0), heading, 0.12, edge_height, pitch)
    return records[0]


@pytest.mark.parametrize("alpha_deg,rho_deg,depth_m,heading_deg", [
    (0.0, 80.0, 0.2, 0.0), (10.0, 85.0, 0.15, 0.0), (-8.0, 70.0, 0.05, 30.0), (15.0, 95.0, 0.3, 30.0),
    (5.0, 80.0, 0.1, 115.0), (-12.0, 88.0, 0.25, -60.0)])
def test_fee_geometry_recovered_on_a_planar_surface(alpha_deg, rho_deg, depth_m, heading_deg):
    rec = _planar_case(alpha_deg, rho_deg, depth_m, heading_deg)
    assert rec.valid, rec.reason
    assert abs(math.degrees(rec.alpha_rad) - alpha_deg) < 0.5
    assert abs(math.degrees(rec.rho_rad) - rho_deg) < 0.5
    assert abs(rec.depth_m - depth_m) < 0.01
    assert all(abs(d - depth_m) < 0.01 for d in rec.depths_m)
    assert rec.fit_rms_m < 1e-9
    assert rec.width_m == pytest.approx(1.85, abs=0.05 + 1e-9)
    assert len(rec.theta_k()) == 5 and rec.theta_k(0)[4] == 0.0 < rec.theta_k()[4]


def test_width_shrinks_with_yaw_and_partial_contact():
    g = GridMap({"size_m": [6.0, 6.0], "cell_m": 0.05})
    m = BlindMapper(g, {"erosion": {"enabled": False}})
    rec = _drive(m, (1.0, 3.0), 0.0, 0.12, lambda n, e: -0.1, R(10.0), yaw_offset_rad=R(20.0))[0]
    assert rec.width_m == pytest.approx(1.85 * math.cos(R(20.0)), abs=0.05)
    g2 = GridMap({"size_m": [6.0, 6.0], "cell_m": 0.05})
    h = g2.layer(ELEVATION)
    for i in range(g2.n_north):
        for j in range(g2.n_east):
            if g2.centre(i, j)[1] > 3.0:
                h[g2.flat(i, j)] = -1.0           # a ditch under the blade's right half
    m2 = BlindMapper(g2, {"erosion": {"enabled": False}})
    rec2 = _drive(m2, (1.0, 3.0), 0.0, 0.12, lambda n, e: -0.1, R(10.0))[0]
    assert rec2.width_m == pytest.approx(0.925, abs=0.05)


@pytest.mark.parametrize("centre_east_m", [2.0, 2.03, 2.05, 2.075])
def test_full_contact_width_is_the_blade_width_wherever_the_lane_lies_on_the_grid(centre_east_m):
    """Alg. 2's w at the map's resolution: the 1.85 m blade covers 18 or 19 cell centres of 0.1 m cells
    depending on where its centre lies; w is the blade's width in full contact either way (not 1.80 m when
    the ends fall just short of the next centres), and less under partial contact."""
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"erosion": {"enabled": False}})
    records = _drive(m, (1.02, centre_east_m), 0.0, 1.0, lambda n, e: -0.1, R(10.0))
    assert records and all(r.width_m == pytest.approx(1.85, abs=1e-9) for r in records if r.valid)
    g2 = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    h = g2.layer(ELEVATION)
    for i in range(g2.n_north):
        for j in range(g2.n_east):
            if g2.centre(i, j)[1] > centre_east_m + 0.4:
                h[g2.flat(i, j)] = -1.0           # a ditch under the blade's right part: 0.4 + 0.925 m in contact
    m2 = BlindMapper(g2, {"erosion": {"enabled": False}})
    part = [r for r in _drive(m2, (1.02, centre_east_m), 0.0, 1.0, lambda n, e: -0.1, R(10.0)) if r.valid]
    assert part and all(r.width_m == pytest.approx(1.325, abs=0.05 + 1e-9) for r in part)


def test_one_long_sweep_cuts_every_cell_it_passes_over():
    """No aliasing: a single jump of 1 m and 20 deg of yaw between two poses still tests every cell centre
    under the swept surface; for a pure translation the footprint is the parallelogram exactly."""
    g = GridMap({"size_m": [6.0, 6.0], "cell_m": 0.1})
    p0 = BladePose(0, 1.03, 3.01, 0.2, 0.0, 0.0, 0.0)
    p1 = BladePose(1, 2.03, 3.21, 0.1, 0.0, 0.0, 0.0)
    fp = blind_map.swept_footprint(g, [p0, p1], 1.85)
    poly = [(1.03, 3.01 - 0.925), (1.03, 3.01 + 0.925), (2.03, 3.21 + 0.925), (2.03, 3.21 - 0.925)]
    cells = sorted(g.flat(i, j) for i, j in g.polygon_cells(poly))
    assert sorted(fp) == cells
    for k in cells:
        n, _e = g.centre(*g.cell_of_flat(k))
        assert fp[k] == pytest.approx(-0.2 + 0.1 * (n - 1.03), abs=1e-12)
    p2 = BladePose(2, 2.03, 3.21, 0.1, 0.0, 0.0, R(20.0))
    turned = blind_map.swept_footprint(g, [p1, p2], 1.85)
    dense = {}
    for s in range(201):
        yaw = R(20.0) * s / 200
        for q in range(-92, 93):
            lam = q / 100.0
            ij = g.index_of(2.03 - lam * math.sin(yaw), 3.21 + lam * math.cos(yaw))
            dense[g.flat(*ij)] = True
    # every cell the turning edge passes within 2 cm of its centre is in the footprint
    for k in dense:
        n, e = g.centre(*g.cell_of_flat(k))
        r = math.hypot(n - 2.03, e - 3.21)
        ang = math.atan2(-(n - 2.03), e - 3.21)
        if 0.05 < r < 0.90 and R(1.0) < ang < R(19.0):
            assert k in turned


def test_check_movement_and_bad_poses():
    g = GridMap({"size_m": [4.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"min_translation_m": 0.1, "min_rotation_rad": R(2.0)})
    assert m.on_blade_pose(BladePose(0, 1.0, 2.0, -0.5)) is None
    assert m.on_blade_pose(BladePose(10, 1.05, 2.0, -0.5)) is None
    assert m.on_blade_pose(BladePose(20, 1.1, 2.0, -0.5)) is not None
    assert m.on_blade_pose(BladePose(30, 1.1, 2.0, -0.5, 0.0, 0.0, R(1.0))) is None
    rec = m.on_blade_pose(BladePose(40, 1.1, 2.0, -0.5, 0.0, 0.0, R(2.5)))
    assert rec is not None and not rec.valid and rec.reason == "no cut"
    with pytest.raises(BlindMapError, match="backwards"):
        m.on_blade_pose(BladePose(5, 1.2, 2.0, -0.5))
    with pytest.raises(BlindMapError, match="finite"):
        BladePose(0, float("nan"), 0.0, 0.0)
    # driving south with the blade facing north: it cuts (back-drags) but not edge-first, so no FEE
    backwards = BlindMapper(GridMap({"size_m": [4.0, 4.0], "cell_m": 0.1}), {"erosion": {"enabled": False}})
    recs = _drive(backwards, (3.0, 2.0), math.pi, 0.3, lambda n, e: -0.1, R(10.0), yaw_offset_rad=math.pi)
    assert recs and all(r.cut_cells > 0 and not r.valid for r in recs)
    assert recs[0].reason == "blade not moving edge-first"
    forwards = BlindMapper(GridMap({"size_m": [4.0, 4.0], "cell_m": 0.1}), {"erosion": {"enabled": False}})
    recs = _drive(forwards, (3.0, 2.0), math.pi, 0.3, lambda n, e: -0.1, R(10.0))
    assert recs and all(r.valid for r in recs[:-1])


@pytest.mark.parametrize("surcharge", ["gathered", "ahead"])
def test_surcharge_grows_as_the_pile_builds(surcharge):
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"erosion": {"enabled": False}, "pile_length_m": 1.0, "surcharge": surcharge,
                        "pile": {"side_spill_per_m": 0.0}})
    records = _drive(m, (1.02, 2.0), 0.0, 1.5, lambda n, e: -0.1, R(10.0))
    vq = [r.surcharge_m3[-1] for r in records]
    assert all(b >= a - 1e-12 for a, b in zip(vq, vq[1:]))
    assert vq[-1] == pytest.approx(g.volume_m3(LOOSE), rel=1e-9)     # no erosion, no spill: the whole pile
    assert records[-2].surcharge_n[-1] == pytest.approx(14000.0 * records[-2].surcharge_m3[-1])


def _loose_ground(g, thickness_m):
    h, loose = g.layer(ELEVATION), g.layer(LOOSE)
    for k in range(g.size):
        h[k] += thickness_m
        loose[k] += thickness_m


def test_gathered_surcharge_counts_only_soil_the_blade_gathered():
    """On 2 cm of loose soil over the bank, a 0.12 m cut (edge 0.10 m into the bank): the carried pile is
    s x bank + the loose soil in the blade's path, never the loose soil still ahead ("ahead" counts it)."""
    volumes = {}
    for mode in ("gathered", "ahead"):
        g = GridMap({"size_m": [8.0, 4.0], "cell_m": 0.1})
        _loose_ground(g, 0.02)
        m = BlindMapper(g, {"erosion": {"enabled": False}, "surcharge": mode, "pile_length_m": 2.0,
                            "pile": {"side_spill_per_m": 0.0}})
        records = _drive(m, (1.02, 2.0), 0.0, 2.0, lambda n, e: -0.1, R(10.0))
        bank = sum(r.bank_cut_m3 for r in records)
        loose_cut = 360 * 0.02 * 0.01                  # 360 cells' own loose soil (docstring of the straight cut)
        assert bank == pytest.approx(0.36, abs=1e-9)
        if mode == "gathered":
            assert m.carried_m3 == pytest.approx(1.2 * bank + loose_cut, abs=1e-9)
            assert sum(r.gathered_m3 for r in records) == pytest.approx(m.carried_m3, abs=1e-12)
        volumes[mode] = records[-2].surcharge_m3[-1]
    assert volumes["ahead"] > volumes["gathered"] + 0.05       # about 2 m x 1.85 m x 2 cm of loose soil ahead


def test_end_spill_and_capacity_move_soil_to_windrows_and_keep_volumes():
    g = GridMap({"size_m": [10.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"erosion": {"enabled": False}, "blade_height_m": 0.4,
                        "pile": {"side_spill_per_m": 0.1}})
    records = _drive(m, (1.02, 2.0), 0.0, 6.0, lambda n, e: -0.15, R(10.0))
    bank = sum(r.bank_cut_m3 for r in records)
    gathered = sum(r.gathered_m3 for r in records)
    spilled = sum(r.spilled_m3 for r in records)
    assert gathered == pytest.approx(1.2 * bank, abs=1e-9)
    assert m.carried_m3 == pytest.approx(gathered - spilled, abs=1e-9)
    cap = blind_map.pile_capacity(1.85, 0.4 * math.cos(R(10.0)), 0.26)
    assert m.carried_m3 <= cap + 1e-9 and spilled > 1.2 * bank - cap
    assert g.volume_m3(LOOSE) == pytest.approx(1.2 * bank, abs=1e-9)       # moved, never lost
    heights = g.layer(ELEVATION)
    windrows = [heights[g.flat(i, j)] for i in range(g.n_north) for j in (10, 29)]  # beyond the ends
    assert sum(windrows) * 0.01 == pytest.approx(spilled, rel=0.02)


def test_a_blade_risen_above_its_pile_leaves_it():
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
    m = BlindMapper(g, {"erosion": {"enabled": False}})
    _drive(m, (1.02, 2.0), 0.0, 1.5, lambda n, e: -0.1, R(10.0))
    assert m.carried_m3 > 0.1
    t0 = 200 * DT_US
    recs = [m.on_blade_pose(BladePose(t0 + k * DT_US, 2.52, 2.0, -0.1 - 0.03 * k, 0.0, R(10.0), 0.0))
            for k in range(40)]
    assert any(r is not None and r.pile_left for r in recs) and m.carried_m3 == 0.0


def test_slip_happens_exactly_when_eq12_safety_factor_falls_below_one():
    rng = random.Random(4)
    for _ in range(300):
        step, run = rng.uniform(0.001, 0.5), 0.1
        c, phi, gamma = rng.choice([0.0, 25.0, 400.0]), rng.uniform(0.1, 0.8), 14000.0
        i = math.atan2(step, run)
        fs_min = min(blind_map.safety_factor(i * k / 2000.0, step, run, c, phi, gamma) for k in range(1, 2000))
        slip = blind_map.slip_height(step, run, c, phi, gamma, 0.05)
        if fs_min < 0.999:
            assert slip > 0.0
        if fs_min > 1.001:
            assert slip == 0.0
        assert slip <= max(0.0, 0.5 * (step - run * math.tan(phi))) + 1e-15


@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(2, 13), st.integers(2, 13), st.floats(0.01, 0.6)), min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15), st.floats(-0.2, 0.4)), max_size=8))
def test_erosion_conserves_volume_and_respects_masks(piles, masked):
    g = GridMap({"size_m": [1.6, 1.6], "cell_m": 0.1})
    h, loose = g.layer(ELEVATION), g.layer(LOOSE)
    for i, j, v in piles:
        h[g.flat(i, j)] += v
        loose[g.flat(i, j)] += v
    mask = {g.flat(i, j): z for i, j, z in masked}
    before_h, before_l = g.volume_m3(ELEVATION), g.volume_m3(LOOSE)
    h0 = list(h)
    blind_map.erode(g, (0.8, 0.8), mask, 0.0, 0.5, 14000.0, 0.1, 30, 1.0)
    assert g.volume_m3(ELEVATION) == pytest.approx(before_h, abs=1e-12)
    assert g.volume_m3(LOOSE) == pytest.approx(before_l, abs=1e-12)
    assert min(loose) >= -1e-15
    for k, z in mask.items():
        assert h[k] <= h0[k] + 1e-15 or h[k] <= z + 1e-12      # masked cells lose nothing, fill only to Z
        assert h[k] >= h0[k] - 1e-15


def test_erosion_converges_to_the_repose_slope():
    g = GridMap({"size_m": [2.0, 2.0], "cell_m": 0.1})
    h, loose = g.layer(ELEVATION), g.layer(LOOSE)
    for i in range(8, 12):
        for j in range(8, 12):
            h[g.flat(i, j)] = 0.5
            loose[g.flat(i, j)] = 0.5
    phi = 0.5
    blind_map.erode(g, (1.0, 1.0), {}, 0.0, phi, 14000.0, 0.2, 400, 1.0)
    worst = 0.0
    for i in range(g.n_north):
        for j in range(g.n_east):
            for di, dj in ((1, 0), (0, 1)):
                if g.inside(i + di, j + dj):
                    a, b = g.flat(i, j), g.flat(i + di, j + dj)
                    step = abs(h[a] - h[b])
                    src = a if h[a] >= h[b] else b
                    worst = max(worst, min(step, loose[src]))
    assert worst <= 0.1 * math.tan(phi) + 0.01
    assert g.volume_m3(LOOSE) == pytest.approx(16 * 0.5 * 0.01, abs=1e-12)


@settings(max_examples=10)
@given(st.integers(0, 10 ** 6))
def test_volume_bookkeeping_over_random_cuts_on_bumpy_ground(seed):
    """Whatever the path, depth, blade angles and terrain: the bank removed, swelled, is the loose soil added
    and the net height change is (s - 1) times the bank removed (less what left the map)."""
    rng = random.Random(seed)
    g = GridMap({"size_m": [4.0, 4.0], "cell_m": 0.1})
    h = g.layer(ELEVATION)
    bumps = [(rng.uniform(0, 4), rng.uniform(0, 4), rng.uniform(-0.2, 0.2), rng.uniform(0.3, 1.0)) for _ in range(4)]
    for i in range(g.n_north):
        for j in range(g.n_east):
            n, e = g.centre(i, j)
            h[g.flat(i, j)] = sum(a * math.exp(-((n - bn) ** 2 + (e - be) ** 2) / (2 * s * s))
                                  for bn, be, a, s in bumps)
    m = BlindMapper(g, {"blade_width_m": rng.uniform(0.8, 1.85), "swell": rng.uniform(1.0, 1.4),
                        "erosion": {"iterations": 3, "roi_m": 1.0}})
    before_h, before_bank = g.volume_m3(ELEVATION), g.volume_m3(ELEVATION) - g.volume_m3(LOOSE)
    heading = rng.uniform(0, 2 * math.pi)
    start = (2.0 - 1.2 * math.cos(heading), 2.0 - 1.2 * math.sin(heading))
    depth = rng.uniform(0.0, 0.2)
    records = _drive(m, start, heading, 2.4, lambda n, e: -depth + 0.05 * math.sin(3 * n), rng.uniform(0.0, 0.4),
                     roll_rad=rng.uniform(-0.1, 0.1), yaw_offset_rad=rng.uniform(-0.4, 0.4))
    bank = sum(r.bank_cut_m3 for r in records)
    s = m.config["swell"]
    assert g.volume_m3(ELEVATION) - before_h == pytest.approx((s - 1.0) * bank - m.lost_m3, abs=1e-9)
    assert g.volume_m3(ELEVATION) - g.volume_m3(LOOSE) - before_bank == pytest.approx(-bank, abs=1e-9)


def test_numpy_erosion_kernel_gives_the_pure_results():
    from onboard.soil import blind_map_numpy
    from onboard.soil.grid_map import ELEVATION_VAR
    maps = []
    for kernel in (None, blind_map_numpy.erode):
        g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.1})
        h = g.layer(ELEVATION)
        for k in range(g.size):
            h[k] = 0.02 * math.sin(0.37 * k)
        m = BlindMapper(g, {"erosion": {"iterations": 6, "roi_m": 1.5}}, erode_fn=kernel)
        _drive(m, (1.02, 2.1), R(12.0), 2.0, lambda n, e: -0.12, R(10.0), yaw_offset_rad=R(15.0))
        maps.append(g)
    for name in (ELEVATION, LOOSE, ELEVATION_VAR):
        a, b = maps[0].layer(name), maps[1].layer(name)
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-12
    assert maps[0].volume_m3(LOOSE) > 0.3


def test_geometry_within_tolerance_on_a_noisy_cross_sloped_surface():
    """A plane rising 6 deg along a 30 deg heading and 3 deg across it, plus +-5 mm of seeded height noise;
    the blade rolled to keep its edge parallel to the surface. Expected rake: the face's trace in the
    vertical plane along travel, found by walking up the face plane (independent of the code's cross
    product) plus alpha."""
    alpha, sigma, heading, depth, pitch = R(6.0), R(3.0), R(30.0), 0.15, R(12.0)
    t = (math.cos(heading), math.sin(heading))
    lat = (-t[1], t[0])
    rng = random.Random(9)
    g = GridMap({"size_m": [8.0, 8.0], "cell_m": 0.05})
    h = g.layer(ELEVATION)

    def surface(n, e):
        return (n * t[0] + e * t[1]) * math.tan(alpha) + (n * lat[0] + e * lat[1]) * math.tan(sigma)
    for i in range(g.n_north):
        for j in range(g.n_east):
            h[g.flat(i, j)] = surface(*g.centre(i, j)) + rng.uniform(-0.005, 0.005)
    roll = math.atan(-math.tan(sigma) / (math.cos(pitch) + math.sin(pitch) * math.tan(alpha)))
    m = BlindMapper(g, {"erosion": {"enabled": False}})
    rec = _drive(m, (3.0, 3.0), heading, 0.12, lambda n, e: surface(n, e) - depth / math.cos(alpha), pitch,
                 roll_rad=roll)[0]
    # the face plane's trace: from the edge centre, go up the face by u and along the edge by lam(u) so
    # that the lateral offset stays zero
    from onboard.core.rotations import euler_to_dcm
    r = euler_to_dcm(roll, pitch, heading)
    face = (-r[2], -r[5], r[8])
    edge = (r[1], r[4], -r[7])
    u = 1.0
    lam = -u * (face[0] * lat[0] + face[1] * lat[1]) / (edge[0] * lat[0] + edge[1] * lat[1])
    p = [u * face[k] + lam * edge[k] for k in range(3)]
    rho_expected = math.atan2(p[2], -(p[0] * t[0] + p[1] * t[1])) + alpha
    assert rec.valid
    assert abs(math.degrees(rec.alpha_rad - alpha)) < 0.5
    assert abs(math.degrees(rec.rho_rad - rho_expected)) < 0.5
    assert abs(rec.depth_m - depth) < 0.01


def test_depth_moments_of_a_rolled_blade_and_the_rake_at_every_pose():
    """Flat ground, the edge rolled 3 deg and 0.08 m deep at its centre: the depth along the edge runs
    linearly from 0.08 - 0.925 tan(3 deg) to 0.08 + 0.925 tan(3 deg), so over the slices the mean depth is
    0.08 m and the mean square 0.08^2 + (1.85 tan(3 deg))^2 / 12 (eq. 1 summed over slices); the blade
    tilting back during the sweep changes the rake pose by pose."""
    g = GridMap({"size_m": [6.0, 4.0], "cell_m": 0.05})
    m = BlindMapper(g, {"erosion": {"enabled": False}})
    roll = R(3.0)
    recs = []
    for k in range(13):
        pitch = R(10.0) + R(0.5) * k
        rec = m.on_blade_pose(BladePose(k * DT_US, 1.0 + 0.01 * k, 2.0, 0.08, roll, pitch, 0.0))
        if rec is not None:
            recs.append(rec)
    rec = recs[0]
    assert rec.valid, rec.reason
    half = 0.925 * math.tan(roll)
    for d1, d2 in zip(rec.depths_m, rec.depths_sq_m2):
        assert d1 == pytest.approx(0.08, abs=0.002)
        assert d2 == pytest.approx(0.08 ** 2 + (2 * half) ** 2 / 12.0, rel=0.03)
        assert d2 > d1 * d1
    for k, rho in enumerate(rec.rhos_rad):
        assert rho == pytest.approx(R(80.0) - R(0.5) * k, abs=R(0.3))
    assert rec.theta_k(0)[1] == rec.rhos_rad[0] and rec.theta_k()[2] == rec.depths_m[-1]
