#!/usr/bin/env bash
# Build a Python environment for the host launcher (`pdrepro stack up`) from a hash-locked list,
# without Docker: what a bare-metal GPU site uses instead of the GPU image. `make gpu-venv` calls it.
#
#   scripts/gpu-venv.sh --python python3.12 --expect-python 3.12 --venv .venv-gpu \
#       --lock docker/gpu-requirements.lock [--wheelhouse wheelhouse/gpu] [--system-site-packages] \
#       [--exclude FILE] [--sglang DIR|REQUIREMENT|none] [--sglang-version V] \
#       [--mooncake WHEEL|REQUIREMENT|none] [--bundle DIR|none] [--imports "mod ..."]
#
# Steps, each stopping the build with one line naming what failed:
#   1. the interpreter is the expected minor version (the lock is resolved for one Python);
#   2. a venv (optionally seeing the system's site-packages, e.g. a machine's own torch);
#   3. every locked package, hashes required, no dependencies beyond the lock, wheels only
#      (offline from --wheelhouse when given); --exclude drops listed packages from the lock first;
#   4. SGLang: a checkout at the pin (DIR/python, built as the image does) or, where its source
#      cannot be had, the pin's nearest release wheel, --no-deps; then Mooncake, --no-deps;
#      then the bundle itself, --no-deps;
#   5. `pip check` (a requirement missing only because --exclude dropped it is reported, not fatal);
#   6. the imports the servers need.
set -euo pipefail

die() { echo "gpu-venv: $*" >&2; exit 2; }
say() { echo "gpu-venv: $*"; }

python=python3.12 expect="" venv=.venv-gpu lock=docker/gpu-requirements.lock wheelhouse="" system_site=""
exclude="" sglang=none sglang_version="" mooncake=none bundle=none
imports="sglang.srt.entrypoints.http_server sglang_router mooncake.engine"
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python=$2; shift 2 ;;
    --expect-python) expect=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    --lock) lock=$2; shift 2 ;;
    --wheelhouse) wheelhouse=$2; shift 2 ;;
    --system-site-packages) system_site=--system-site-packages; shift ;;
    --exclude) exclude=$2; shift 2 ;;
    --sglang) sglang=$2; shift 2 ;;
    --sglang-version) sglang_version=$2; shift 2 ;;
    --mooncake) mooncake=$2; shift 2 ;;
    --bundle) bundle=$2; shift 2 ;;
    --imports) imports=$2; shift 2 ;;
    *) die "unknown option $1 (see the head of $0)" ;;
  esac
done

# 1. The interpreter.
command -v "$python" >/dev/null 2>&1 || die "no $python here; install CPython ${expect:-3.12} or pass PYTHON312=/path/to/python"
have=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ -z "$expect" ] || [ "$have" = "$expect" ] \
  || die "$python is Python $have, but $lock is resolved for $expect; pass PYTHON312= a Python $expect (or LOCK= a lock for $have)"
[ -f "$lock" ] || die "no lock $lock; give LOCK= a hash-locked requirements file (docker/gpu-requirements.lock)"

# 2. The venv.
seen=""
[ -z "$system_site" ] || seen=", seeing the system site-packages"
say "venv $venv from $python (Python $have)$seen"
"$python" -m venv $system_site "$venv" || die "$python -m venv $venv failed (Debian: apt-get install python$have-venv)"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
offline=()
if [ -n "$wheelhouse" ]; then
  [ -d "$wheelhouse" ] || die "no wheelhouse $wheelhouse; fill it with \`make gpu-wheelhouse\` or drop WHEELHOUSE="
  offline=(--no-index --find-links "$wheelhouse")
  say "offline: wheels from $wheelhouse only"
fi

