"""Per-cut soil-property estimates: windowed bounded nonlinear least squares through the FEE (CPython host
side: NumPy and SciPy; never imported on MicroPython).

Soil paper: Wagner, Soylemezoglu, Driggs-Campbell, "In-Situ Soil-Property Estimation and Bayesian Mapping
with a Simulated Compact Track Loader": the FEE of eqs. 1, 2, 4 (``onboard.soil.fee_numpy``), the
linearisation of eqs. 6-7 (Sigma_F = J Sigma_Theta J^T) and the null-space inflation of eq. 9; reading aid
``shared/papers/notes/soil.md`` (section 2.4 "Identifiability", decisions A6-A8; section 5.2's
``soil_nls``). The paper estimates with a learned network; this classical estimator stands beside it.

Over one window (a cut, or part of one) of samples t with the geometry the blind map extracted
(alpha_t, rho_t, d_t, w_t, Q_t; ``onboard.soil.blind_map.SweepRecord``) and the measured force
(F_x,t and/or F_z,t; a missing component is NaN), the estimate of Theta = (c, phi, gamma, c_a, delta)
minimises

    sum_t sum_{i measured} ((F_i,t - F_i^FEE(Theta; theta_k,t)) / s_i,t)^2 + sum_k ((Theta_k - mu_k) / sigma_k)^2

with s_i,t = rel |F_i,t| + abs (the sensor's noise model) and the Gaussian prior (mu, sigma) (by default the
grid map's layer prior, notes A16), in the scaled unknowns z = (Theta - mu) / sigma, within bounds
(``scipy.optimize.least_squares``, trust-region reflective).

The predicted force is F^FEE + F^r with the paper's residual force F^r = (F^r_x, F^r_z) (section 2.1,
Fig. 3: "a residual force F^r is also directly produced ... and summed with F^FEE", fixed over the
prediction horizon, kept small by eq. 10's lambda_Fr term): two nuisance unknowns, constant over the
window, with a zero-mean Gaussian prior of ``residual_force.sigma_n`` per component (eq. 10's
regulariser as a prior). It takes up what the FEE does not model and is constant over a cut, a force
sensor's bias above all (which otherwise tilts the measured direction, rho + delta - alpha, and so delta),
and its uncertainty is carried into the properties' covariance (marginalised), the term the noise model
alone lacks. Likewise the extracted geometry gets the paper's residual corrections (eq. 10's theta_res,
"small residual corrections of the FEE parameters extracted via the mapping process"), constant over the
window: the surcharge Q (1 + q_rel) and the depth d + d_off where the blade cuts, with zero-mean Gaussian
priors ``known_residuals.surcharge_rel`` and ``.depth_m`` (``known_residuals.enabled``, off by default).
The FEE's gamma term is 2-4 % of the force on the loader's cuts against 30-70 % for the surcharge term,
so a surcharge error of 1 % moves gamma by 10-30 %; marginalising these errors puts that into the
properties' stated variances.

The covariance is (J^T J / k + P)^-1 over (z, z_r) (z_r: the nuisances above in units of their prior
sigmas, P the identity prior), its z block (the nuisances marginalised), with J the whitened residual
Jacobian at the optimum and k = ``correlated_samples`` (the geometry is extracted once per sweep, so the
samples of a sweep share its error: k of them count as one), times the reduced chi-square when that
exceeds 1 (model mismatch), mapped back to SI units. Then eq. 9 with the ambiguity covariance Sigma^a =
the prior's: the variances become max(var, diag(N Sigma^a N^T)), N = I - J^+ J (notes A6), Theta scaled
by sigma (notes A7), for one of two Jacobians (``eq9.jacobian``):

- ``"whitened"`` (default): J = the whitened window Jacobian d r / d z with the nuisances marginalised
  (J^T J = A_zz - A_zr (A_rr + k I)^-1 A_rz, A = J_all^T J_all), whose singular values are the square
  roots of the window's information along each direction relative to the prior's; a direction below
  ``eq9.whitened_atol`` (+ rtol s_max) is one the whole window does not pin down;
- ``"force_rms"``: J = the stacked force Jacobian [N per prior sigma] divided by sqrt(T) (per-sample RMS
  singular values) with the paper's atol = 1500 N, rtol = 0.05 (section 2.1), which judge a single sample;
  over a window of T samples they also declare directions null that the window determines well (phi among
  them on a 5 s cut), so they are not the default here.

A property is flagged as not identifiable with the sensors used (``flags[k]`` True, ``reasons[k]`` saying
why) when

- delta: F_z is not measured (the force's direction, rho + delta - alpha, needs both components);
- c and c_a: the rake's span over the window is below ``min_rake_span_rad`` (they enter the FEE only
  through c N_c + c_a N_ca, whose ratio changes only with rho and alpha);
- any: its scaled null-space projection diag(N)_k exceeds ``null_fraction`` (eq. 9's unidentifiable
  directions) or its variance is not reduced below ``unreduced_fraction`` of the prior's.
A flagged property keeps at least the ambiguity variance.
"""
import math

