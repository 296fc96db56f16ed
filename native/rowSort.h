/* The import's sort buffer, natively: sorting its entries by key and gathering them into a run. See rowSort.c. */
#ifndef SST_INGEST_ROW_SORT_H
#define SST_INGEST_ROW_SORT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The sort buffer's columns (src/ingest/sort/sortBuffer.ts), borrowed for one call. Entry e's key
 * is arena[offset[e], offset[e] + keyLength[e]); its value follows the key (valueLength[e] bytes).
 * The scratch columns hold at least `count` slots each; the sort writes nothing else.
 */
typedef struct {
  const uint8_t* arena;
  const uint32_t* offset;
  const uint32_t* keyLength;
  uint32_t count;
  uint32_t* order;
  uint32_t* high;
  uint32_t* low;
  uint8_t* lengthClass;
  uint32_t* orderScratch;
  uint32_t* highScratch;
  uint32_t* lowScratch;
  uint8_t* classScratch;
} RowSortColumns;

/* Sets order[0, count) to the entries in key order (bytewise; a prefix first); equal keys keep entry order. */
void row_sort(RowSortColumns* c);

/* The run file's entry header and body, for row_gather. */
typedef struct {
  const uint8_t* arena;
  const uint32_t* order;
  const uint32_t* offset;
  const uint32_t* keyLength;
  const uint32_t* valueLength;
  const uint32_t* source;
  const double* line;
  /* Bounds the entries are checked against: arena bytes, and slots of every column but order. */
  size_t arenaBytes;
  uint32_t columnSlots;
} RowGatherColumns;

/*
 * Appends entries order[from], order[from + 1], ... as run-file entries (varint32 keyLength,
 * varint32 valueLength, varint32 source, varint64 line, key, value) at out[*fill..], stopping
 * before `to`, before an entry that would not end by outEnd, and before any entry that would start
 * at or past stopAtFill. Returns the index it stopped at; *fill is where the next entry goes. An
 * entry outside the columns or the arena stops it too, with *bad set (nothing of it written).
 */
uint32_t row_gather(const RowGatherColumns* c, uint32_t from, uint32_t to, uint8_t* out, size_t* fill, size_t outEnd,
                    size_t stopAtFill, int* bad);

/* Longest entry header row_gather writes: three varint32 and one varint64. */
#define ROW_GATHER_MAX_HEADER_BYTES (5 * 3 + 10)

#endif
