"""The base of summary.json's models: records closed to unknown keys (an issue, the headline) or open to them
(rows and the records a summary carries, which hold more than the fields their readers use), titled in the
JSON Schema by their keys as they appear in summary.json."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.fields import ComputedFieldInfo, FieldInfo

# A figure as JSON holds it: what a display-only record (a server argument, an environment value) may be.
Scalar = str | int | float | bool | None


def _key(name: str, _info: FieldInfo | ComputedFieldInfo) -> str:
    return name  # schema titles are the keys as they appear in summary.json


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, field_title_generator=_key)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, field_title_generator=_key)
