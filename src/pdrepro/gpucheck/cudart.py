"""Just enough of the CUDA runtime, through ctypes, to own device buffers.

ctypes instead of torch keeps the check independent of the Python stack it is
meant to vet: it runs wherever ``libcudart`` and a driver are present.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys

from ..core.errors import UserError

_H2D, _D2H = 1, 2
_SONAMES = ("libcudart.so.13", "libcudart.so.12", "libcudart.so")


def _candidates() -> list[str]:
    env = os.environ.get("PDREPRO_CUDART")
    if env:
        return [env]
    found = list(_SONAMES)
    # Wheels of the cuda-runtime package keep it inside site-packages.
    for base in sys.path:
        found += sorted(glob.glob(os.path.join(base, "nvidia", "cu*", "lib", "libcudart.so.*")), reverse=True)
        found += sorted(glob.glob(os.path.join(base, "nvidia", "cuda_runtime", "lib", "libcudart.so.*")), reverse=True)
    found += sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so.*"), reverse=True)
    name = ctypes.util.find_library("cudart")
    if name:
        found.append(name)
    return found


def load() -> ctypes.CDLL:
    errors = []
    for cand in _candidates():
        try:
            return ctypes.CDLL(cand)
        except OSError as exc:
            errors.append(str(exc))
    raise UserError(
        "no CUDA runtime (libcudart) can be loaded here; run the check in the GPU image, or set "
        "PDREPRO_CUDART=/path/to/libcudart.so.13" + (f" (last error: {errors[-1]})" if errors else ""))


class Runtime:
    """The calls the check makes; each failure becomes one line naming the call."""

    def __init__(self, lib: ctypes.CDLL | None = None) -> None:
        self.lib = lib or load()
        self.lib.cudaGetErrorString.restype = ctypes.c_char_p
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.cudaFree.argtypes = [ctypes.c_void_p]
        self.lib.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        self.lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

    def _ok(self, rc: int, what: str) -> None:
        if rc != 0:
            msg = self.lib.cudaGetErrorString(rc).decode(errors="replace")
            raise UserError(f"CUDA {what} failed: {msg} (error {rc}); check `nvidia-smi` and that the driver "
                            "is R580 or newer for the CUDA 13 image")

    def device_count(self) -> int:
        n = ctypes.c_int(0)
        self._ok(self.lib.cudaGetDeviceCount(ctypes.byref(n)), "cudaGetDeviceCount")
        return n.value

    def set_device(self, gpu: int) -> None:
        self._ok(self.lib.cudaSetDevice(gpu), f"cudaSetDevice({gpu})")

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        self._ok(self.lib.cudaMalloc(ctypes.byref(ptr), nbytes), f"cudaMalloc({nbytes} B)")
        if ptr.value is None:  # a success that hands back NULL: nothing to use
            raise UserError(f"cudaMalloc({nbytes} B) returned a null pointer")
        return ptr.value

    def free(self, ptr: int) -> None:
        self._ok(self.lib.cudaFree(ptr), "cudaFree")

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        self._ok(self.lib.cudaMemset(ptr, value, nbytes), "cudaMemset")
        self._ok(self.lib.cudaDeviceSynchronize(), "cudaDeviceSynchronize")

    def to_device(self, dst: int, src: int, nbytes: int) -> None:
        self._ok(self.lib.cudaMemcpy(dst, src, nbytes, _H2D), "cudaMemcpy host->device")

    def to_host(self, dst: int, src: int, nbytes: int) -> None:
        self._ok(self.lib.cudaMemcpy(dst, src, nbytes, _D2H), "cudaMemcpy device->host")
