#!/usr/bin/env bash
# Builds the C++ RocksDB peers of the benchmarks against the system's librocksdb-dev (7.8):
#   bench/peer/build/sst_peer     (bench/sst-throughput.ts)
#   bench/peer/build/import_peer  (bench/import.ts)
# Needs g++ and librocksdb-dev (apt-get install -y g++ librocksdb-dev). Exit 0 when every peer
# whose source is present built.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f /usr/include/rocksdb/sst_file_writer.h ]; then
  echo "build.sh: librocksdb-dev is not installed (apt-get install -y g++ librocksdb-dev)" >&2
  exit 2
fi
mkdir -p "$here/build"
for peer in sst_peer import_peer; do
  [ -f "$here/$peer.cc" ] || continue
  g++ -O2 -std=c++17 -o "$here/build/$peer" "$here/$peer.cc" -lrocksdb -lpthread
done
