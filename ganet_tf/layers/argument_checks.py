"""Argument checks shared by the layers' and models' constructors."""

import math
import numbers


def is_real(value):
    """Whether `value` is a finite real number (Python or NumPy), not a bool.

    The layers check their numeric arguments with it before the range test,
    so that `nan` (which fails no comparison), `inf` and `True` are refused
    with the argument's own error line rather than accepted.
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
