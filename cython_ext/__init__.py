"""Cython builds of the runtime's hot loops (built by `make setup` into this folder).

Each extension gives the same results as the pure path it accelerates; the test
suite runs both and compares. Select with ``onboard.impl`` (env ONBOARD_IMPL).
"""
