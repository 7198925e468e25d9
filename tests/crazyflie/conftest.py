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
    """open_sync(uri, cache_dir=None, before_open=None) -> an open cflib SyncCrazyflie, closed at teardown;
    ``before_open(cf)`` is called with its Crazyflie before the link opens (a CflibCounter must see every packet).

    ``open_sync.close_all()`` closes them earlier: call it before the simulated fleet closes its
    sockets, or cflib's ping thread may still send to a closed port (ConnectionRefusedError in
    that thread, reported by pytest as a warning)."""
    from cflib.crazyflie import Crazyflie
    from cflib.crazyflie.syncCrazyflie import SyncCrazyflie

    init_cflib()
    opened = []

    def _open(uri, cache_dir=None, before_open=None):
        scf = SyncCrazyflie(uri, cf=Crazyflie(rw_cache=cache_dir))
        if before_open is not None:
            before_open(scf.cf)
        scf.open_link()
        opened.append(scf)
        return scf

    def close_all():
        while opened:
            scf = opened.pop()
            if scf.is_link_open():
                scf.close_link()

    _open.close_all = close_all
    yield _open
    close_all()
