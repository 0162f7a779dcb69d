#!/usr/bin/env bash
# Make a link-time stub of the CUDA driver library from cuda.h: one empty
# function per driver API entry point, with the soname of the real driver
# library, so programs link as they do against the toolkit's own stub and
# load the driver's libcuda.so.1 at run time. Every entry returns
# CUDA_ERROR_STUB_LIBRARY (34) should anything call it by mistake.
#
# Usage: cuda-stub.sh CUDA_H OUT_SO
set -euo pipefail
header=${1:?usage: cuda-stub.sh CUDA_H OUT_SO}
out=${2:?usage: cuda-stub.sh CUDA_H OUT_SO}
inc=$(dirname "$header")
src=$(mktemp --suffix=.c)
trap 'rm -f "$src"' EXIT
# Names as declared and as the header's versioning macros turn them into
# (cuMemAlloc -> cuMemAlloc_v2, ...): callers built with the header use the latter.
{ gcc -E -P -I "$inc" "$header"; cat "$header"; } |
  grep -oE '\bCUresult[[:space:]]+(CUDAAPI[[:space:]]+)?cu[A-Za-z0-9_]+[[:space:]]*\(' |
  sed -E 's/^CUresult[[:space:]]+(CUDAAPI[[:space:]]+)?//; s/[[:space:]]*\($//' |
  sort -u | awk '{print "int " $1 "(void) { return 34; }"}' >"$src"
n=$(wc -l <"$src")
[ "$n" -gt 100 ] || { echo "cuda-stub: only $n entry points found in $header" >&2; exit 1; }
gcc -shared -fPIC -o "$out" -Wl,-soname,libcuda.so.1 "$src"
echo "cuda-stub: $out with $n entry points" >&2
