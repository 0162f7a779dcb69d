"""What the sending side holds: seeded bytes that differ in every block.

A multi-GB random pattern would take seconds to make on each side; instead one
seeded block is repeated with the block's index stamped into its first bytes,
so a byte that lands at the wrong offset still changes the digest.
"""

from __future__ import annotations

import hashlib
import random
import struct

from ..core.units import MiB

BLOCK_BYTES = MiB
STAGE_BYTES = 64 * MiB


def block(seed: int, index: int, base: bytes | None = None) -> bytes:
    base = base if base is not None else random.Random(seed).randbytes(BLOCK_BYTES)
    return struct.pack("<Q", index) + base[8:]


def chunks(seed: int, nbytes: int, chunk_bytes: int = STAGE_BYTES):
    """(offset, bytes) pieces of the pattern's first nbytes, chunk_bytes at a time."""
    base = random.Random(seed).randbytes(BLOCK_BYTES)
    per_chunk = chunk_bytes // BLOCK_BYTES
    for off in range(0, nbytes, chunk_bytes):
        first = off // BLOCK_BYTES
        data = b"".join(block(seed, first + i, base) for i in range(per_chunk))
        yield off, data[: min(chunk_bytes, nbytes - off)]


def digest(seed: int, nbytes: int) -> str:
    h = hashlib.blake2b(digest_size=32)
    for _, data in chunks(seed, nbytes):
        h.update(data)
    return h.hexdigest()
