#!/usr/bin/env bash
# Merge the Triton cache entries a device call sent back (FILES_AT/triton_cache.tgz.0, .1, from
# benchmarks/device_session.sh's pack_cache) into the repository's ignored .triton_cache/, then
# drop its oldest entries until it holds at most MAX_MB (default 40) megabytes, so that carrying
# it (run's carry [".triton_cache"]) stays well inside the 64 MiB a call may take along.
#   bash benchmarks/merge_triton_cache.sh /work/.device/N [MAX_MB]
set -euo pipefail
files_at=${1:?usage: merge_triton_cache.sh FILES_AT [MAX_MB]}
max_kb=$(( ${2:-40} * 1024 ))
cache="$(cd "$(dirname "$0")/.." && pwd)/.triton_cache"
mkdir -p "$cache"
shopt -s nullglob
parts=("$files_at"/triton_cache.tgz.*)
if [[ ${#parts[@]} -eq 0 ]]; then
  echo "no triton_cache.tgz.* under $files_at"; exit 0
fi
cat "${parts[@]}" | tar xzf - -C "$cache"
# the merged entries are the newest (tar keeps their mtimes: touch them); oldest out first
tar tzf <(cat "${parts[@]}") | sed 's%^\./%%' | cut -d/ -f1 | sort -u | grep -v '^$' \
  | while read -r entry; do if [[ -e "$cache/$entry" ]]; then touch "$cache/$entry"; fi; done
while [[ $(du -sk "$cache" | cut -f1) -gt $max_kb ]]; do
  oldest=$(find "$cache" -mindepth 1 -maxdepth 1 -printf '%T@ %p\n' | sort -n | sed -n 1p | cut -d' ' -f2-)
  [[ -n $oldest ]] || break
  rm -rf "$oldest"
done
echo "merged ${#parts[@]} part(s); .triton_cache now $(du -sh "$cache" | cut -f1)"
