"""Each kind owns its row: the shared per-length row (LengthRow) holds only what every kind measures, a field only
served requests have lives in the sweep's Row, a smoke's figures in SmokeRow, and every row refuses a key no
model of its kind declares. summary.json's keys stay: a smoke's row keeps the keys it always wrote as null."""

from __future__ import annotations

import types

import pytest
from pydantic import ValidationError

from pdrepro.rundir.contract import result_row
from pdrepro.rundir.summarymodel import LengthRow, Row, SmokeRow


def _null_only(model: type, name: str) -> bool:
    return model.model_fields[name].annotation in (None, types.NoneType)


def test_the_shared_row_holds_only_what_every_kind_measures():
    shared = set(LengthRow.model_fields)
    assert shared and shared <= set(Row.model_fields) and shared <= set(SmokeRow.model_fields)
    # No shared field is one a kind declares it never measures.
    assert not [n for n in shared if _null_only(SmokeRow, n) or _null_only(Row, n)]
    # What only served requests show (TTFT, the servers' phases, the NIC counters) is not shared: the smoke either
    # lacks it or declares it always null.
    served_only = set(Row.model_fields) - shared
    assert {"ttft_ms_mean", "phase_ms_median", "nic_rails", "output_tokens_min"} <= served_only
    assert all(n not in SmokeRow.model_fields or _null_only(SmokeRow, n) for n in served_only)
    # And the smoke's own figures are nobody else's.
    smoke_own = {n for n in set(SmokeRow.model_fields) - shared if not _null_only(SmokeRow, n)}
    assert "socket_bandwidth_GB_s" in smoke_own and not smoke_own & set(Row.model_fields)


@pytest.mark.parametrize("model", [LengthRow, Row, SmokeRow])
def test_every_row_refuses_an_undeclared_key(model):
    with pytest.raises(ValidationError, match="extra"):
        model.model_validate({"prompt_len": 128, "not_a_figure": 1})


def test_a_smoke_row_keeps_its_null_keys_and_refuses_a_figure_there():
    # The keys the shared writer gives every row (contract.result_row): a smoke's row parses with them all null.
    written = result_row(128, 1000, line_rate_GB_s=None, expected_requests=4, requests=4, transfer_samples=4,
                         transfer_ms_median=1.0, transfer_ms_mean=1.0)
    row = SmokeRow.model_validate(written)
    assert row.model_dump(exclude_unset=True).keys() == written.keys()
    with pytest.raises(ValidationError, match="ttft_ms_mean"):
        SmokeRow.model_validate({**written, "ttft_ms_mean": 12.5})
    # The same keys with figures are a served row's.
    assert Row.model_validate({**written, "ttft_ms_mean": 12.5}).ttft_ms_mean == 12.5
