"""``onboard.runtime.signal_guard``: a signal delivered inside a deferred section whose block raises."""
import pytest

from onboard.runtime import signal_guard


class _Stop(BaseException):
    pass


def test_a_signal_delivered_in_a_section_that_raises_is_raised_as_it_ends_not_in_a_later_section():
    """A signal delivered in a section whose block raises is raised as the section ends, the block's error as
    its context (kept pending, it would be raised at the end of some later, unrelated section - or never)."""
    with pytest.raises(_Stop) as err:
        with signal_guard.deferred():
            signal_guard.deliver(_Stop)
            raise OSError("disk full")
    assert isinstance(err.value.__context__, OSError)
    with signal_guard.deferred():              # a later section: nothing pending any more
        pass
    assert signal_guard._state == {"depth": 0, "pending": None}


def test_a_signal_delivered_in_a_nested_section_waits_for_the_outermost():
    ran = []
    with pytest.raises(_Stop):
        with signal_guard.deferred():
            with pytest.raises(ValueError):
                with signal_guard.deferred():
                    signal_guard.deliver(_Stop)
                    raise ValueError("inner")
            ran.append("after inner")
    assert ran == ["after inner"]
    assert signal_guard._state == {"depth": 0, "pending": None}
    with pytest.raises(_Stop):
        signal_guard.deliver(_Stop)             # outside a section: at once
