"""The smoke image's Python environment is the hash-locked docker/smoke-requirements.lock: NIXL in it as
one backend wheel plus the meta package, and no CUDA wheel (nvidia-*) or torch in this CPU image."""

import re

from smokeimage import REPO

from pdrepro.core.pins import parse_env_file

LOCK = REPO / "docker" / "smoke-requirements.lock"
PINS = parse_env_file(REPO / "docker" / "versions.env")


def _entries() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) for every requirement of the lock (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", LOCK.read_text())
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)((?:\s+--hash=sha256:[0-9a-f]{64})*)", line)
        assert m, f"not a pinned, hashed requirement: {line!r}"
        out[m[1].lower().replace("_", "-")] = (m[2], re.findall(r"sha256:([0-9a-f]{64})", m[3]))
    return out


def test_every_locked_wheel_is_pinned_with_a_hash():
    entries = _entries()
    assert len(entries) >= 20
    assert all(hashes for _, hashes in entries.values()), [n for n, (_, h) in entries.items() if not h]


def test_nixl_is_locked_as_one_backend_wheel_and_the_meta_package_at_the_pinned_version():
    entries = _entries()
    version = PINS["NIXL_VERSION"]
    assert version == "1.5.1"
    assert entries["nixl"][0] == version
    assert entries[PINS["SMOKE_NIXL_WHEEL"]][0] == version
    flavours = sorted(n for n in entries if re.fullmatch(r"nixl-cu\d+", n))
    assert flavours == [PINS["SMOKE_NIXL_WHEEL"]]
    assert entries[PINS["MOONCAKE_WHEEL"]][0] == PINS["MOONCAKE_WHEEL_VERSION"]


def test_no_cuda_wheel_enters_the_cpu_image():
    names = set(_entries())
    assert not [n for n in names if n.startswith(("nvidia-", "cuda-")) or n in ("torch", "triton")], sorted(names)


def test_the_image_installs_exactly_the_lock_checking_every_hash():
    dockerfile = (REPO / "docker" / "smoke.Dockerfile").read_text()
    install = re.search(r"pip install[^\n]*\\\n[^\n]*--require-hashes --no-deps -r /wheelhouse/smoke-requirements.lock",
                        dockerfile)
    assert install, "the smoke image must install the lock with --require-hashes --no-deps"
    assert "--no-index" in install[0]