import numpy as np

from onboard.core.settings import BOOLEAN, NON_NEGATIVE, POSITIVE, checked, int_at_least, one_of, pair, within, \
    vector, ANY_NUMBER
from onboard.soil import fee_numpy
from onboard.soil.fee import DEFAULTS as FEE_LIMITS
from onboard.soil.fee import HALF_PI, N_U, THETA_U_NAMES

DEFAULTS = {
    # (mean, sigma) of the Gaussian prior per property (the grid map's layer prior, notes A16)
    "prior": {
        "c_pa": [15000.0, 15000.0],
        "phi_rad": [0.5236, 0.2618],
        "gamma_npm3": [17000.0, 4000.0],
        "ca_pa": [7500.0, 7500.0],
        "delta_rad": [0.3054, 0.2182],
    },
    "bounds": {
        "c_pa": [0.0, 60000.0],
        "phi_rad": [0.09, 0.87],
        "gamma_npm3": [8000.0, 25000.0],
        "ca_pa": [0.0, 40000.0],
        "delta_rad": [0.0, 0.7],
    },
    "noise": {"rel_sigma": 0.02, "abs_sigma_n": 200.0},     # s = rel |F| + abs per component
    "beta": "min_n_gamma",
    "chi2_scaling": True,
    # the paper's residual force F^r (module docstring): constant over the window, prior N(0, sigma^2) per
    # component; 200 N is the force sensor's stated constant-bias sigma (harness track_loader sensors)
    "residual_force": {"enabled": True, "sigma_n": [200.0, 200.0]},
    # the paper's residual corrections of the extracted geometry (eq. 10's theta_res), constant over the
    # window: Q (1 + q_rel) and d + d_off; sigmas: the map's carried pile against the world's (within 2 %,
    # docs/results/soil.md) and the blade position sensor's 3 mm (harness track_loader sensors). Off by
    # default: on the soil sweep they raise phi's coverage but also its error (docs/results/soil.md)
    "known_residuals": {"enabled": False, "surcharge_rel": 0.02, "depth_m": 0.003},
    "correlated_samples": 6.0,        # samples per independent geometry error (a 0.1 m sweep at 1 m/s)
    "eq9": {
        "jacobian": "whitened",       # "whitened" | "force_rms" (module docstring)
        "whitened_atol": 2.0,         # singular values of d r / d z (sqrt of information / prior's)
        "whitened_rtol": 1e-4,
        "force_atol_n": 1500.0,       # the paper's tolerances (section 2.1), N per prior sigma
        "force_rtol": 0.05,
    },
    "min_rake_span_rad": 0.035,       # 2 deg
    "null_fraction": 0.5,
    "unreduced_fraction": 0.7,
    "min_samples": 10,
    "max_nfev": 200,
}
SETTING_RANGES = {
    "prior.c_pa": vector(2, ANY_NUMBER),
    "prior.phi_rad": vector(2, ANY_NUMBER),
    "prior.gamma_npm3": vector(2, ANY_NUMBER),
    "prior.ca_pa": vector(2, ANY_NUMBER),
    "prior.delta_rad": vector(2, ANY_NUMBER),
    "bounds.c_pa": pair(NON_NEGATIVE, ordered=True),
    "bounds.phi_rad": pair(within(0.01, 1.5), ordered=True),
    "bounds.gamma_npm3": pair(POSITIVE, ordered=True),
    "bounds.ca_pa": pair(NON_NEGATIVE, ordered=True),
    "bounds.delta_rad": pair(within(0.0, 1.5), ordered=True),
    "noise.rel_sigma": NON_NEGATIVE,
    "noise.abs_sigma_n": POSITIVE,
    "beta": one_of("min_n_gamma", "eq11"),
    "chi2_scaling": BOOLEAN,
    "residual_force.enabled": BOOLEAN,
    "residual_force.sigma_n": pair(POSITIVE),
    "known_residuals.enabled": BOOLEAN,
    "known_residuals.surcharge_rel": POSITIVE,
    "known_residuals.depth_m": POSITIVE,
    "correlated_samples": within(1.0, 1000.0),
    "eq9.jacobian": one_of("whitened", "force_rms"),
    "eq9.whitened_atol": NON_NEGATIVE,
    "eq9.whitened_rtol": NON_NEGATIVE,
    "eq9.force_atol_n": NON_NEGATIVE,
    "eq9.force_rtol": NON_NEGATIVE,
    "min_rake_span_rad": NON_NEGATIVE,
    "null_fraction": within(0.0, 1.0),
    "unreduced_fraction": within(0.0, 1.0),
    "min_samples": int_at_least(1),
    "max_nfev": int_at_least(10),
}


