"""A board service's shutdown steps (motors released, log closed, ports closed) all run when one of them raises;
the first error is raised afterwards."""
import pytest

from boards.linux_service import run_all


def test_every_step_runs_and_the_first_error_is_raised():
    ran = []

    def step(name, exc=None):
        def call():
            ran.append(name)
            if exc is not None:
                raise exc
        return call

    with pytest.raises(OSError, match="port vanished"):
        run_all([step("motors", OSError("port vanished")), step("log", ValueError("second")), step("ports")])
    assert ran == ["motors", "log", "ports"]


def test_no_error_raises_nothing():
    ran = []
    run_all([lambda: ran.append(1), lambda: ran.append(2)])
    assert ran == [1, 2]
