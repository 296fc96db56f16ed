#!/usr/bin/env bash
# Builds bench/peer/build/conflict_peer (the RocksDB side of bench/conflict.ts) against the
# system's librocksdb-dev (7.8). Needs g++ and librocksdb-dev (apt-get install -y g++ librocksdb-dev).
# Kept apart from build.sh, which builds the other benchmarks' peers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f /usr/include/rocksdb/sst_file_reader.h ]; then
  echo "build-conflict.sh: librocksdb-dev is not installed (apt-get install -y g++ librocksdb-dev)" >&2
  exit 2
fi
mkdir -p "$here/build"
g++ -O2 -std=c++17 -o "$here/build/conflict_peer" "$here/conflict_peer.cc" -lrocksdb -lpthread
