/*
 * The import's merge of sorted runs into data blocks, in one native loop (C11).
 *
 * What it does per row, without returning to JavaScript: decode the next entry of the winning
 * run (runFile.ts's layout: varint32 keyLength | varint32 valueLength | varint32 source |
 * varint64 line | key | value), replay the loser tree over the runs ordered by (key bytewise,
 * source, line), drop duplicates of the previous key (counting them), and append the row to the
 * open data block as RocksDB's BlockBasedTable lays it out (blockBuilder.ts: shared / non_shared
 * / value_length varints, the key's unshared bytes, the value; a restart point every
 * restartInterval entries), with internal key = user key | type 1 (kTypeValue) | sequence 0,
 * and the user key's XXPH3 hash for the filter.
 *
 * It stops, and returns to the driver (src/ingest/sort/nativeMerge.ts), when a block is finished,
 * when the file must be cut, when a run's buffer needs refilling or a run is done, on each
 * duplicate, when an output is too small, or at the end. Everything else (compressing and
 * writing blocks, the index, the filter's bits, the properties, the files) stays with the table
 * builder, which is why its output is byte-identical to the JavaScript merge's: the cut rules
 * below are TableBuilder.blockIsFull and SstSetWriter.add's, evaluated on the same numbers in the
 * same order (the file cut before the block cut; take_entry says why checking the file again
 * after a block cut, where the JavaScript path checks it once, changes nothing).
 *
 * The data-block layout is written twice: here (append, finish_block) and in the table writer's
 * BlockBuilder (src/sstwriter/blockBuilder.ts). A change to one must be made to the other;
 * test/ingest/sort/nativeDataBlock.test.ts checks that both give the same bytes for the same
 * entries, and test/ingest/sort/nativeMerge.test.ts that the whole files are the same.
 *
 * State: a MergeState, then k MergeReaders, then the loser tree (int32 per reader), all in one
 * caller-owned, 8-byte-aligned buffer (merge_context_bytes). Readers' buffers and the outputs are
 * borrowed pointers: the driver keeps them alive and sets them again whenever it replaces one.
 * Nothing is allocated here.
 *
 * Bounds: a block holds at most entryCapacity entries and blockCapacity bytes and a key at most
 * keySlotBytes; past any of them the call returns NEED_ROOM before writing, and the driver grows
 * that output. A run buffer's entry must fit in it; NEED_DATA says how large the entry is.
 */
#include "mergeBlocks.h"

#include <string.h>

#include "xxph3.h"

#define MERGE_MAGIC 0x4d524731u /* "MRG1" */
#define TRAILER_BYTES 8
#define TYPE_VALUE 1
#define BLOCK_TRAILER_BYTES 5
#define U32_BYTES 4
/* RocksDB's size estimate charges 4 bytes for the shared varint, whatever its real length. */
#define ESTIMATED_SHARED_VARINT_BYTES 4
#define MAX_VARINT32_BYTES 5
#define MAX_VARINT64_BYTES 10

enum { DECODED, DECODE_NEED_DATA, DECODE_EXHAUSTED, DECODE_TRUNCATED, DECODE_CORRUPT };

size_t merge_context_bytes(uint32_t k) {
  size_t head = (sizeof(MergeState) + 7) & ~(size_t)7;
  size_t readers = ((size_t)k * sizeof(MergeReader) + 7) & ~(size_t)7;
  return head + readers + sizeof(int32_t) * (size_t)(k > 0 ? k : 1);
}

MergeReader* merge_readers(MergeState* s) { return (MergeReader*)((uint8_t*)s + ((sizeof(MergeState) + 7) & ~(size_t)7)); }

int32_t* merge_tree(MergeState* s) {
  size_t readers = ((size_t)s->k * sizeof(MergeReader) + 7) & ~(size_t)7;
  return (int32_t*)((uint8_t*)merge_readers(s) + readers);
}

