"""The state files that let a long command resume (the arms runner's, a load sweep's, a tune's plan): read as
their model, or refused on one line that says what the file is not; written only through the safe writer."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from ..core import runfile
from ..core.errors import UserError
from ..core.safewrite import refusal, write_file
from ..core.strictmodel import load
from .contract import dumps_json

M = TypeVar("M", bound=BaseModel)


def read_state(p: Path, model: type[M], what: str) -> M | None:
    """``p`` as ``model``; None when there is no file; anything that is no ``what``: one line, exit 2."""
    fix = f"it is no {what} this release wrote: move it away (or give another --out)"
    try:
        data = runfile.read_json(p)
    except FileNotFoundError:
        return None
    except (ValueError, RecursionError) as exc:  # not JSON (UnicodeDecodeError is one too), or nested past reason
        why = str(exc)[:120] if isinstance(exc, ValueError) else "nested too deep"
        raise UserError(f"{p}: is not JSON ({why}); {fix}") from None
    return load(model, data, str(p), fix=fix)


def write_state(p: Path, state: BaseModel, who: str, run: Path) -> None:
    """``state`` at ``p`` inside ``run``, never through a link planted there."""
    refused = refusal(p, who)
    if refused is not None:
        raise refused
    write_file(p, dumps_json(state.model_dump(mode="json"), p, indent=2), who, Path(run))
