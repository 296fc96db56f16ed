/*
 * blockSearch: a block's SeekGE and a full filter's probe, done over the block's bytes in one
 * call (C11, no Node-API; the glue is sstableExports.c, the TypeScript face
 * src/sstable/nativeBlockCodec.ts and src/sstable/reader/nativeSearch.ts).
 *
 * Why: a point read searches an index block of thousands of restart points and a data block,
 * and a seek does so in every table of a level. In JavaScript each probe of the binary search
 * locates a restart entry, decodes its varints and compares bytes, about 40 ns a probe with its
 * bounds checks; here it is a few ns, and the whole search costs one crossing (about 60 ns).
 *
 * Block layout searched (src/sstable/reader/block.ts has the whole of it):
 *   entry_0 … entry_{n-1} ‖ … ‖ restart_0 … restart_{r-1} (u32le) ‖ footer
 *   entry = varint32 shared ‖ varint32 non_shared ‖ [varint32 value_length] ‖ key delta ‖ value
 * The caller passes `entriesEnd` (where the restart array begins, or the hash index) and the
 * restart count, both validated by Block.parse, which also checked that the restart offsets
 * increase strictly and lie inside the entries.
 *
 * Contract of block_seek_ge: positions on the first entry whose key is >= target in the chosen
 * order, writes its raw key (the stored trailer, not the global seqno) to keyOut and its extent
 * to `result`, and returns its offset. It returns BLOCK_SEEK_PAST_END when every key is below
 * the target, and BLOCK_SEEK_DECLINED for anything it does not answer: a malformed entry, a
 * restart entry that shares bytes, a key longer than keyOut, a varint over 5 bytes (or 10 for a
 * handle). It never reads outside data[0, entriesEnd) and the restart array, and it makes no
 * partial promise on a decline: the caller's JavaScript search then runs and reports the
 * corruption with its file, block and entry, exactly as before.
 *
 * Orders: BLOCK_ORDER_BYTEWISE (memcmp, then length) and BLOCK_ORDER_INTERNAL (user keys
 * bytewise, then the 8-byte trailers descending, as src/base/keyCompare.ts). With a global
 * seqno (ingested files; internal order only), every key compares as if its 7 sequence bytes
 * were the global seqno's, as BlockIterator presents them.
 */
#include "blockSearch.h"

#include <string.h>

#define USER_KEY_BELOW (-2)

/* Reads a varint of at most maxBytes from p, not past end. Returns the new position or NULL. */
static const uint8_t* read_varint(const uint8_t* p, const uint8_t* end, int maxBytes, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0, i = 0; i < maxBytes && p < end; i++, shift += 7) {
    uint64_t byte = *p++;
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      *value = result;
      return p;
    }
  }
  return NULL;
}

/* An entry's header, decoded and bounds-checked: where its key delta and value lie. */
typedef struct {
  uint32_t shared;
  uint32_t nonShared;
  uint32_t valueLength; /* 0 for delta-encoded handles, whose value has no length */
  const uint8_t* keyDelta;
} EntryHeader;

static const uint8_t* read_header(const uint8_t* p, const uint8_t* end, int hasValueLength, EntryHeader* h) {
  uint64_t shared, nonShared, valueLength = 0;
  if ((p = read_varint(p, end, 5, &shared)) == NULL || (p = read_varint(p, end, 5, &nonShared)) == NULL) return NULL;
  if (hasValueLength && (p = read_varint(p, end, 5, &valueLength)) == NULL) return NULL;
  if (shared > UINT32_MAX || nonShared > UINT32_MAX || valueLength > UINT32_MAX) return NULL;
  if (nonShared > (uint64_t)(end - p)) return NULL;
  h->shared = (uint32_t)shared;
  h->nonShared = (uint32_t)nonShared;
  h->valueLength = (uint32_t)valueLength;
  h->keyDelta = p;
  return p + nonShared;
}

static uint64_t load_u64le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/*
 * Compares a key with the target in the search's order: negative, 0 or positive. In internal
 * order a user key below the target's answers USER_KEY_BELOW (-1 is then the same user key with
 * a trailer sorting first), so the scan can step over that key's older versions uncompared.
 */