class CutEstimateError(ValueError):
    """A window cannot be estimated (too few samples, mismatched arrays, non-finite geometry)."""


class CutWindow:
    """Samples of one window, each a 1-D array of the same length: the geometry ``alpha_rad``, ``rho_rad``,
    ``depth_m``, ``width_m``, ``surcharge_n`` (``onboard.soil.fee`` slots of theta_k) and the measured force
    ``fx_n`` (horizontal, positive against travel) and ``fz_n`` (vertical, positive down), NaN where a
    component is not measured; ``time_us`` (optional) the sample times; ``depth_sq_m2`` (optional, default
    depth^2) the mean square depth over the blade's slices, for eq. 1's gamma term (``depth_m`` then is
    their mean depth; ``onboard.soil.blind_map``)."""

    def __init__(self, alpha_rad, rho_rad, depth_m, width_m, surcharge_n, fx_n, fz_n, time_us=None,
                 depth_sq_m2=None):
        if depth_sq_m2 is None:
            depth_sq_m2 = np.square(np.asarray(depth_m, dtype=float))
        arrays = [np.asarray(a, dtype=float).ravel() for a in (alpha_rad, rho_rad, depth_m, width_m, surcharge_n,
                                                               fx_n, fz_n, depth_sq_m2)]
        n = arrays[0].size
        for a in arrays:
            if a.size != n:
                raise CutEstimateError("cut window arrays differ in length: %s"
                                       % ", ".join(str(x.size) for x in arrays))
        for a, name in zip(arrays[:5] + arrays[7:], ("alpha", "rho", "depth", "width", "surcharge", "depth_sq")):
            if not np.all(np.isfinite(a)):
                raise CutEstimateError("cut window geometry %s holds NaN or infinite values" % name)
        (self.alpha_rad, self.rho_rad, self.depth_m, self.width_m, self.surcharge_n, self.fx_n, self.fz_n,
         self.depth_sq_m2) = arrays
        self.time_us = None if time_us is None else np.asarray(time_us, dtype=np.int64).ravel()

    def __len__(self):
        return self.alpha_rad.size

    def theta_k(self):
        return [self.alpha_rad, self.rho_rad, self.depth_m, self.width_m, self.surcharge_n]

    def select(self, mask):
        """A new window of the samples where boolean ``mask`` is True."""
        m = np.asarray(mask, dtype=bool)
        return CutWindow(self.alpha_rad[m], self.rho_rad[m], self.depth_m[m], self.width_m[m], self.surcharge_n[m],
                         self.fx_n[m], self.fz_n[m], None if self.time_us is None else self.time_us[m],
                         self.depth_sq_m2[m])


