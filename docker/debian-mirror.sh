#!/usr/bin/env bash
# Print the Debian mirror this host's apt already uses (deb822 sources first,
# then sources.list), so no registry host is written into the bundle.
# Exits 1 when the apt sources name none.
set -euo pipefail
uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | awk '/^URIs:/ {print $2}' | grep -v -- '-security' | grep -i debian | head -n1 || true)
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
  uri=$(awk '$1 == "deb" && $3 !~ /security/ {print $2}' /etc/apt/sources.list | head -n1 || true)
fi
[ -n "$uri" ] || exit 1
printf '%s\n' "$uri"
