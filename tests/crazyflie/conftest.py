"""Fixtures of the Crazyflie tests: the real cflib (drivers initialised once), sync connections that close."""
import logging

import pytest

from boards.crazyflie.driver import init_cflib


@pytest.fixture(autouse=True)
def _quiet_cflib():
    # cflib warns on every connect that a cache-less Crazyflie cannot save its TOC cache
    logging.getLogger("cflib.crazyflie.toccache").setLevel(logging.ERROR)
    yield


@pytest.fixture
def open_sync():
    """open_sync(uri, cache_dir=None) -> an open cflib SyncCrazyflie, closed at teardown."""
    from cflib.crazyflie import Crazyflie
    from cflib.crazyflie.syncCrazyflie import SyncCrazyflie

    init_cflib()
    opened = []

    def _open(uri, cache_dir=None):
        scf = SyncCrazyflie(uri, cf=Crazyflie(rw_cache=cache_dir))
        scf.open_link()
        opened.append(scf)
        return scf

    yield _open
    for scf in opened:
        scf.close_link()
