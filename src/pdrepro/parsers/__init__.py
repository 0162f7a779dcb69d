"""Readers of the upstream formats: SGLang's bench client JSONL, server logs and /metrics text, the Mooncake
Transfer Engine's start-up log, transfer_engine_bench's and perftest's result lines, the bench client's token counts.

Each parser turns upstream text into plain values in base units (seconds,
bytes) and says which file is wrong when it cannot.
"""
