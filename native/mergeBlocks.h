/* The import's merge of sorted runs into data blocks, natively: see mergeBlocks.c. */
#ifndef SST_INGEST_MERGE_BLOCKS_H
#define SST_INGEST_MERGE_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

/* Slots of the Float64Array `io` the JavaScript driver (src/ingest/sort/nativeMerge.ts) shares. */
enum {
  MIO_DETAIL,           /* out: reader index (NEED_DATA, READER_DONE, errors) or room kind (NEED_ROOM) */
  MIO_NEED_BYTES,       /* out: NEED_DATA: the entry's size when its header is complete, else 0; NEED_ROOM: capacity needed */
  MIO_FILE_BASE_BYTES,  /* in: the open file's size estimate without the open block (0: none open) */
  MIO_ROWS_MERGED,      /* out, cumulative: rows taken from the runs */
  MIO_ROWS_WRITTEN,     /* out, cumulative: distinct keys (rows written, or that would be) */
  MIO_DUPLICATES,       /* out, cumulative */
  MIO_BLOCK_BYTES,      /* out: length of the finished block in `block`, 0 when none */
  MIO_BLOCK_ENTRIES,    /* out: its entries (= its hashes, when hashing) */
  MIO_BLOCK_RAW_KEY_BYTES,
  MIO_BLOCK_RAW_VALUE_BYTES,
  MIO_FIRST_KEY_BYTES,  /* out: the block's first internal key (keys slot 0) */
  MIO_LAST_KEY_BYTES,   /* out: the last internal key seen (keys slot 1) */
  MIO_NEXT_KEY_BYTES,   /* out: BLOCK: the internal key that starts the next block (keys slot 2) */
  MIO_DUP_SOURCE,       /* out: DUPLICATE: the duplicate row's source and line */
  MIO_DUP_LINE,
  MIO_FIRST_SOURCE,     /* out: DUPLICATE: the source and line of the key's first row */
  MIO_FIRST_LINE,
  MIO_READER_SEEN,      /* out: READER_DONE and errors: entries the reader decoded */
  MIO_WRITING,          /* in: 0 once nothing more is to be written (policy "error" after a duplicate) */
  MIO_REPORT_DUPLICATES,/* in: 0 once the driver keeps no more duplicate examples (they are still counted) */
  MIO_READER_POS,       /* out: NEED_DATA: where the reader's next entry starts in its buffer (keep from there) */
  MIO_SLOTS
};

/* What merge_blocks stopped for. */
enum {
  MERGE_END = 0,        /* the runs (or the range) are done; a last block may be in `block` */
  MERGE_BLOCK = 1,      /* a block is finished; slot 2 holds the key that starts the next */
  MERGE_CUT = 2,        /* the file is full before the next entry; its last block is in `block` */
  MERGE_NEED_DATA = 3,  /* reader DETAIL's buffer ends inside an entry: refill it and call again */
  MERGE_DUPLICATE = 4,  /* a row with the last key's user key was taken (and not written) */
  MERGE_NEED_ROOM = 5,  /* an output is too small (DETAIL: ROOM_*): grow it and call again */
  MERGE_READER_DONE = 6,/* reader DETAIL reached the end of its run */
  MERGE_ERR_TRUNCATED = -1, /* reader DETAIL's run ends inside an entry */
  MERGE_ERR_CORRUPT = -2,   /* reader DETAIL's entry header is malformed */
  MERGE_ERR_KEY_ORDER = -3  /* the merge produced a key below the previous one (unsorted run) */
};

enum { ROOM_BLOCK = 1, ROOM_ENTRIES = 2, ROOM_KEYS = 3 };

/* One run's read buffer, lent by its RunReader, and the entry decoded from it. */
typedef struct {
  const uint8_t* buf;
  uint32_t limit;      /* valid bytes in buf */
  uint32_t pos;        /* the next undecoded entry */
  uint32_t eof;        /* nothing more will be read into buf */
  uint32_t exhausted;  /* decoded to the end: loses to every live reader */
  uint32_t keyStart;   /* the current entry, valid while !exhausted */
  uint32_t keyBytes;
  uint32_t valueBytes;
  uint32_t source;
  double line;
  uint64_t prefix;     /* the key's first 8 bytes big-endian, zero-padded: orders as the bytes do */
  double seen;         /* entries decoded */
} MergeReader;

typedef struct {
  uint32_t magic;
  uint32_t k;
  /* Configuration (merge_init). */
  uint32_t blockSizeBytes;
  uint32_t deviationLimitBytes;
  uint32_t restartInterval;
  uint32_t hashKeys;
  double targetFileSizeBytes;
  const uint8_t* low;
  const uint8_t* high;
  uint32_t lowBytes;
  uint32_t highBytes;
  uint32_t hasLow;
  uint32_t hasHigh;
  /* Outputs (merge_set_output): the block, its restarts, its key hashes, three key slots. */
  uint8_t* block;
  uint32_t* restarts;
  uint32_t* hashLo;
  uint32_t* hashHi;
  uint8_t* keys;
  uint32_t blockCapacity;
  uint32_t entryCapacity;  /* entries, hashes and restarts a block may hold */
  uint32_t keySlotBytes;
  /* The open block. */
  uint32_t entriesBytes;
  uint32_t restartCount;
  uint32_t counter;
  uint32_t blockEntries;
  uint32_t resetPending;
  uint32_t firstKeyBytes;
  double rawKeyBytes;
  double rawValueBytes;
  /* The merge. */
  uint32_t started;
  uint32_t initIndex;
  int32_t winner;
  uint32_t pendingAdvance;
  uint32_t haveLast;
  uint32_t lastKeyBytes;
  uint32_t firstSource;
  double firstLine;
  double entriesInFile;
  double rowsMerged;
  double rowsWritten;
  double duplicates;
} MergeState;

/* Bytes of the context for k readers: the state, then k readers, then the loser tree. */
size_t merge_context_bytes(uint32_t k);
MergeReader* merge_readers(MergeState* s);
int32_t* merge_tree(MergeState* s);

/* Zeroes a context of merge_context_bytes(k) bytes for k readers; merge_context_ok checks one. */
void merge_context_init(MergeState* s, uint32_t k);
int merge_context_ok(const MergeState* s, size_t bytes);

/* Runs the merge until it must stop (see the MERGE_* codes). */
int merge_blocks(MergeState* s, double* io);

#endif
