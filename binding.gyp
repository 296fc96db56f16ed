# The native addon (native/): one module, build/Release/blockcodec.node, with each layer's
# Node-API glue in a file of its own, registered by native/addon.c:
#   native/sstableExports.c  the table format: the reader's read + checksum + LZ4/Snappy decode in
#       one call, the writer's LZ4 encoder (lz4Encode.c), XXH3 (xxh3.c), the filter's XXPH3 (xxph3.c)
#       and a block's SeekGE and the Bloom probe over the block's bytes (blockSearch.c)
#   native/ingestExports.c   the import: its CSV fast path (rowParse.c), its sort and run gather
#       (rowSort.c), its merge of runs into data blocks (mergeBlocks.c)
#   native/engineExports.c   the memtable skiplist's searches over its arena (skiplistSearch.c)
#   native/utilExports.c     huge-page advice and page release for large buffers, early
#       writeback and hole punching of files (writeback.c), the thread CPU clock, whole-file
#       fcntl locks (the database LOCK's, src/util/fileLock.ts)
#   native/napiHelpers.c     the argument checks and coded errors the three share
# Built by `npm ci` through scripts/build-native.js; the code falls back to JavaScript packages
# when the build is unavailable (src/util/nativeAddon.ts loads it; each layer's face is
# src/sstable/nativeBlockCodec.ts, src/ingest/nativeImport.ts, src/util/nativeUtil.ts).
{
  "targets": [
    {
      "target_name": "blockcodec",
      "sources": [
        "native/addon.c",
        "native/blockSearch.c",
        "native/engineExports.c",
        "native/skiplistSearch.c",
        "native/napiHelpers.c",
        "native/sstableExports.c",
        "native/ingestExports.c",
        "native/utilExports.c",
        "native/lz4Decode.c",
        "native/lz4Encode.c",
        "native/mergeBlocks.c",
        "native/rowParse.c",
        "native/rowSort.c",
        "native/snappyDecode.c",
        "native/writeback.c",
        "native/xxh3.c",
        "native/xxph3.c"
      ],
      "cflags": ["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags!": ["-O2"],
      "xcode_settings": {"OTHER_CFLAGS": ["-O3", "-std=c11"]}
    }
  ]
}
