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


def output_figures(ok_output_lens: tuple[int, ...], total: int | None, retokenized: int | None, completed: int,
                   output_len: int, range_ratio: float) -> dict:
    """Row fields: the fewest tokens a successful request generated (per request where the
    client listed them, else the mean), the totals, and the fewest the run asked for."""
    fewest, basis = None, None
    if ok_output_lens:
        fewest, basis = min(ok_output_lens), "per request"
    elif total is not None and completed > 0:
        fewest, basis = total // completed, "mean per request"
    if retokenized == 0 and completed > 0:
        fewest, basis = 0, "the generated text holds no token"
    return {"output_tokens_min": fewest, "output_tokens_basis": basis, "output_tokens_total": total,
            "output_tokens_retokenized": retokenized,
            "requested_output_len_min": requested_min(output_len, range_ratio)}
