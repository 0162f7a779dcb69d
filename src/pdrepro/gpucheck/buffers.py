"""The buffer a side registers with the engine: GPU memory, or host memory
where no GPU is (to rehearse the check itself, e.g. in the smoke image)."""

from __future__ import annotations

import ctypes
import hashlib
import mmap

from .pattern import STAGE_BYTES


class HostBuffer:
    kind = "host"

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self._mem = mmap.mmap(-1, nbytes)
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self._mem))

    def write(self, offset: int, data: bytes) -> None:
        self._mem[offset:offset + len(data)] = data

    def zero(self) -> None:
        ctypes.memset(self.addr, 0, self.nbytes)

    def digest(self, nbytes: int) -> str:
        return hashlib.blake2b(memoryview(self._mem)[:nbytes], digest_size=32).hexdigest()

    def close(self) -> None:
        self._mem.close()


class DeviceBuffer:
    kind = "gpu"

    def __init__(self, runtime, gpu: int, nbytes: int) -> None:
        self.rt, self.gpu, self.nbytes = runtime, gpu, nbytes
        runtime.set_device(gpu)
        self.addr = runtime.malloc(nbytes)
        # Copies in and out of the device go through one bounded host buffer, so a
        # multi-GB check never holds a second copy of its buffer in host memory.
        self._stage = ctypes.create_string_buffer(STAGE_BYTES)

    def write(self, offset: int, data: bytes) -> None:
        ctypes.memmove(self._stage, data, len(data))
        self.rt.to_device(self.addr + offset, ctypes.addressof(self._stage), len(data))

    def zero(self) -> None:
        self.rt.memset(self.addr, 0, self.nbytes)

    def digest(self, nbytes: int) -> str:
        h = hashlib.blake2b(digest_size=32)
        for off in range(0, nbytes, STAGE_BYTES):
            n = min(STAGE_BYTES, nbytes - off)
            self.rt.to_host(ctypes.addressof(self._stage), self.addr + off, n)
            h.update(memoryview(self._stage)[:n])
        return h.hexdigest()

    def close(self) -> None:
        self.rt.free(self.addr)
