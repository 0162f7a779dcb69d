#!/usr/bin/env bash
# `pip check` for the GPU image, allowing one known gap: NIXL's meta package (nixl) requires a backend wheel
# for each CUDA major, and the image carries only its own (nixl-cu13; docker/gpu-requirements.in says why).
# Any other broken requirement fails the build, named.
set -uo pipefail
allowed_missing=${PIP_CHECK_ALLOWED_MISSING:-nixl-cu12}
report=$(pip check 2>&1) && { echo "$report"; exit 0; }
unexpected=$(printf '%s\n' "$report" | while read -r line; do
  owner=$(printf '%s' "$line" | cut -d' ' -f1 | tr 'A-Z_.' 'a-z--')
  want=$(printf '%s' "$line" | sed -n 's/.* requires \([A-Za-z0-9_.-]*\), which is not installed\.$/\1/p' | tr 'A-Z_.' 'a-z--')
  # shellcheck disable=SC2086 # a space-separated list, split on purpose
  if [ "$owner" = nixl ] && [ -n "$want" ] && printf '%s\n' $allowed_missing | grep -qx "$want"; then continue; fi
  printf '%s\n' "$line"
done)
if [ -n "$unexpected" ]; then
  printf 'pip check: %s\n' "$unexpected" >&2
  exit 1
fi
echo "pip check: only the other CUDA majors' NIXL backends are missing, as meant: $(printf '%s' "$report" | tr '\n' ';')"
