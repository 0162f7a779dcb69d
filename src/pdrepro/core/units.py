"""Units, spelled out once.

The published table is decimal (1 GB = 10**9 B). SGLang's logs say "GB/s"
and "MB" but mean binary units (GiB/s, MiB), so parsers convert to bytes and
seconds at once and everything after works in base units.
"""

GB = 10**9
MB = 10**6
GiB = 2**30
MiB = 2**20


def human_bytes(n: float) -> str:
    """Decimal size as the published table prints it: '49 MB', '1.58 GB'."""
    if n >= GB:
        return f"{n / GB:.2f} GB"
    if n < 10 * MB:  # below the published sizes: whole MB would hide the figure
        return f"{n / MB:.2f} MB"
    return f"{n / MB:.0f} MB"


def bandwidth_GB_s(nbytes: float, seconds: float) -> float:
    """Decimal GB/s."""
    return nbytes / seconds / GB
