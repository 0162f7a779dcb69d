"""JSON the bundle writes: strict (no NaN or infinity, which JSON cannot hold), and a
failure names the file and the figure instead of a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

from .errors import UserError


def _non_finite(data, where: str = "") -> tuple[str, float] | None:
    """(key path, value) of the first NaN or infinity in ``data``."""
    if isinstance(data, float) and not math.isfinite(data):
        return where or "the top level", data
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    for key, value in items:
        path = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        found = _non_finite(value, path)
        if found:
            return found
    return None


def dumps(data, path: Path, **kwargs) -> str:
    """``json.dumps`` that refuses NaN and infinity with one line naming ``path`` and the figure."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs) + "\n"
    except ValueError:
        where, value = _non_finite(data) or ("a figure", math.nan)
        raise UserError(f"{path}: not written: {where} is {value}, which is no measurement (JSON cannot hold it); "
                        "an input carries a broken figure: fix the input named in the other messages and run again") from None


def unwritable(path: Path, exc: OSError, root: Path) -> UserError:
    """The one line for a result that cannot be written where the run lives."""
    return UserError(f"{path}: cannot be written ({exc.strerror}); make {root} writable (e.g. chmod u+w), or copy the "
                     "run to a writable folder and run the command there")
