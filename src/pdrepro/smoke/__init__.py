"""The smoke test: KV-sized transfers between two containers through the real
Mooncake Transfer Engine, next to a plain socket copy, on a machine without GPUs.

``agent`` runs inside the smoke image; ``run`` orchestrates it from the host.
"""
