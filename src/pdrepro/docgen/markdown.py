"""Help texts and descriptions as Markdown prose: what they say, not what Markdown would make of it."""

from __future__ import annotations

import re

# Outside code spans, `*` pairs would turn into emphasis (RUN/bench/*.jsonl ... RUN/logs/*.log) and `<word ...>`
# into an HTML tag a renderer hides (results/gpu-check-<UTC time>): both are escaped there.
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_ESCAPES = {"*": r"\*", "<": "&lt;", ">": "&gt;"}


def prose(text: str) -> str:
    out, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_escape(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_escape(text[last:]))
    return "".join(out)


def _escape(text: str) -> str:
    return "".join(_ESCAPES.get(c, c) for c in text)
