"""Component settings: defaults overridden by a user dict, unknown keys rejected (MicroPython-compatible)."""


def with_defaults(defaults, overrides, owner):
    """A copy of ``defaults`` updated from ``overrides``; a key not in ``defaults`` raises
    ValueError naming ``owner`` and the key, so a typo in a config never passes silently."""
    cfg = dict(defaults)
    if overrides:
        for key in overrides:
            if key not in defaults:
                raise ValueError("unknown %s setting %r (known: %s)"
                                 % (owner, key, ", ".join(sorted(defaults))))
            cfg[key] = overrides[key]
    return cfg