static int compare_to_target(const BlockSearch* s, const uint8_t* key, size_t keyLength) {
  if (s->order == BLOCK_ORDER_BYTEWISE) {
    size_t n = keyLength < s->targetLength ? keyLength : s->targetLength;
    int c = memcmp(key, s->target, n);
    if (c != 0) return c < 0 ? -1 : 1; /* never USER_KEY_BELOW, which memcmp could return */
    return keyLength < s->targetLength ? -1 : keyLength > s->targetLength ? 1 : 0;
  }
  size_t userLength = keyLength - 8, targetUserLength = s->targetLength - 8;
  size_t n = userLength < targetUserLength ? userLength : targetUserLength;
  int c = memcmp(key, s->target, n);
  if (c == 0 && userLength != targetUserLength) c = userLength < targetUserLength ? -1 : 1;
  if (c != 0) return c < 0 ? USER_KEY_BELOW : 1;
  uint64_t trailer = load_u64le(key + userLength);
  if (s->globalSeqno >= 0) trailer = ((uint64_t)s->globalSeqno << 8) | (trailer & 0xff);
  uint64_t targetTrailer = load_u64le(s->target + targetUserLength);
  /* Trailers sort descending: the newer version of a user key comes first. */
  return trailer > targetTrailer ? -1 : trailer < targetTrailer ? 1 : 0;
}

