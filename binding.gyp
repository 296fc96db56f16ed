# Native block codec (native/): the table reader's read + checksum + LZ4/Snappy decode in one call,
# the table writer's LZ4 encoder, huge-page advice for the import's large buffers, the
# import's CSV fast path (rowParse.c), its sort and run gather (rowSort.c), its merge into data blocks (mergeBlocks.c, xxph3.c), and early writeback of table files (writeback.c).
# Built by `npm ci` through scripts/build-native.js; the code falls back to JavaScript packages
# when the build is unavailable (see src/native/blockCodec.ts).
{
  "targets": [
    {
      "target_name": "blockcodec",
      "sources": ["native/blockcodec.c", "native/lz4Decode.c", "native/lz4Encode.c", "native/mergeBlocks.c", "native/rowParse.c", "native/rowSort.c", "native/snappyDecode.c", "native/writeback.c", "native/xxh3.c", "native/xxph3.c"],
      "cflags": ["-O3", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "cflags!": ["-O2"],
      "xcode_settings": {"OTHER_CFLAGS": ["-O3", "-std=c11"]}
    }
  ]
}
