"""The one estimator contract (pure; the helper extends this docstring)."""


class EstimatorInputError(ValueError):
    """A sample handed to an estimator is malformed or non-finite; the state was not changed."""
