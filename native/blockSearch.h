/* blockSearch: a block's SeekGE and a FastLocalBloom probe over raw bytes; see blockSearch.c. */
#ifndef SST_INGEST_BLOCK_SEARCH_H
#define SST_INGEST_BLOCK_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* block_seek_ge's answers besides an entry offset (>= 0). */
#define BLOCK_SEEK_PAST_END (-1)
#define BLOCK_SEEK_DECLINED (-2)

/* The 5 bytes (compression type, checksum) after every block; delta handles step over them. */
#define BLOCK_TRAILER_BYTES 5

/* Key orders, as src/sstable/reader/nativeSearch.ts numbers them. */
enum { BLOCK_ORDER_BYTEWISE = 0, BLOCK_ORDER_INTERNAL = 1 };
/* Value formats, as BlockValueFormat in src/sstable/reader/block.ts. */
enum { BLOCK_VALUES_RAW = 0, BLOCK_VALUES_HANDLE = 1, BLOCK_VALUES_DELTA_HANDLE = 2 };

typedef struct {
  const uint8_t* data;
  uint32_t entriesEnd;
  uint32_t numRestarts;
  const uint8_t* target;
  size_t targetLength;
  int order;
  int valueFormat;
  /* 8 for internal keys (a key must hold its trailer), else 0. */
  uint32_t minKeyBytes;
  /* Sequence number presented for every key (internal order only), or -1. */
  int64_t globalSeqno;
  uint8_t* keyOut;
  size_t keyOutCapacity;
  /* The search adds the key comparisons it makes here (the caller's perf context). */
  double* comparisons;
} BlockSearch;

/* Where the entry found lies; handles only for the handle value formats. */
typedef struct {
  uint32_t entryOffset;
  uint32_t keyLength;
  uint32_t sharedBytes;
  uint32_t valueStart;
  uint32_t valueEnd;
  uint32_t restartIndex;
  double handleOffset;
  double handleSize;
} BlockSeekResult;

/* The first entry >= target: its offset, BLOCK_SEEK_PAST_END or BLOCK_SEEK_DECLINED. */
int64_t block_seek_ge(const BlockSearch* search, BlockSeekResult* result);

/* FastLocalBloom (64-byte lines): 0 only if the key hashed to `hash` (XXPH3-64) was not added. */
int bloom_may_match(const uint8_t* bits, size_t lengthBytes, uint32_t numProbes, uint64_t hash);

#endif