static inline uint32_t varint_length(uint32_t v) {
  uint32_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static inline uint8_t* put_varint(uint8_t* p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

/* A varint32 from p[0, n); 0 when incomplete, -1 when longer than 5 bytes, else its length. */
static inline int get_varint32(const uint8_t* p, uint32_t n, uint32_t* v) {
  uint32_t r = 0;
  for (uint32_t i = 0; i < MAX_VARINT32_BYTES; i++) {
    if (i >= n) return 0;
    r |= (uint32_t)(p[i] & 0x7f) << (7 * i);
    if (p[i] < 0x80) {
      *v = r;
      return (int)i + 1;
    }
  }
  return -1;
}

static inline int get_varint64(const uint8_t* p, uint32_t n, double* v) {
  double r = 0, mul = 1;
  for (uint32_t i = 0; i < MAX_VARINT64_BYTES; i++) {
    if (i >= n) return 0;
    r += (double)(p[i] & 0x7f) * mul;
    mul *= 128;
    if (p[i] < 0x80) {
      *v = r;
      return (int)i + 1;
    }
  }
  return -1;
}

static inline uint64_t key_prefix(const uint8_t* key, uint32_t n) {
  uint64_t w = 0;
  for (uint32_t i = 0; i < 8; i++) w = (w << 8) | (i < n ? key[i] : 0);
  return w;
}

/* Decodes the entry at r->pos into the reader's current entry. */
static int decode(MergeReader* r, double* needBytes) {
  const uint8_t* p = r->buf + r->pos;
  uint32_t avail = r->limit - r->pos;
  *needBytes = 0;
  if (avail == 0) {
    if (!r->eof) return DECODE_NEED_DATA;
    r->exhausted = 1;
    return DECODE_EXHAUSTED;
  }
  uint32_t keyBytes, valueBytes, source, at = 0;
  double line;
  int n;
  if ((n = get_varint32(p, avail, &keyBytes)) <= 0) goto header;
  at += (uint32_t)n;
  if ((n = get_varint32(p + at, avail - at, &valueBytes)) <= 0) goto header;
  at += (uint32_t)n;
  if ((n = get_varint32(p + at, avail - at, &source)) <= 0) goto header;
  at += (uint32_t)n;
  if ((n = get_varint64(p + at, avail - at, &line)) <= 0) goto header;
  at += (uint32_t)n;
  double total = (double)at + keyBytes + valueBytes;
  if (total > avail) {
    if (r->eof) return DECODE_TRUNCATED;
    *needBytes = total;
    return DECODE_NEED_DATA;
  }
  r->keyStart = r->pos + at;
  r->keyBytes = keyBytes;
  r->valueBytes = valueBytes;
  r->source = source;
  r->line = line;
  r->prefix = key_prefix(r->buf + r->keyStart, keyBytes);
  r->pos = r->keyStart + keyBytes + valueBytes;
  r->seen++;
  return DECODED;
header:
  if (n < 0) return DECODE_CORRUPT;
  return r->eof ? DECODE_TRUNCATED : DECODE_NEED_DATA;
}

static inline int compare_bytes(const uint8_t* a, uint32_t an, const uint8_t* b, uint32_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  if (c != 0) return c;
  return an < bn ? -1 : an > bn ? 1 : 0;
}

/* True when reader a's entry comes before reader b's (an exhausted reader comes after all). */
static inline int before(const MergeReader* rs, int32_t a, int32_t b) {
  const MergeReader* x = rs + a;
  const MergeReader* y = rs + b;
  if (x->exhausted || y->exhausted) return x->exhausted && y->exhausted ? a < b : y->exhausted;
  if (x->prefix != y->prefix) return x->prefix < y->prefix;
  int c = compare_bytes(x->buf + x->keyStart, x->keyBytes, y->buf + y->keyStart, y->keyBytes);
  if (c != 0) return c < 0;
  if (x->source != y->source) return x->source < y->source;
  return x->line < y->line;
}

static int32_t build(MergeState* s, uint32_t node) {
  if (node >= s->k) return (int32_t)(node - s->k);
  int32_t a = build(s, 2 * node);
  int32_t b = build(s, 2 * node + 1);
  int32_t* tree = merge_tree(s);
  if (before(merge_readers(s), a, b)) {
    tree[node] = b;
    return a;
  }
  tree[node] = a;
  return b;
}

static void replay(MergeState* s, int32_t w) {
  const MergeReader* rs = merge_readers(s);
  int32_t* tree = merge_tree(s);
  for (uint32_t node = ((uint32_t)w + s->k) >> 1; node >= 1; node >>= 1) {
    int32_t t = tree[node];
    if (before(rs, t, w)) {
      tree[node] = w;
      w = t;
    }
  }
  s->winner = w;
}

/* Maps a reader's decode failure to a return code, naming the reader. */
static int reader_stop(MergeState* s, uint32_t i, int decoded, double needBytes, double* io) {
  io[MIO_DETAIL] = i;
  io[MIO_NEED_BYTES] = needBytes;
  io[MIO_READER_SEEN] = merge_readers(s)[i].seen;
  io[MIO_READER_POS] = merge_readers(s)[i].pos;
  switch (decoded) {
    case DECODE_NEED_DATA: return MERGE_NEED_DATA;
    case DECODE_EXHAUSTED: return MERGE_READER_DONE;
    case DECODE_TRUNCATED: return MERGE_ERR_TRUNCATED;
    default: return MERGE_ERR_CORRUPT;
  }
}

/* Decodes reader i's first entry at or above the low bound. */
static int decode_from_low(MergeState* s, MergeReader* r, double* needBytes) {
  for (;;) {
    int d = decode(r, needBytes);
    if (d != DECODED || !s->hasLow) return d;
    if (compare_bytes(r->buf + r->keyStart, r->keyBytes, s->low, s->lowBytes) >= 0) return DECODED;
  }
}

/* Starts every reader (resuming at initIndex after a stop), then builds the tree. */
static int start(MergeState* s, double* io) {
  MergeReader* rs = merge_readers(s);
  while (s->initIndex < s->k) {
    uint32_t i = s->initIndex;
    double need;
    int d = decode_from_low(s, rs + i, &need);
    if (d == DECODE_NEED_DATA) return reader_stop(s, i, d, need, io);
    s->initIndex++;
    if (d != DECODED) return reader_stop(s, i, d, need, io);
  }
  s->started = 1;
  s->winner = s->k == 0 ? -1 : s->k == 1 ? 0 : build(s, 1);
  return MERGE_END;
}

static void reset_block(MergeState* s) {
  s->entriesBytes = 0;
  s->restarts[0] = 0;
  s->restartCount = 1;
  s->counter = 0;
  s->blockEntries = 0;
  s->rawKeyBytes = 0;
  s->rawValueBytes = 0;
  s->resetPending = 0;
}

static inline uint32_t block_size_estimate(const MergeState* s) {
  return s->entriesBytes + U32_BYTES * s->restartCount + U32_BYTES;
}

/* Appends the restart array and its count; reports the block (none when it has no entries). */
static void finish_block(MergeState* s, double* io) {
  io[MIO_BLOCK_BYTES] = 0;
  if (s->blockEntries == 0) return;
  uint8_t* p = s->block + s->entriesBytes;
  for (uint32_t i = 0; i < s->restartCount; i++, p += U32_BYTES) memcpy(p, &s->restarts[i], U32_BYTES);
  memcpy(p, &s->restartCount, U32_BYTES);
  io[MIO_BLOCK_BYTES] = block_size_estimate(s);
  io[MIO_BLOCK_ENTRIES] = s->blockEntries;
  io[MIO_BLOCK_RAW_KEY_BYTES] = s->rawKeyBytes;
  io[MIO_BLOCK_RAW_VALUE_BYTES] = s->rawValueBytes;
  io[MIO_FIRST_KEY_BYTES] = s->firstKeyBytes;
  io[MIO_LAST_KEY_BYTES] = s->lastKeyBytes;
  s->resetPending = 1;
}

/* TableBuilder.blockIsFull for an entry of these sizes (BlockBuilder.estimatedSizeAfterLengths). */
static int block_is_full(const MergeState* s, uint32_t keyBytes, uint32_t valueBytes) {
  uint32_t current = block_size_estimate(s);
  if (current >= s->blockSizeBytes) return 1;
  if (!(current > s->deviationLimitBytes && s->deviationLimitBytes > 0)) return 0;
  int startsRestart = s->counter >= s->restartInterval;
  double estimate = (double)current + keyBytes + valueBytes + varint_length(valueBytes);
  if (startsRestart) estimate += U32_BYTES;
  estimate += ESTIMATED_SHARED_VARINT_BYTES + varint_length(keyBytes);
  return estimate > s->blockSizeBytes;
}

/* NEED_ROOM when the entry (internal key in slot 2) would overflow an output; else 0. */
static int room_for(MergeState* s, uint32_t ikeyBytes, uint32_t valueBytes, double* io) {
  double need = (double)s->entriesBytes + 3 * MAX_VARINT32_BYTES + ikeyBytes + valueBytes + U32_BYTES * ((double)s->restartCount + 2);
  if (need > s->blockCapacity) {
    io[MIO_DETAIL] = ROOM_BLOCK;
    io[MIO_NEED_BYTES] = need;
    return MERGE_NEED_ROOM;
  }
  if (s->blockEntries + 1 > s->entryCapacity) {
    io[MIO_DETAIL] = ROOM_ENTRIES;
    io[MIO_NEED_BYTES] = (double)s->blockEntries + 1;
    return MERGE_NEED_ROOM;
  }
  return 0;
}

/* Appends the entry whose internal key is in slot 2 to the open block. */
static void append(MergeState* s, const MergeReader* r) {
  uint8_t* last = s->keys + s->keySlotBytes;
  const uint8_t* ikey = s->keys + 2 * (size_t)s->keySlotBytes;
  uint32_t ikeyBytes = r->keyBytes + TRAILER_BYTES;
  uint32_t shared = 0;
  if (s->blockEntries > 0) {
    if (s->counter >= s->restartInterval) {
      s->restarts[s->restartCount++] = s->entriesBytes;
      s->counter = 0;
    } else {
      uint32_t n = s->lastKeyBytes < ikeyBytes ? s->lastKeyBytes : ikeyBytes;
      while (shared < n && last[shared] == ikey[shared]) shared++;
    }
  }
  uint8_t* p = s->block + s->entriesBytes;
  p = put_varint(p, shared);
  p = put_varint(p, ikeyBytes - shared);
  p = put_varint(p, r->valueBytes);
  memcpy(p, ikey + shared, ikeyBytes - shared);
  p += ikeyBytes - shared;
  memcpy(p, r->buf + r->keyStart + r->keyBytes, r->valueBytes);
  p += r->valueBytes;
  s->entriesBytes = (uint32_t)(p - s->block);
  if (s->hashKeys) {
    uint64_t h = xxph3_64(r->buf + r->keyStart, r->keyBytes);
    s->hashLo[s->blockEntries] = (uint32_t)h;
    s->hashHi[s->blockEntries] = (uint32_t)(h >> 32);
  }
  if (s->blockEntries == 0) {
    memcpy(s->keys, ikey, ikeyBytes);
    s->firstKeyBytes = ikeyBytes;
  }
  s->counter++;
  s->blockEntries++;
  s->rawKeyBytes += ikeyBytes;
  s->rawValueBytes += r->valueBytes;
  s->entriesInFile++;
}

/* Remembers the winner's key as the last key seen (slot 1) and its row as the key's first. */
static void take_key(MergeState* s, const MergeReader* r) {
  uint32_t ikeyBytes = r->keyBytes + TRAILER_BYTES;
  memcpy(s->keys + s->keySlotBytes, s->keys + 2 * (size_t)s->keySlotBytes, ikeyBytes);
  s->lastKeyBytes = ikeyBytes;
  s->haveLast = 1;
  s->firstSource = r->source;
  s->firstLine = r->line;
  s->rowsMerged++;
  s->rowsWritten++;
  s->pendingAdvance = 1;
}

/*
 * Handles the winner's entry: a duplicate, a file cut, a block cut, or an append. Returns a stop
 * code, or -100 to go on with the next entry.
 */
#define GO_ON (-100)
static int take_entry(MergeState* s, const MergeReader* r, double* io) {
  uint32_t ikeyBytes = r->keyBytes + TRAILER_BYTES;
  if (ikeyBytes > s->keySlotBytes) {
    io[MIO_DETAIL] = ROOM_KEYS;
    io[MIO_NEED_BYTES] = ikeyBytes;
    return MERGE_NEED_ROOM;
  }
  const uint8_t* key = r->buf + r->keyStart;
  if (s->haveLast) {
    int c = compare_bytes(s->keys + s->keySlotBytes, s->lastKeyBytes - TRAILER_BYTES, key, r->keyBytes);
    if (c == 0) {
      s->duplicates++;
      s->rowsMerged++;
      s->pendingAdvance = 1;
      if (io[MIO_REPORT_DUPLICATES] == 0) return GO_ON;
      io[MIO_DUP_SOURCE] = r->source;
      io[MIO_DUP_LINE] = r->line;
      io[MIO_FIRST_SOURCE] = s->firstSource;
      io[MIO_FIRST_LINE] = s->firstLine;
      io[MIO_LAST_KEY_BYTES] = s->lastKeyBytes;
      return MERGE_DUPLICATE;
    }
    if (c > 0) {
      io[MIO_DETAIL] = (double)(r - merge_readers(s));
      return MERGE_ERR_KEY_ORDER;
    }
  }
  uint8_t* ikey = s->keys + 2 * (size_t)s->keySlotBytes;
  memcpy(ikey, key, r->keyBytes);
  ikey[r->keyBytes] = TYPE_VALUE;
  memset(ikey + r->keyBytes + 1, 0, TRAILER_BYTES - 1);
  if (io[MIO_WRITING] == 0) {
    take_key(s, r);
    return GO_ON;
  }
  /*
   * After a block cut the driver calls again and this check runs a second time for the same
   * entry, where the JavaScript path checks once; it cannot fire then: the file grew by the
   * stored block and its trailer, at most what the open block's estimate counted (a block is
   * stored raw unless compression makes it smaller), and that sum was below the target.
   */
  if (s->entriesInFile > 0) {
    double open = s->blockEntries > 0 ? (double)block_size_estimate(s) + BLOCK_TRAILER_BYTES : 0;
    if (io[MIO_FILE_BASE_BYTES] + open >= s->targetFileSizeBytes) {
      finish_block(s, io);
      s->entriesInFile = 0;
      return MERGE_CUT;
    }
  }
  if (s->blockEntries > 0 && block_is_full(s, ikeyBytes, r->valueBytes)) {
    finish_block(s, io);
    io[MIO_NEXT_KEY_BYTES] = ikeyBytes;
    return MERGE_BLOCK;
  }
  int room = room_for(s, ikeyBytes, r->valueBytes, io);
  if (room != 0) return room;
  append(s, r);
  take_key(s, r);
  return GO_ON;
}

static int finish_outputs(MergeState* s, double* io, int code) {
  io[MIO_ROWS_MERGED] = s->rowsMerged;
  io[MIO_ROWS_WRITTEN] = s->rowsWritten;
  io[MIO_DUPLICATES] = s->duplicates;
  return code;
}

int merge_blocks(MergeState* s, double* io) {
  io[MIO_BLOCK_BYTES] = 0;
  if (s->resetPending) reset_block(s);
  if (!s->started) {
    int code = start(s, io);
    if (!s->started) return finish_outputs(s, io, code);
  }
  MergeReader* rs = merge_readers(s);
  for (;;) {
    if (s->pendingAdvance) {
      int32_t w = s->winner;
      double need;
      int d = decode(rs + w, &need);
      if (d == DECODE_NEED_DATA || d == DECODE_TRUNCATED || d == DECODE_CORRUPT) return finish_outputs(s, io, reader_stop(s, (uint32_t)w, d, need, io));
      replay(s, w);
      s->pendingAdvance = 0;
      if (d == DECODE_EXHAUSTED) return finish_outputs(s, io, reader_stop(s, (uint32_t)w, d, 0, io));
    }
    const MergeReader* r = s->winner < 0 ? NULL : rs + s->winner;
    int atEnd = r == NULL || r->exhausted ||
                (s->hasHigh && compare_bytes(r->buf + r->keyStart, r->keyBytes, s->high, s->highBytes) >= 0);
    if (atEnd) {
      finish_block(s, io);
      return finish_outputs(s, io, MERGE_END);
    }
    int code = take_entry(s, r, io);
    if (code != GO_ON) return finish_outputs(s, io, code);
  }
}

/* Checks a context before use: its magic and reader count. */
int merge_context_ok(const MergeState* s, size_t bytes) {
  return bytes >= sizeof(MergeState) && s->magic == MERGE_MAGIC && merge_context_bytes(s->k) <= bytes;
}

void merge_context_init(MergeState* s, uint32_t k) {
  memset(s, 0, merge_context_bytes(k));
  s->magic = MERGE_MAGIC;
  s->k = k;
  s->winner = -1;
  s->resetPending = 1;
}
