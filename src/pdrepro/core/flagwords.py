"""A typed request written as the command-line flags that would ask for it (issue 33 item 3).

A runner's state (rundir.armsstate) records what each member was asked as words, so that a person can read it and a
rerun can tell its own plan from another's. The stages themselves are handed the typed request, never these words:
this is the record's one spelling of a request, drawn from its fields alone, the same for the same request.
Each field is the option of its name (``model_path`` is ``--model-path``); a field at its default is left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"  # 120.0 reads as the 120 a person gives
    return str(value)


def _one(flag: str, value: object) -> list[str]:
    if value is True:
        return [flag]
    text = _value(value)
    # A value that opens with a dash (a server flag) is joined to its option, so a parser never takes it for one.
    return [f"{flag}={text}"] if text.startswith("-") else [flag, text]


def flag_words(request: object, skip: Iterable[str] = ()) -> tuple[str, ...]:
    """``request`` (a dataclass) as flags: each field not in ``skip`` and not at its default, in field order; a
    sequence as its option repeated, a true switch as its option alone."""
    left_out = set(skip)
    words: list[str] = []
    for field in dataclasses.fields(request):  # type: ignore[arg-type]
        if field.name in left_out or not field.compare:
            continue
        value = getattr(request, field.name)
        default = field.default if field.default is not dataclasses.MISSING else (
            field.default_factory() if field.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        if value == default or value is None or value is False:
            continue
        flag = "--" + field.name.replace("_", "-")
        for item in value if isinstance(value, (tuple, list)) else (value,):
            words += _one(flag, item)
    return tuple(words)
