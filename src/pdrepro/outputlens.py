"""How many tokens the bench client's requests really generated.

A PD stack whose KV transfers fail can still answer HTTP 200 with an empty
completion, and the client then counts the request as completed. Its own
token counts tell: ``output_lens`` per request (with --output-details),
``total_output_tokens`` and ``total_output_tokens_retokenized`` (the
generated text tokenized again, which cannot be filled in from the request).
"""

from __future__ import annotations


def requested_min(output_len: int, range_ratio: float) -> int:
    """The fewest tokens the random dataset asks a request for: it draws each
    output length from [int(output_len * ratio), output_len], at least 1."""
    return max(int(output_len * range_ratio), 1)


def _count(raw: dict, key: str) -> int | None:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value)


def output_figures(raw: dict, completed: int, output_len: int, range_ratio: float) -> dict:
    """Row fields: the fewest tokens a successful request generated (per request where the
    client listed them, else the mean), the totals, and the fewest the run asked for."""
    lens, errors = raw.get("output_lens"), raw.get("errors")
    per_request = None
    if isinstance(lens, list) and lens:
        errors = errors if isinstance(errors, list) and len(errors) == len(lens) else [""] * len(lens)
        ok = [n for n, e in zip(lens, errors) if not e and isinstance(n, (int, float)) and not isinstance(n, bool)]
        per_request = min(ok) if ok else None
    total = _count(raw, "total_output_tokens")
    retokenized = _count(raw, "total_output_tokens_retokenized")
    fewest, basis = None, None
    if per_request is not None:
        fewest, basis = int(per_request), "per request"
    elif total is not None and completed > 0:
        fewest, basis = total // completed, "mean per request"
    if retokenized == 0 and completed > 0:
        fewest, basis = 0, "the generated text holds no token"
    return {"output_tokens_min": fewest, "output_tokens_basis": basis, "output_tokens_total": total,
            "output_tokens_retokenized": retokenized,
            "requested_output_len_min": requested_min(output_len, range_ratio)}
