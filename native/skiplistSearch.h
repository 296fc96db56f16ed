/* skiplistSearch: the memtable skiplist's searches over its arena; see skiplistSearch.c. */
#ifndef SST_INGEST_SKIPLIST_SEARCH_H
#define SST_INGEST_SKIPLIST_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* MAX_HEIGHT in src/engine/memtable/skiplist.ts. */
#define SKIPLIST_MAX_HEIGHT 12
/* A node outside the arena, or a malformed header: a bug, reported by the caller. */
#define SKIPLIST_BAD_NODE (-2)
/* skiplist_find_splice met the key itself (the engine never inserts an internal key twice). */
#define SKIPLIST_KEY_PRESENT (-3)

typedef struct {
  const uint8_t* arena;
  size_t arenaBytes;
  double* comparisons;
} SkiplistArena;

/* The last node whose key is < key (0, the head, if none), or SKIPLIST_BAD_NODE. */
int64_t skiplist_last_before(const SkiplistArena* arena, uint32_t heightInUse, const uint8_t* key, size_t keyLength);

/*
 * An insert's predecessors at every level (prev[0..SKIPLIST_MAX_HEIGHT)): 0 when found,
 * SKIPLIST_KEY_PRESENT or SKIPLIST_BAD_NODE otherwise (prev then incomplete).
 */
int64_t skiplist_find_splice(const SkiplistArena* arena, uint32_t heightInUse, const uint8_t* key, size_t keyLength, uint32_t* prev);

#endif
