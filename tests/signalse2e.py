"""The mark of a heavy end-to-end signal test: `make signals-e2e` runs it (PDREPRO_SIGNALS_E2E=1), `make test`
skips it and keeps a fast representative of its kind, so the suite does not get slower."""

from __future__ import annotations

import os

import pytest

HEAVY = pytest.mark.skipif(os.environ.get("PDREPRO_SIGNALS_E2E") != "1",
                           reason="heavy end-to-end signal test: run `make signals-e2e`")
