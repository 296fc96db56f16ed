#!/usr/bin/env bash
# Regenerates the RocksDB-made golden fixtures in fixtures/rocksdb-golden/.
#
# Needs g++ and librocksdb-dev 7.8.x (Debian: apt-get install g++ librocksdb-dev).
# Builds scripts/golden/make_golden.cc into a temporary folder, runs it into a
# fresh folder and only then replaces the fixtures, so a failed run leaves the
# committed files untouched. If sst_dump is on PATH, every fixture is also run
# through `sst_dump --command=verify --verify_checksum` (without that flag 7.8
# skips data block checksums; and it exits 0 even on corruption, so its output
# is checked too).
#
#   scripts/make-golden.sh            rewrite fixtures/rocksdb-golden/
#   scripts/make-golden.sh OUTDIR     write them into OUTDIR instead
#
# Regenerated files differ from committed ones only in the random session id
# of each SstFileWriter file and, for the DB-flush file, its DB id and times.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
outdir="${1:-$root/fixtures/rocksdb-golden}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

g++ -std=c++17 -O1 -Wall -Wextra -o "$work/make_golden" "$root/scripts/golden/make_golden.cc" -lrocksdb
mkdir "$work/out"
"$work/make_golden" "$work/out" "$work/scratch-db"

if command -v sst_dump >/dev/null 2>&1; then
  for f in "$work"/out/*.sst; do
    report="$(sst_dump --file="$f" --command=verify --verify_checksum 2>&1)" || { echo "$report" >&2; exit 1; }
    if grep -qiE 'corrupt' <<<"$report" || ! grep -q 'The file is ok' <<<"$report"; then
      echo "sst_dump rejects $f:" >&2
      echo "$report" >&2
      exit 1
    fi
  done
  echo "sst_dump verified every fixture" >&2
fi

mkdir -p "$outdir"
rm -f "$outdir"/*.sst "$outdir"/*.json
cp "$work"/out/*.sst "$work"/out/*.json "$outdir"/
echo "fixtures in $outdir: $(du -ch "$outdir"/*.sst "$outdir"/*.json | tail -1 | cut -f1)" >&2
