"""Shared test configuration: deterministic hypothesis, repo root on sys.path, SIGINT deliverable to children."""
import os
import signal
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

# A suite started in the background by a non-interactive shell (`make test &`, some CI runners) inherits SIGINT
# ignored, and every child process would inherit that too: the tests that press Ctrl-C on a harness run, a
# sweep, mpremote or the virtual board would then see their signal vanish. A Python handler is reset to the
# default in an exec'd child (only "ignored" is inherited), so this makes SIGINT reach the children again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
