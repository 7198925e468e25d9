"""Terramechanics of a track on soft soil: pure math (floats or NumPy arrays), no state, no I/O.

Soil parameters keep the names of the literature (Bekker; Janosi and Hanamoto; Wong, *Theory of Ground
Vehicles*, ch. 2; the same names Chrono's ``SCMTerrain::SetSoilParameters`` takes):

- ``k_c``   cohesive modulus of deformation, N/m^(n+1)
- ``k_phi`` frictional modulus of deformation, N/m^(n+2)
- ``n``     exponent of deformation (dimensionless)
- ``c``     cohesion, Pa
- ``phi``   angle of internal shearing resistance, deg (here: ``phi_deg``)
- ``K``     shear deformation modulus, m (here: ``K_m``)

Relations (b the smaller dimension of the contact patch, the track width, m):

- Bekker pressure-sinkage: p = (k_c/b + k_phi) z^n, so z = (p / (k_c/b + k_phi))^(1/n).
- Mohr-Coulomb shear strength: tau_max = c + p tan(phi).
- Janosi-Hanamoto shear stress-displacement: tau = (c + p tan(phi)) (1 - exp(-j / K)), j the shear
  displacement (m).
- Track thrust at slip i over a contact of length L (j = i x, x from the front; Wong ch. 2):
  F = (A c + W tan(phi)) (1 - K/(i L) (1 - exp(-i L / K))).
- Compaction (motion) resistance of a track that sank z: R_c = b (k_c/b + k_phi) z^(n+1) / (n+1).
- Grade resistance of a vehicle of weight W on a grade theta (uphill positive): R_g = W sin(theta).
"""
import math

import numpy as np

# Dry sand, Wong (Theory of Ground Vehicles, ch. 2, table of terrain values: "LLL sand"): n = 1.1,
# k_c = 0.99 kN/m^(n+1), k_phi = 1528.43 kN/m^(n+2), c = 1.04 kPa, phi = 28 deg. K = 0.025 m is the order of
# the shear deformation modulus Wong gives for loose sand (about 1 to 2.5 cm); the angle of repose of dry
# sand about 34 deg.
SANDY_SOIL = {
    "k_c": 990.0,
    "k_phi": 1528430.0,
    "n": 1.1,
    "c_pa": 1040.0,
    "phi_deg": 28.0,
    "K_m": 0.025,
    "repose_deg": 34.0,
}


def bekker_modulus(k_c, k_phi, b_m):
    """k_c / b + k_phi (N/m^(n+2)): the stiffness of Bekker's pressure-sinkage relation for a patch of
    smaller dimension ``b_m``."""
    return k_c / b_m + k_phi


def bekker_pressure_pa(sinkage_m, k_c, k_phi, n, b_m):
    """Bekker pressure-sinkage (Wong ch. 2): p = (k_c/b + k_phi) z^n (Pa); 0 where z <= 0."""
    z = np.clip(sinkage_m, 0.0, None)
    return bekker_modulus(k_c, k_phi, b_m) * z ** n


def bekker_sinkage_m(pressure_pa, k_c, k_phi, n, b_m):
    """Bekker sinkage under a pressure (Wong ch. 2): z = (p / (k_c/b + k_phi))^(1/n) (m)."""
    return (np.clip(pressure_pa, 0.0, None) / bekker_modulus(k_c, k_phi, b_m)) ** (1.0 / n)


def shear_strength_pa(pressure_pa, c_pa, phi_deg):
    """Mohr-Coulomb shear strength tau_max = c + p tan(phi) (Pa)."""
    return c_pa + pressure_pa * math.tan(math.radians(phi_deg))


def janosi_shear_pa(pressure_pa, shear_displacement_m, c_pa, phi_deg, K_m):
    """Janosi-Hanamoto shear stress (Wong ch. 2): tau = (c + p tan(phi)) (1 - exp(-j / K)) (Pa), ``j`` >= 0."""
    j = np.abs(shear_displacement_m)
    return shear_strength_pa(pressure_pa, c_pa, phi_deg) * (1.0 - np.exp(-j / K_m))


def track_thrust_n(slip, load_n, length_m, width_m, c_pa, phi_deg, K_m):
    """Thrust of a track of ``length_m`` x ``width_m`` carrying ``load_n`` at slip ratio ``slip`` in (0, 1],
    uniform pressure (Wong ch. 2): F = (A c + W tan(phi)) (1 - K/(i L) (1 - exp(-i L / K))) (N)."""
    fmax = length_m * width_m * c_pa + load_n * math.tan(math.radians(phi_deg))
    if slip <= 0.0:
        return 0.0
    kl = K_m / (slip * length_m)
    return fmax * (1.0 - kl * (1.0 - math.exp(-1.0 / kl)))


def compaction_resistance_n(sinkage_m, k_c, k_phi, n, b_m):
    """Bekker's compaction resistance of a track of width ``b_m`` that sank ``sinkage_m``:
    R_c = b (k_c/b + k_phi) z^(n+1) / (n+1) (N)."""
    z = max(0.0, float(sinkage_m))
    return b_m * bekker_modulus(k_c, k_phi, b_m) * z ** (n + 1.0) / (n + 1.0)


def grade_resistance_n(weight_n, grade_rad):
    """Grade resistance W sin(theta) (N), uphill grade positive."""
    return weight_n * math.sin(grade_rad)


def slip_ratio(track_mps, ground_mps, floor_mps=1e-3):
    """Longitudinal slip of a track: i = 1 - v_ground / v_track (0 rolling freely, 1 spinning in place),
    the ground speed measured along the track; 0 when the track stands (|v_track| < ``floor_mps``)."""
    if abs(track_mps) < floor_mps:
        return 0.0
    return 1.0 - ground_mps / track_mps
