"""An estimator's get_state() with every float replaced by its exact bit pattern (``float.hex``), for tests that
compare the pure and compiled builds bit for bit."""


def state_bits(state):
    out = {}
    for key, value in state.items():
        if isinstance(value, list):
            out[key] = [v.hex() if isinstance(v, float) else v for v in value]
        elif isinstance(value, float):
            out[key] = value.hex()
        else:
            out[key] = value
    return out
