"""Seeded randomness: one seed per run, one independent stream per named consumer.

``RunRandom(seed).stream("imu")`` always gives the same numpy Generator for the
same seed and name, independent of how many other streams exist or in which
order they were made, so adding a sensor does not change another sensor's noise.
"""
import numbers
import zlib

import numpy as np


class RunRandom:
    """``seed``: a whole number >= 0 (an int, or a float with no fraction); ValueError otherwise (a negative
    seed, a fraction that would be dropped, NaN, a bool)."""

    def __init__(self, seed):
        if isinstance(seed, bool) or not isinstance(seed, numbers.Real) or not seed == seed // 1 or seed < 0 \
                or seed - seed != 0:
            raise ValueError("RunRandom: the seed must be a whole number >= 0, got %r" % (seed,))
        self.seed = int(seed)
        self._streams = {}

    def stream(self, name):
        """The numpy Generator of the stream ``name`` (a string; ValueError otherwise)."""
        gen = self._streams.get(name) if isinstance(name, str) else None
        if gen is None:
            if not isinstance(name, str):
                raise ValueError("RunRandom.stream: the name must be a string, got %r" % (name,))
            gen = np.random.default_rng([self.seed, zlib.crc32(name.encode("utf-8"))])
            self._streams[name] = gen
        return gen
