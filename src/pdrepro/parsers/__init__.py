"""Readers for what SGLang writes: bench client JSONL, server logs, /metrics text.

Each parser turns upstream text into plain values in base units (seconds,
bytes) and says which file is wrong when it cannot.
"""