static uint32_t restart_point(const BlockSearch* s, uint32_t i) {
  const uint8_t* p = s->data + s->entriesEnd + 4 * (size_t)i;
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Compares restart i's whole key with the target; sets *ok = 0 on a malformed entry. */
static int compare_restart(const BlockSearch* s, uint32_t i, int* ok) {
  const uint8_t* end = s->data + s->entriesEnd;
  EntryHeader h;
  if (read_header(s->data + restart_point(s, i), end, s->valueFormat != BLOCK_VALUES_DELTA_HANDLE, &h) == NULL ||
      h.shared != 0 || h.nonShared < s->minKeyBytes) {
    *ok = 0;
    return 0;
  }
  (*s->comparisons)++;
  return compare_to_target(s, h.keyDelta, h.nonShared);
}

/* Decodes the value after the key delta at p; sets the result's value range and handle. */
static const uint8_t* read_value(const BlockSearch* s, const EntryHeader* h, const uint8_t* p, BlockSeekResult* r) {
  const uint8_t* end = s->data + s->entriesEnd;
  r->valueStart = (uint32_t)(p - s->data);
  if (s->valueFormat == BLOCK_VALUES_RAW || s->valueFormat == BLOCK_VALUES_HANDLE) {
    if (h->valueLength > (uint64_t)(end - p)) return NULL;
    r->valueEnd = r->valueStart + h->valueLength;
    if (s->valueFormat == BLOCK_VALUES_HANDLE) {
      uint64_t offset, size;
      const uint8_t* valueEnd = p + h->valueLength;
      if ((p = read_varint(p, valueEnd, 10, &offset)) == NULL || read_varint(p, valueEnd, 10, &size) == NULL) return NULL;
      r->handleOffset = (double)offset;
      r->handleSize = (double)size;
    }
    return s->data + r->valueEnd;
  }
  uint64_t offset, size;
  if (h->shared == 0) {
    if ((p = read_varint(p, end, 10, &offset)) == NULL || (p = read_varint(p, end, 10, &size)) == NULL) return NULL;
    r->handleOffset = (double)offset;
    r->handleSize = (double)size;
  } else {
    /* Blocks are contiguous: the offset follows the previous block, the size moves by a zigzag delta. */
    uint64_t zigzag;
    if ((p = read_varint(p, end, 10, &zigzag)) == NULL) return NULL;
    double delta = (zigzag & 1) ? -(double)(zigzag >> 1) - 1 : (double)(zigzag >> 1);
    double next = r->handleSize + delta;
    if (next < 0) return NULL;
    r->handleOffset = r->handleOffset + r->handleSize + BLOCK_TRAILER_BYTES;
    r->handleSize = next;
  }
  r->valueEnd = (uint32_t)(p - s->data);
  return p;
}

/* Binary search: the last restart whose key is < target, or -1; *exact set if one equals it. */
static int64_t last_restart_below(const BlockSearch* s, int64_t* exact, int* ok) {
  int64_t lo = 0, hi = (int64_t)s->numRestarts - 1;
  *exact = -1;
  while (lo <= hi) {
    int64_t mid = (lo + hi) >> 1;
    int c = compare_restart(s, (uint32_t)mid, ok);
    if (!*ok) return -1;
    if (c < 0) {
      lo = mid + 1;
    } else if (c > 0) {
      hi = mid - 1;
    } else {
      *exact = mid;
      return mid;
    }
  }
  return lo - 1;
}

/* Decodes the entry at p (keyLength: the previous key's, 0 at a restart) into keyOut and r. */
static const uint8_t* read_entry(const BlockSearch* s, const uint8_t* p, int atRestart, BlockSeekResult* r) {
  EntryHeader h;
  const uint8_t* end = s->data + s->entriesEnd;
  const uint8_t* entry = p;
  if ((p = read_header(p, end, s->valueFormat != BLOCK_VALUES_DELTA_HANDLE, &h)) == NULL) return NULL;
  if (atRestart ? h.shared != 0 : h.shared > r->keyLength) return NULL;
  uint64_t length = (uint64_t)h.shared + h.nonShared;
  if (length > s->keyOutCapacity || length < s->minKeyBytes) return NULL;
  memcpy(s->keyOut + h.shared, h.keyDelta, h.nonShared);
  r->entryOffset = (uint32_t)(entry - s->data);
  r->keyLength = (uint32_t)length;
  r->sharedBytes = h.shared;
  return read_value(s, &h, p, r);
}

/*
 * The scan after the binary search, step for step as BlockIterator.advanceTo (so both count the
 * same comparisons): from restart `below`, whose key is < target, to the first key >= target.
 * Restart below + 1 is known to be above the target and is taken uncompared; once a user key
 * compared below the target's, its older versions are stepped over uncompared.
 */
static int64_t scan_from_restart(const BlockSearch* s, uint32_t below, BlockSeekResult* r) {
  const uint8_t* end = s->data + s->entriesEnd;
  uint32_t aboveOffset = below + 1 < s->numRestarts ? restart_point(s, below + 1) : s->entriesEnd;
  int userKeyBelow = 0;
  for (;;) {
    uint32_t previousKeyLength = r->keyLength;
    const uint8_t* p = s->data + r->valueEnd;
    if (p >= end) return BLOCK_SEEK_PAST_END;
    if (read_entry(s, p, 0, r) == NULL) return BLOCK_SEEK_DECLINED;
    if (r->entryOffset == aboveOffset) return r->entryOffset;
    if (userKeyBelow && r->keyLength == previousKeyLength && r->sharedBytes + 8 >= r->keyLength) continue;
    (*s->comparisons)++;
    int c = compare_to_target(s, s->keyOut, r->keyLength);
    if (c >= 0) return r->entryOffset;
    userKeyBelow = c == USER_KEY_BELOW;
  }
}

int64_t block_seek_ge(const BlockSearch* search, BlockSeekResult* r) {
  /* Internal order reads every key's trailer: a shorter key is declined, whatever the caller said. */
  BlockSearch checked = *search;
  if (checked.order == BLOCK_ORDER_INTERNAL && checked.minKeyBytes < 8) checked.minKeyBytes = 8;
  if (checked.order == BLOCK_ORDER_INTERNAL && checked.targetLength < 8) return BLOCK_SEEK_DECLINED;
  const BlockSearch* s = &checked;
  if (s->numRestarts == 0) return BLOCK_SEEK_PAST_END;
  int ok = 1;
  int64_t exact;
  int64_t below = last_restart_below(s, &exact, &ok);
  if (!ok) return BLOCK_SEEK_DECLINED;
  uint32_t restart = below < 0 ? 0 : (uint32_t)below;
  r->restartIndex = restart;
  r->keyLength = 0;
  if (read_entry(s, s->data + restart_point(s, restart), 1, r) == NULL) return BLOCK_SEEK_DECLINED;
  /* The restart equal to the target, or the first key when no restart is below it. */
  if (exact >= 0 || below < 0) return r->entryOffset;
  return scan_from_restart(s, restart, r);
}

int bloom_may_match(const uint8_t* bits, size_t lengthBytes, uint32_t numProbes, uint64_t hash) {
  uint32_t h1 = (uint32_t)hash, h2 = (uint32_t)(hash >> 32);
  uint32_t lines = (uint32_t)(lengthBytes / 64);
  /* FastLocalBloom: a line chosen by fastrange over the low half, probes from the high half. */
  const uint8_t* line = bits + (size_t)(((uint64_t)h1 * lines) >> 32) * 64;
  for (uint32_t i = 0; i < numProbes; i++) {
    uint32_t bit = h2 >> 23;
    if ((line[bit >> 3] & (1u << (bit & 7))) == 0) return 0;
    h2 *= 0x9e3779b9u;
  }
  return 1;
}
