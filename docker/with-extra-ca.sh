#!/usr/bin/env bash
# Run one build command trusting an extra CA (TLS-intercepting proxies). The CA
# arrives as the BuildKit secret `extra_ca`, mounted only for that RUN, and the
# merged bundle lives in a temp dir removed afterwards: nothing reaches a layer.
set -euo pipefail
secret=/run/secrets/extra_ca
if [ ! -s "$secret" ]; then exec "$@"; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat /etc/ssl/certs/ca-certificates.crt "$secret" > "$tmp/ca.pem" 2>/dev/null || cp "$secret" "$tmp/ca.pem"
export SSL_CERT_FILE="$tmp/ca.pem" PIP_CERT="$tmp/ca.pem" REQUESTS_CA_BUNDLE="$tmp/ca.pem" \
       CURL_CA_BUNDLE="$tmp/ca.pem" GIT_SSL_CAINFO="$tmp/ca.pem"
# apt over https reads its own option.
printf 'Acquire::https::CAInfo "%s";\n' "$tmp/ca.pem" > "$tmp/apt.conf"
export APT_CONFIG="$tmp/apt.conf"
"$@"
