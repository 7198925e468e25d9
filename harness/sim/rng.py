"""Seeded randomness: one seed per run, one independent stream per named consumer.

``RunRandom(seed).stream("imu")`` always gives the same numpy Generator for the
same seed and name, independent of how many other streams exist or in which
order they were made, so adding a sensor does not change another sensor's noise.
"""
import zlib

import numpy as np


class RunRandom:
    def __init__(self, seed):
        self.seed = int(seed)
        self._streams = {}

    def stream(self, name):
        gen = self._streams.get(name)
        if gen is None:
            gen = np.random.default_rng([self.seed, zlib.crc32(name.encode("utf-8"))])
            self._streams[name] = gen
        return gen
