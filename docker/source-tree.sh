#!/usr/bin/env bash
# Assemble a source tree at one commit, submodules included, as plain files
# under OUT, for GPU builds that cannot reach GitHub (MOONCAKE_SOURCE=local,
# SGLANG_SOURCE=local). The submodule commits are the ones the commit records,
# so the tree is what `git clone --recursive` + checkout would give. A stamp,
# OUT/.pdrepro-source, names NAME=COMMIT and each submodule's commit; the
# Dockerfile refuses a tree whose stamp is not the pin.
#
# Usage: source-tree.sh NAME GIT COMMIT OUT [SUBMODULE_PATH=GIT_DIR ...]
#   NAME     mooncake | sglang (the stamp's key)
#   GIT      a clone (bare or not) that holds COMMIT
#   SUBMODULE_PATH=GIT_DIR  where a submodule's commits live when the clone has
#            no initialised submodule there (e.g. extern/pybind11=/src/pybind11)
set -euo pipefail

say() { printf 'source-tree: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

name=${1:-} repo=${2:-} commit=${3:-} out=${4:-}
if [ -z "$name" ] || [ -z "$repo" ] || [ -z "$commit" ] || [ -z "$out" ]; then
  die "usage: source-tree.sh NAME GIT COMMIT OUT [SUBMODULE_PATH=GIT_DIR ...]"
fi
shift 4
declare -A override=()
for pair in "$@"; do
  [[ "$pair" == *=* ]] || die "'$pair' is not SUBMODULE_PATH=GIT_DIR"
  override[${pair%%=*}]=${pair#*=}
done

git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 ||
  die "$repo is not a git clone; give a clone of the $name repository"
git -C "$repo" cat-file -e "${commit}^{commit}" 2>/dev/null ||
  die "$repo does not hold commit $commit; fetch it there first (git -C $repo fetch origin $commit)"

stamp="$out/.pdrepro-source"
if [ -f "$stamp" ] && grep -qx "$name=$commit" "$stamp"; then
  say "$out already holds $name $commit"
  exit 0
fi

tmp="$out.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# Partial mirrors can lack a few large blobs (trace data, papers); a build
# never reads them, so leave them out by name instead of failing.
missing=$(git -C "$repo" ls-tree -r "$commit" | awk '$2 == "blob" {print $3}' |
  git -C "$repo" cat-file --batch-check | awk '$2 == "missing" {print $1}')
excludes=()
if [ -n "$missing" ]; then
  while read -r _mode _type blob path; do
    if grep -qx "$blob" <<<"$missing"; then
      excludes+=(":(exclude)$path")
      say "left out $path (its blob is not in $repo)"
    fi
  done < <(git -C "$repo" ls-tree -r "$commit")
fi
git -C "$repo" archive --format=tar "$commit" -- . "${excludes[@]}" | tar -x -C "$tmp"
echo "$name=$commit" >"$tmp/.pdrepro-source.new"

# Each gitlink (mode 160000) in the tree is a submodule at a recorded commit.
while read -r _mode _type sub_commit path; do
  src=${override[$path]:-}
  if [ -z "$src" ]; then
    if git -C "$repo/$path" rev-parse --git-dir >/dev/null 2>&1; then
      src="$repo/$path"
    else
      die "submodule $path ($sub_commit) is not initialised in $repo; run 'git submodule update --init' there or pass $path=GIT_DIR"
    fi
  fi
  git -C "$src" cat-file -e "${sub_commit}^{commit}" 2>/dev/null ||
    die "$src does not hold $path's commit $sub_commit; fetch it there first"
  mkdir -p "$tmp/$path"
  git -C "$src" archive --format=tar "$sub_commit" | tar -x -C "$tmp/$path"
  echo "$path=$sub_commit" >>"$tmp/.pdrepro-source.new"
  say "$path at $sub_commit"
done < <(git -C "$repo" ls-tree -r "$commit" | awk '$1 == "160000"')

mv "$tmp/.pdrepro-source.new" "$tmp/.pdrepro-source"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$tmp" "$out"
trap - EXIT
say "$name $commit assembled in $out ($(du -sh "$out" | cut -f1))"
