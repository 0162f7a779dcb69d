"""Reproduce the Mooncake x SGLang PD-disaggregation KV-transfer benchmark."""

__version__ = "0.1.0"