def window_from_sweeps(records, force_by_time_us, components=("fx", "fz")):
    """A :class:`CutWindow` from the valid ``SweepRecord`` s of a cut (``onboard.soil.blind_map``: per pose
    ``times_us``, ``depths_m``, ``depths_sq_m2``, ``rhos_rad`` (else the sweep's ``rho_rad``),
    ``surcharge_n``; per sweep ``alpha_rad``, ``rho_rad``, ``width_m``) and the
    measured force ``force_by_time_us`` {time_us: (fx_n, fz_n)}; each pose time once (a sweep's first pose
    is the previous sweep's last), poses without a force sample left out; ``components`` names the measured
    components ("fx", "fz"), the others become NaN."""
    seen = set()
    rows = []
    for rec in records:
        if not rec.valid:
            continue
        for k, t in enumerate(rec.times_us):
            if t in seen or t not in force_by_time_us:
                continue
            seen.add(t)
            fx, fz = force_by_time_us[t]
            rho = rec.rhos_rad[k] if rec.rhos_rad else rec.rho_rad
            rows.append((rec.alpha_rad, rho, rec.depths_m[k], rec.width_m, rec.surcharge_n[k],
                         fx if "fx" in components else math.nan, fz if "fz" in components else math.nan, t,
                         rec.depths_sq_m2[k]))
    if not rows:
        return CutWindow([], [], [], [], [], [], [], [])
    cols = list(zip(*rows))
    return CutWindow(*cols[:7], time_us=cols[7], depth_sq_m2=cols[8])


class CutEstimate:
    """One window's estimate: ``theta`` (5 values, ``onboard.soil.fee`` slots, SI units), ``var`` (their
    variances after eq. 9 and the flags), ``var_data`` (before), ``flags`` (True: not identifiable),
    ``reasons`` (text per property, "" when identifiable), ``residual_force_n`` ((F^r_x, F^r_z), zeros when
    off) and ``residual_sigma_n`` (their sigmas), ``known_residuals`` ({"surcharge_rel", "depth_m"}: (value,
    sigma) of the geometry's corrections; empty when off), ``null_diag`` (diag N in scaled units), ``rank``
    (of the scaled per-sample Jacobian), ``chi2_red``, ``samples``, ``components`` (measured: "fx", "fz"),
    ``force_mae_n`` and ``force_mae_pct`` (mean |F_meas - F_FEE(theta) - F^r| over the measured components, in N
    and in % of the mean |F_meas|), ``predicted`` ((fx, fz) arrays), ``success``, ``nfev``, ``message``,
    ``var_epistemic`` (the part of ``var_data`` from an ensemble's spread; zeros for a single estimator).

    Both estimators (this module's and ``onboard.soil.learned_estimator``) build it with this constructor;
    the force errors are computed here from the measured and predicted force over ``measured`` (the samples
    of each component that count: boolean masks or None for every sample)."""

    def __init__(self, theta, var, var_data, flags, reasons, window, predicted, measured=(None, None),
                 residual_force_n=(0.0, 0.0), residual_sigma_n=(0.0, 0.0), known_residuals=None, null_diag=None,
                 rank=0, chi2_red=0.0, success=True, nfev=0, message="", var_epistemic=None):
        self.theta = np.asarray(theta, dtype=float)
        self.var = np.asarray(var, dtype=float)
        self.var_data = np.asarray(var_data, dtype=float)
        self.var_epistemic = np.zeros(N_U) if var_epistemic is None else np.asarray(var_epistemic, dtype=float)
        self.flags = list(flags)
        self.reasons = list(reasons)
        self.residual_force_n = (float(residual_force_n[0]), float(residual_force_n[1]))
        self.residual_sigma_n = (float(residual_sigma_n[0]), float(residual_sigma_n[1]))
        self.known_residuals = dict(known_residuals or {})
        self.null_diag = null_diag
        self.rank = int(rank)
        self.chi2_red = float(chi2_red)
        self.samples = len(window)
        fx, fz = predicted
        mx = np.isfinite(window.fx_n) if measured[0] is None else measured[0]
        mz = np.isfinite(window.fz_n) if measured[1] is None else measured[1]
        self.components = tuple(c for c, h in (("fx", np.isfinite(window.fx_n)), ("fz", np.isfinite(window.fz_n)))
                                if np.any(h))
        errs = np.concatenate((np.abs(window.fx_n[mx] - fx[mx]), np.abs(window.fz_n[mz] - fz[mz])))
        scale = np.concatenate((np.abs(window.fx_n[mx]), np.abs(window.fz_n[mz])))
        self.force_mae_n = float(errs.mean()) if errs.size else float("nan")
        self.force_mae_pct = float(100.0 * errs.mean() / max(scale.mean(), 1e-9)) if errs.size else float("nan")
        self.predicted = (fx, fz)
        self.success = bool(success and errs.size > 0)
        self.nfev = int(nfev)
        self.message = str(message)

    def as_dict(self):
        return {"theta": dict(zip(THETA_U_NAMES, (float(v) for v in self.theta))),
                "sigma": dict(zip(THETA_U_NAMES, (float(math.sqrt(v)) for v in self.var))),
                "flags": dict(zip(THETA_U_NAMES, (bool(f) for f in self.flags))),
                "reasons": dict(zip(THETA_U_NAMES, self.reasons)), "rank": int(self.rank),
                "residual_force_n": [float(v) for v in self.residual_force_n],
                "residual_sigma_n": [float(v) for v in self.residual_sigma_n],
                "known_residuals": {k: list(v) for k, v in self.known_residuals.items()},
                "chi2_red": float(self.chi2_red), "samples": int(self.samples),
                "force_mae_n": float(self.force_mae_n), "force_mae_pct": float(self.force_mae_pct)}


