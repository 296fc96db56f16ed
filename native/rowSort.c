/*
 * rowSort: the import's two per-row loops over a full sort buffer, natively (C11).
 *
 * Why: at 1M trade rows each parse worker spent 120-180 ms sorting its ~500,000 entries and
 * 160-175 ms gathering them, in key order, into the run file's chunk, in JavaScript that runs
 * them once per spill (too few times for the optimizing compiler to take over). Both are simple
 * loops over typed arrays, where C also gets memcmp, memcpy and prefetching.
 *
 * row_sort is the same algorithm as SortBuffer's JavaScript path (src/ingest/sort/sortBuffer.ts),
 * with the same result, over the same columns (so the memory the buffer budgets is all it uses):
 * most-significant 8-byte chunk first; a chunk is ordered by an LSD radix sort over a length-class
 * digit (0..8 key bytes in the chunk, 9 = more follow) and six 11-bit digits of its two big-endian
 * words, skipping digits equal across the range; groups equal on a chunk whose keys go on recurse
 * on the next chunk. Ranges below COMPARISON_SORT_MAX entries, and recursion past
 * MAX_RADIX_DEPTH_BYTES (long equal keys: duplicates), use a stable merge sort by memcmp.
 *
 * row_gather writes run-file entries (src/ingest/sort/runFile.ts):
 *   varint32 keyLength | varint32 valueLength | varint32 source | varint64 line | key | value
 */
#include "rowSort.h"

#include <string.h>

#define INSERTION_SORT_MAX 24
#define COMPARISON_SORT_MAX 2048
#define CHUNK_BYTES 8
#define DIGIT_BITS 11
#define DIGIT_BUCKETS (1 << DIGIT_BITS)
#define DIGIT_MASK (DIGIT_BUCKETS - 1)
#define RADIX_PASSES 7
#define MORE_FOLLOWS 9
/* Beyond this depth a group of equal prefixes is merge-sorted: bounds the recursion (and its stack). */
#define MAX_RADIX_DEPTH_BYTES 256
/* Entries ahead of the copy whose rows row_gather prefetches (they sit at random arena offsets). */
#define GATHER_PREFETCH_DISTANCE 8

static int compare_entries(const RowSortColumns* c, uint32_t a, uint32_t b, uint32_t depth) {
  uint32_t la = c->keyLength[a], lb = c->keyLength[b];
  uint32_t n = la < lb ? la : lb;
  if (n > depth) {
    int d = memcmp(c->arena + c->offset[a] + depth, c->arena + c->offset[b] + depth, n - depth);
    if (d != 0) return d;
  }
  return la < lb ? -1 : (la > lb ? 1 : 0);
}

static void insertion_sort(RowSortColumns* c, uint32_t lo, uint32_t hi, uint32_t depth) {
  uint32_t* order = c->order;
  for (uint32_t i = lo + 1; i < hi; i++) {
    uint32_t e = order[i];
    uint32_t j = i;
    while (j > lo && compare_entries(c, order[j - 1], e, depth) > 0) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = e;
  }
}

/* Stable bottom-up merge sort of order[lo, hi) over insertion-sorted runs, through orderScratch. */
static void merge_sort(RowSortColumns* c, uint32_t lo, uint32_t hi, uint32_t depth) {
  for (uint32_t s = lo; s < hi; s += INSERTION_SORT_MAX)
    insertion_sort(c, s, s + INSERTION_SORT_MAX < hi ? s + INSERTION_SORT_MAX : hi, depth);
  uint32_t* src = c->order;
  uint32_t* dst = c->orderScratch;
  for (uint32_t width = INSERTION_SORT_MAX; width < hi - lo; width *= 2) {
    for (uint32_t s = lo; s < hi; s += 2 * width) {
      uint32_t mid = s + width < hi ? s + width : hi;
      uint32_t end = s + 2 * width < hi ? s + 2 * width : hi;
      uint32_t a = s, b = mid, o = s;
      while (a < mid && b < end) dst[o++] = compare_entries(c, src[b], src[a], depth) < 0 ? src[b++] : src[a++];
      while (a < mid) dst[o++] = src[a++];
      while (b < end) dst[o++] = src[b++];
    }
    uint32_t* t = src;
    src = dst;
    dst = t;
  }
  if (src != c->order) memcpy(c->order + lo, src + lo, (size_t)(hi - lo) * sizeof(uint32_t));
}

