"""Neural policies: int8 TFLite models run by LiteRT, a pure int8 kernel and an AVR C kernel.

``load_policy(model_dir, backend)`` is the entry point (see ``onboard.policy.policy``).
Imports stay lazy so ``import onboard.policy`` costs nothing on a microcontroller.
"""


def load_policy(model_dir, backend="pure"):
    """Load ``models/<name>/`` and return a Policy (see onboard.policy.policy.load_policy)."""
    from onboard.policy.policy import load_policy as _load
    return _load(model_dir, backend)