class CutEstimator:
    """The windowed NLS estimator (module docstring); settings :data:`DEFAULTS`."""

    def __init__(self, config=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "cut estimator")
        self.config = cfg
        self.mu = np.array([cfg["prior"][k][0] for k in THETA_U_NAMES], dtype=float)
        self.sigma = np.array([cfg["prior"][k][1] for k in THETA_U_NAMES], dtype=float)
        if not np.all(self.sigma > 0.0):
            raise CutEstimateError("cut estimator prior sigmas must be > 0")
        self.lo = np.array([cfg["bounds"][k][0] for k in THETA_U_NAMES], dtype=float)
        self.hi = np.array([cfg["bounds"][k][1] for k in THETA_U_NAMES], dtype=float)

    # the FEE over the window, the rake kept inside the domain so an admissible beta exists
    def predict(self, theta, window, surcharge_rel=0.0, depth_m=0.0):
        """(fx_n, fz_n) arrays of the FEE (eqs. 1, 2, 4) with properties ``theta`` over the window, the
        extracted surcharge scaled by 1 + ``surcharge_rel`` and ``depth_m`` added to the depth where the blade
        cuts (the paper's residual corrections of the known parameters, eq. 10's theta_res)."""
        lim = FEE_LIMITS
        alpha, rho, d, w, q = window.theta_k()
        d2 = window.depth_sq_m2
        if surcharge_rel != 0.0:
            q = q * (1.0 + surcharge_rel)
        if depth_m != 0.0:
            cut = d > 0.0
            d2 = np.where(cut, np.maximum(d2 + 2.0 * depth_m * d + depth_m * depth_m, 0.0), d2)
            d = np.where(cut, np.maximum(d + depth_m, 0.0), d)
        # an admissible failure angle above beta_min and beta_min - alpha - phi (fee.beta_bounds)
        extra = np.maximum(-alpha - theta[1], 0.0)
        rho = np.minimum(rho, lim["eta_max_rad"] - theta[4] - theta[1] - 2.0 * lim["beta_min_rad"] - extra)
        phi = np.full(alpha.shape, theta[1])
        delta = np.full(alpha.shape, theta[4])
        if self.config["beta"] == "eq11":
            beta = fee_numpy.beta_eq11(phi)
        else:
            beta = fee_numpy.beta_star(alpha, rho, phi, delta, lim["beta_min_rad"], lim["eta_max_rad"])[0]
        theta_u = [theta[0], phi, theta[2], theta[3], delta]
        _f, fx, fz = fee_numpy.force_from_beta(theta_u, [alpha, rho, d, w, q], beta, d2)
        return fx, fz

    def estimate(self, window):
        """The :class:`CutEstimate` of a :class:`CutWindow`; raises CutEstimateError for too few samples
        with a measured force (``min_samples``) or no measured force."""
        try:
            from scipy.optimize import least_squares
        except ImportError:
            raise CutEstimateError("the cut estimator runs on a host with SciPy (pip install scipy)")
        cfg = self.config
        n = len(window)
        has_x = np.isfinite(window.fx_n)
        has_z = np.isfinite(window.fz_n)
        if not np.any(has_x) and not np.any(has_z):
            raise CutEstimateError("cut window has no measured force component")
        # the samples that count are those with a measured force (a sample without one adds no residual)
        n_meas = int(np.count_nonzero(has_x | has_z))
        if n_meas < cfg["min_samples"]:
            raise CutEstimateError("cut window has %d samples with a measured force (of %d), at least %d needed"
                                   % (n_meas, n, cfg["min_samples"]))
        # a surface so steep that the failure plane cannot meet it (alpha + beta < pi/2 with beta >= beta_min,
        # whatever the properties): no FEE force exists there (fee_numpy.beta_star would raise mid-fit)
        steep = ~(HALF_PI - FEE_LIMITS["beta_min_rad"] - window.alpha_rad > FEE_LIMITS["beta_min_rad"])
        if np.any(steep):
            raise CutEstimateError("cut window surface inclination alpha reaches %.1f deg: no admissible failure "
                                   "angle (the FEE's domain)" % math.degrees(float(np.max(window.alpha_rad[steep]))))
        nz = cfg["noise"]
        sx = nz["rel_sigma"] * np.abs(window.fx_n[has_x]) + nz["abs_sigma_n"]
        sz = nz["rel_sigma"] * np.abs(window.fz_n[has_z]) + nz["abs_sigma_n"]
        mx, mz = window.fx_n[has_x], window.fz_n[has_z]
        mu, sig = self.mu, self.sigma
        # nuisance unknowns, each constant over the window with a zero-mean Gaussian prior (module docstring):
        # the residual force per measured component, the surcharge's relative error, the depth's offset
        rf = cfg["residual_force"]
        kr = cfg["known_residuals"]
        nuis = []
        if rf["enabled"]:
            nuis += [(name, sd) for name, sd, h in (("fx", rf["sigma_n"][0], has_x), ("fz", rf["sigma_n"][1], has_z))
                     if np.any(h)]
        if kr["enabled"]:
            nuis += [("surcharge_rel", kr["surcharge_rel"]), ("depth_m", kr["depth_m"])]
        r_sig = np.array([sd for _name, sd in nuis], dtype=float)
        n_r = len(nuis)

        def split(zz):
            vals = {name: float(zz[N_U + i]) * sd for i, (name, sd) in enumerate(nuis)}
            return mu + sig * zz[:N_U], vals

        def residuals(zz):
            theta, v = split(zz)
            fx, fz = self.predict(theta, window, v.get("surcharge_rel", 0.0), v.get("depth_m", 0.0))
            r = np.concatenate(((mx - fx[has_x] - v.get("fx", 0.0)) / sx, (mz - fz[has_z] - v.get("fz", 0.0)) / sz,
                                zz))
            return np.where(np.isfinite(r), r, 1e6)

        z_lo = np.concatenate(((self.lo - mu) / sig, np.full(n_r, -np.inf)))
        z_hi = np.concatenate(((self.hi - mu) / sig, np.full(n_r, np.inf)))
        z0 = np.clip(np.zeros(N_U + n_r), z_lo + 1e-9, z_hi - 1e-9)
        sol = least_squares(residuals, z0, bounds=(z_lo, z_hi), method="trf", x_scale=1.0,
                            max_nfev=cfg["max_nfev"])
        theta, nv = split(sol.x)
        res_x, res_z = nv.get("fx", 0.0), nv.get("fz", 0.0)
        m_data = int(has_x.sum() + has_z.sum())
        r_data = sol.fun[:m_data]
        j_all = sol.jac[:m_data]
        chi2_red = float(r_data @ r_data) / max(m_data - N_U - n_r, 1)
        k_corr = cfg["correlated_samples"]
        a_all = j_all.T @ j_all
        cov_all = np.linalg.inv(a_all / k_corr + np.eye(N_U + n_r))
        if cfg["chi2_scaling"] and chi2_red > 1.0:
            cov_all = cov_all * chi2_red
        cov_z = cov_all[:N_U, :N_U]                 # the nuisances marginalised
        var_data = np.diag(cov_z) * sig * sig
        nuis_sigma = dict(zip([name for name, _sd in nuis], np.sqrt(np.diag(cov_all)[N_U:]) * r_sig))
        # the data's information on z with the nuisances marginalised (their priors kept), a Jacobian for eq. 9
        a_eff = a_all[:N_U, :N_U]
        if n_r:
            a_eff = a_eff - a_all[:N_U, N_U:] @ np.linalg.solve(a_all[N_U:, N_U:] + k_corr * np.eye(n_r),
                                                               a_all[N_U:, :N_U])
        ev, vec = np.linalg.eigh(0.5 * (a_eff + a_eff.T))
        j_data = np.sqrt(np.maximum(ev, 0.0))[:, None] * vec.T
        # eq. 9 (notes A6, A7) in the scaled unknowns z, Sigma^a = the prior's (identity in z)
        e9 = cfg["eq9"]
        if e9["jacobian"] == "whitened":
            j_scaled, atol, rtol = j_data, e9["whitened_atol"], e9["whitened_rtol"]
        else:
            s_all = np.concatenate((sx, sz))
            j_scaled = -(j_all[:, :N_U] * s_all[:, None]) / math.sqrt(n)   # N per prior sigma, per-sample RMS
            atol, rtol = e9["force_atol_n"], e9["force_rtol"]
        var_amb = sig * sig
        var_null_z, rank = fee_numpy.nullspace_variance(j_scaled, np.ones(N_U), atol, rtol)
        var_null = var_null_z * var_amb
        proj, _rank = fee_numpy.null_projector(j_scaled, atol, rtol)
        null_diag = np.diag(proj)
        var = np.maximum(var_data, var_null)
        flags = [False] * N_U
        reasons = [""] * N_U
        if not np.any(has_z):
            flags[4] = True
            reasons[4] = "F_z not measured: the force direction (rho + delta - alpha) is unobserved"
        rake_span = float(np.ptp(window.rho_rad)) if n else 0.0
        if rake_span < cfg["min_rake_span_rad"]:
            for k in (0, 3):
                flags[k] = True
                reasons[k] = ("rake span %.2f deg: c and c_a enter only through c N_c + c_a N_ca"
                              % math.degrees(rake_span))
        for k in range(N_U):
            if flags[k]:
                continue
            if null_diag[k] > cfg["null_fraction"]:
                flags[k] = True
                reasons[k] = "in the null space of the force Jacobian (eq. 9)"
            elif var_data[k] > cfg["unreduced_fraction"] ** 2 * var_amb[k]:
                flags[k] = True
                reasons[k] = "the data hardly reduce its prior variance"
        for k in range(N_U):
            if flags[k]:
                var[k] = max(var[k], var_amb[k])
        fx, fz = self.predict(theta, window, nv.get("surcharge_rel", 0.0), nv.get("depth_m", 0.0))
        fx, fz = fx + res_x, fz + res_z                 # F^FEE + F^r (Fig. 3)
        return CutEstimate(theta, var, var_data, flags, reasons, window, (fx, fz), (has_x, has_z),
                           residual_force_n=(res_x, res_z),
                           residual_sigma_n=(nuis_sigma.get("fx", 0.0), nuis_sigma.get("fz", 0.0)),
                           known_residuals={name: (float(nv[name]), float(nuis_sigma[name]))
                                            for name in ("surcharge_rel", "depth_m") if name in nv},
                           null_diag=null_diag, rank=rank, chi2_red=chi2_red, success=sol.success, nfev=sol.nfev,
                           message=sol.message)