/* The chunk of key bytes at `depth` as two big-endian words and a length class. */
static void load_chunk(const RowSortColumns* c, uint32_t e, uint32_t depth, uint32_t* high, uint32_t* low, uint8_t* cls) {
  uint32_t keyBytes = c->keyLength[e];
  uint32_t len = keyBytes > depth ? keyBytes - depth : 0;
  const uint8_t* p = c->arena + c->offset[e] + depth;
  uint8_t bytes[CHUNK_BYTES] = {0};
  memcpy(bytes, p, len < CHUNK_BYTES ? len : CHUNK_BYTES);
  *high = ((uint32_t)bytes[0] << 24) | ((uint32_t)bytes[1] << 16) | ((uint32_t)bytes[2] << 8) | bytes[3];
  *low = ((uint32_t)bytes[4] << 24) | ((uint32_t)bytes[5] << 16) | ((uint32_t)bytes[6] << 8) | bytes[7];
  *cls = (uint8_t)(len > CHUNK_BYTES ? MORE_FOLLOWS : len);
}

static inline uint32_t digit_of(int pass, uint8_t cls, uint32_t low, uint32_t high) {
  if (pass == 0) return cls;
  uint32_t word = pass <= 3 ? low : high;
  return (word >> (((pass - 1) % 3) * DIGIT_BITS)) & DIGIT_MASK;
}

static void swap_u32(uint32_t** a, uint32_t** b) {
  uint32_t* t = *a;
  *a = *b;
  *b = t;
}

/* Which columns a pass moves besides order: a column is carried only while something later reads it. */
typedef struct {
  int low, high, lengthClass;
} Carry;

/* One LSD pass over [lo, hi) on `pass`'s digit, from the live columns into the scratch ones, then swapped. */
static void scatter_pass(RowSortColumns* c, uint32_t* histogram, int pass, uint32_t lo, uint32_t hi, Carry carry) {
  uint32_t* bucket = histogram + pass * DIGIT_BUCKETS;
  uint32_t sum = lo;
  for (int b = 0; b < DIGIT_BUCKETS; b++) {
    uint32_t count = bucket[b];
    bucket[b] = sum;
    sum += count;
  }
  for (uint32_t k = lo; k < hi; k++) {
    uint32_t to = bucket[digit_of(pass, c->lengthClass[k], c->low[k], c->high[k])]++;
    c->orderScratch[to] = c->order[k];
    if (carry.high) c->highScratch[to] = c->high[k];
    if (carry.low) c->lowScratch[to] = c->low[k];
    if (carry.lengthClass) c->classScratch[to] = c->lengthClass[k];
  }
  swap_u32(&c->order, &c->orderScratch);
  if (carry.high) swap_u32(&c->high, &c->highScratch);
  if (carry.low) swap_u32(&c->low, &c->lowScratch);
  if (carry.lengthClass) {
    uint8_t* t = c->lengthClass;
    c->lengthClass = c->classScratch;
    c->classScratch = t;
  }
}

static void sort_range(RowSortColumns* c, uint32_t* histogram, uint32_t lo, uint32_t hi, uint32_t depth);

/*
 * Radix-orders [lo, hi) on the chunk at `depth`; order is back in the caller's columns, and so
 * are high, low and lengthClass when it returns true: some keys go on past the chunk.
 */