# 3. The lock, hashes required.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
locked=$lock
excluded=("")
if [ -n "$exclude" ]; then
  [ -r "$exclude" ] || die "no exclude list $exclude"
  mapfile -t excluded < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$exclude" | grep -v '^$' | tr 'A-Z_.' 'a-z--')
  locked=$work/lock.txt
  # A requirement line and its --hash continuation lines go (or stay) together.
  awk -v names="${excluded[*]}" '
    BEGIN { n = split(names, list, " "); for (i = 1; i <= n; i++) drop[list[i]] = 1 }
    /^[A-Za-z0-9]/ { name = tolower($1); sub(/[=<>!~;[ ].*/, "", name); gsub(/[_.]/, "-", name); skip = (name in drop) }
    !skip { print }' "$lock" > "$locked"
  say "left out of the lock: ${excluded[*]}"
fi
say "installing $(grep -c '^[A-Za-z0-9]' "$locked") locked packages (hashes required)"
"${pip[@]}" install --quiet --require-hashes --no-deps --only-binary=:all: "${offline[@]}" -r "$locked" \
  || die "installing $lock failed (a hash that does not match, or a wheel missing for Python $have: see pip's message above)"

# 4. SGLang, Mooncake, the bundle: on top of the lock, adding no dependency.
if [ "$sglang" != none ]; then
  if [ -d "$sglang" ]; then
    [ -f "$sglang/python/pyproject.toml" ] || die "$sglang holds no python/pyproject.toml; give an SGLang checkout at the pin"
    say "SGLang from the checkout $sglang (version ${sglang_version:-from git})"
    # A pinned fetch has no tags: the version is given (release + commit), as the image does.
    env ${sglang_version:+SETUPTOOLS_SCM_PRETEND_VERSION_FOR_SGLANG="$sglang_version"} \
      "${pip[@]}" install --quiet --no-index --no-deps --no-build-isolation "$sglang/python" \
      || die "building SGLang from $sglang failed (see above)"
  else
    say "SGLang from the release wheel $sglang (its source at the pin is not here), --no-deps"
    "${pip[@]}" install --quiet --no-deps --only-binary=:all: "${offline[@]}" "$sglang" || die "installing $sglang failed"
  fi
fi
if [ "$mooncake" != none ]; then
  say "Mooncake from $mooncake, --no-deps"
  "${pip[@]}" install --quiet --no-deps "${offline[@]}" "$mooncake" || die "installing $mooncake failed"
fi
if [ "$bundle" != none ]; then
  [ -f "$bundle" ] || die "no bundle wheel $bundle; build it with \`python -m pip wheel --no-deps -w dist .\` (make gpu-venv does)"
  say "the bundle from $bundle, --no-deps (its dependencies are in the lock)"
  "${pip[@]}" install --quiet --no-deps "$bundle" || die "installing the bundle from $bundle failed"
fi

# 5. Every declared requirement present. Tolerated, and said: a requirement missing only because
#    --exclude dropped it, and (with --system-site-packages) the system's own packages' problems.
local=" $("${pip[@]}" list --local --format=freeze 2>/dev/null | sed 's/==.*//' | tr 'A-Z_.' 'a-z--' | tr '\n' ' ') "
if ! report=$("${pip[@]}" check 2>&1); then
  unexpected=$(printf '%s\n' "$report" | while read -r line; do
    owner=$(printf '%s' "$line" | cut -d' ' -f1 | tr 'A-Z_.' 'a-z--')
    want=$(printf '%s' "$line" | sed -n 's/.* requires \([A-Za-z0-9_.-]*\),.*/\1/p' | tr 'A-Z_.' 'a-z--')
    if [ -n "$want" ] && printf '%s\n' "${excluded[@]}" | grep -qx "$want"; then continue; fi
    # NIXL's meta package names a backend per CUDA major; the lock holds its own CUDA's only.
    case "$want" in nixl-cu1[0-9]) [ "$owner" = nixl ] && continue ;; esac
    if [ -n "$system_site" ] && [ "${local/ $owner /}" = "$local" ]; then continue; fi
    printf '%s\n' "$line"
  done)
  [ -z "$unexpected" ] || die "pip check: $(printf '%s' "$unexpected" | head -1) (the lock and what is installed disagree)"
  say "pip check: only what was left out on purpose or the system's own packages fall short: $(printf '%s' "$report" | tr '\n' ';')"
else
  say "pip check: $report"
fi

# 6. What the servers import.
for module in $imports; do
  "$venv/bin/python" -c "import $module" >"$work/import.log" 2>&1 \
    || die "import $module failed in $venv: $(tail -1 "$work/import.log")"
  say "import $module: ok"
done
say "ready: $venv/bin/python (run the host launcher as $venv/bin/pdrepro stack up ...)"
