"""Shared test configuration: deterministic hypothesis, repo root on sys.path."""
import os
import sys

from hypothesis import HealthCheck, settings

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)
CASES = os.path.join(REPO_ROOT, "tests", "micropython", "cases")
if CASES not in sys.path:
    sys.path.insert(0, CASES)

# Tests are seeded and deterministic: hypothesis derives its examples from the test itself.
settings.register_profile("deterministic", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