static int radix_chunk(RowSortColumns* c, uint32_t* histogram, uint32_t lo, uint32_t hi, uint32_t depth) {
  uint32_t n = hi - lo;
  for (uint32_t k = lo; k < hi; k++) load_chunk(c, c->order[k], depth, &c->high[k], &c->low[k], &c->lengthClass[k]);
  memset(histogram, 0, RADIX_PASSES * DIGIT_BUCKETS * sizeof(uint32_t));
  for (uint32_t k = lo; k < hi; k++)
    for (int pass = 0; pass < RADIX_PASSES; pass++)
      histogram[pass * DIGIT_BUCKETS + digit_of(pass, c->lengthClass[k], c->low[k], c->high[k])]++;
  /*
   * Passes whose digit is the same across the range are skipped. Without groups to recurse into
   * (no key goes on past this chunk), a word is carried only up to the last pass that reads it:
   * for int64 keys that is two or three passes moving just order and the low word, which keeps
   * the scratch columns the sort touches (and the page faults of a fresh buffer) small.
   */
  int needed[RADIX_PASSES];
  int lastLowPass = 0, lastHighPass = 0;
  for (int pass = 0; pass < RADIX_PASSES; pass++) {
    uint32_t first = digit_of(pass, c->lengthClass[lo], c->low[lo], c->high[lo]);
    needed[pass] = histogram[pass * DIGIT_BUCKETS + first] != n;
    if (needed[pass] && pass >= 1 && pass <= 3) lastLowPass = pass;
    if (needed[pass] && pass >= 4) lastHighPass = pass;
  }
  int groupsFollow = histogram[MORE_FOLLOWS] > 1;
  RowSortColumns home = *c;
  for (int pass = 0; pass < RADIX_PASSES; pass++) {
    if (!needed[pass]) continue;
    Carry carry = {pass == 0 || groupsFollow || pass < lastLowPass, pass == 0 || groupsFollow || pass < lastHighPass,
                   pass == 0 || groupsFollow};
    scatter_pass(c, histogram, pass, lo, hi, carry);
  }
  /* The range may sit in the scratch columns: bring home what is valid and still needed. */
  if (c->order != home.order) memcpy(home.order + lo, c->order + lo, (size_t)n * sizeof(uint32_t));
  if (groupsFollow) {
    if (c->high != home.high) memcpy(home.high + lo, c->high + lo, (size_t)n * sizeof(uint32_t));
    if (c->low != home.low) memcpy(home.low + lo, c->low + lo, (size_t)n * sizeof(uint32_t));
    if (c->lengthClass != home.lengthClass) memcpy(home.lengthClass + lo, c->lengthClass + lo, n);
  }
  *c = home;
  return groupsFollow;
}

static void sort_range(RowSortColumns* c, uint32_t* histogram, uint32_t lo, uint32_t hi, uint32_t depth) {
  uint32_t n = hi - lo;
  if (n < 2) return;
  if (n <= INSERTION_SORT_MAX) {
    insertion_sort(c, lo, hi, depth);
    return;
  }
  if (n < COMPARISON_SORT_MAX || depth >= MAX_RADIX_DEPTH_BYTES) {
    merge_sort(c, lo, hi, depth);
    return;
  }
  if (!radix_chunk(c, histogram, lo, hi, depth)) return;
  /* Groups equal on this chunk whose keys go on: order them by the next chunk. */
  uint32_t k = lo;
  while (k < hi) {
    uint32_t j = k + 1;
    if (c->lengthClass[k] == MORE_FOLLOWS) {
      uint32_t h = c->high[k], l = c->low[k];
      while (j < hi && c->high[j] == h && c->low[j] == l && c->lengthClass[j] == MORE_FOLLOWS) j++;
      if (j - k > 1) sort_range(c, histogram, k, j, depth + CHUNK_BYTES);
    }
    k = j;
  }
}

void row_sort(RowSortColumns* c) {
  for (uint32_t i = 0; i < c->count; i++) c->order[i] = i;
  uint32_t histogram[RADIX_PASSES * DIGIT_BUCKETS];
  sort_range(c, histogram, 0, c->count, 0);
}

static inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

uint32_t row_gather(const RowGatherColumns* c, uint32_t from, uint32_t to, uint8_t* out, size_t* fill, size_t outEnd,
                    size_t stopAtFill, int* bad) {
  size_t at = *fill;
  *bad = 0;
  uint32_t i = from;
  for (; i < to; i++) {
    if (i + GATHER_PREFETCH_DISTANCE < to) {
      uint32_t ahead = c->order[i + GATHER_PREFETCH_DISTANCE];
      if (ahead < c->columnSlots) __builtin_prefetch(c->arena + c->offset[ahead]);
    }
    if (at >= stopAtFill) break;
    uint32_t e = c->order[i];
    if (e >= c->columnSlots) {
      *bad = 1;
      break;
    }
    size_t bodyBytes = (size_t)c->keyLength[e] + c->valueLength[e];
    if ((size_t)c->offset[e] + bodyBytes > c->arenaBytes) {
      *bad = 1;
      break;
    }
    if (at + ROW_GATHER_MAX_HEADER_BYTES + bodyBytes > outEnd) break;
    uint8_t* p = out + at;
    p = put_varint(p, c->keyLength[e]);
    p = put_varint(p, c->valueLength[e]);
    p = put_varint(p, c->source[e]);
    p = put_varint(p, (uint64_t)c->line[e]);
    memcpy(p, c->arena + c->offset[e], bodyBytes);
    at = (size_t)(p - out) + bodyBytes;
  }
  *fill = at;
  return i;
}
