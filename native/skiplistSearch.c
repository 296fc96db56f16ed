/*
 * skiplistSearch: the memtable skiplist's two searches over its arena (C11, no Node-API; the glue
 * is engineExports.c, the TypeScript face src/engine/memtable/nativeSkiplist.ts).
 *
 * Why: a memtable lookup or a random insert walks about 20 links of a skiplist of a few hundred
 * thousand nodes, and each step compares a key. In JavaScript that walk was three quarters of the
 * CPU of a workload of puts and gets that stay in memtables (bench/node-peers.ts, measured with
 * perf); here each step is a few loads and a memcmp, and the walk is one crossing.
 *
 * Arena layout (src/engine/memtable/skiplist.ts has the whole of it): nodes are 4-byte aligned
 * at their byte offsets, offset 0 being the head, each
 *   u32 key length ‖ u32 value length ‖ u32 height ‖ u32 next[height] ‖ key bytes ‖ value bytes
 * with next = 0 for none. Keys are internal keys: user key ‖ 8-byte trailer (seq << 8 | type,
 * little-endian), ordered by user key ascending, then trailer descending.
 *
 * Contract: both functions read only inside arena[0, arenaBytes) and check every node they
 * visit lies there (a node or key that does not is SKIPLIST_BAD_NODE, which the caller treats
 * as a bug: the arena is the engine's own memory, never read from disk). They add the key
 * comparisons they make to *comparisons, one per compared node as the JavaScript walk counts.
 */
#include "skiplistSearch.h"

#include <string.h>

#define HEADER_WORDS 3
#define TRAILER_BYTES 8

static uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The node's link at `level`, or SKIPLIST_BAD_NODE if the node's header is not inside the arena. */
static int64_t link_of(const SkiplistArena* a, uint32_t node, uint32_t level) {
  size_t at = (size_t)node + 4 * (HEADER_WORDS + (size_t)level);
  if (at + 4 > a->arenaBytes) return SKIPLIST_BAD_NODE;
  return load_u32(a->arena + at);
}

/*
 * Internal-key order of the node's key against key[0, keyLength): negative, 0 or positive;
 * SKIPLIST_BAD_NODE (below any comparison result) if the node's key is not inside the arena.
 */
static int64_t compare_node(const SkiplistArena* a, uint32_t node, const uint8_t* key, size_t keyLength) {
  if ((size_t)node + 4 * HEADER_WORDS > a->arenaBytes) return SKIPLIST_BAD_NODE;
  const uint8_t* header = a->arena + node;
  uint32_t nodeKeyLength = load_u32(header), height = load_u32(header + 8);
  size_t keyStart = (size_t)node + 4 * (HEADER_WORDS + (size_t)height);
  if (height == 0 || height > SKIPLIST_MAX_HEIGHT || nodeKeyLength < TRAILER_BYTES || keyStart + nodeKeyLength > a->arenaBytes)
    return SKIPLIST_BAD_NODE;
  const uint8_t* nodeKey = a->arena + keyStart;
  (*a->comparisons)++;
  size_t nodeUser = nodeKeyLength - TRAILER_BYTES, user = keyLength - TRAILER_BYTES;
  int c = memcmp(nodeKey, key, nodeUser < user ? nodeUser : user);
  if (c != 0) return c < 0 ? -1 : 1;
  if (nodeUser != user) return nodeUser < user ? -1 : 1;
  uint64_t nodeTrailer = load_u64(nodeKey + nodeUser), trailer = load_u64(key + user);
  return nodeTrailer > trailer ? -1 : nodeTrailer < trailer ? 1 : 0;
}

int64_t skiplist_last_before(const SkiplistArena* a, uint32_t heightInUse, const uint8_t* key, size_t keyLength) {
  if (keyLength < TRAILER_BYTES || heightInUse == 0 || heightInUse > SKIPLIST_MAX_HEIGHT) return SKIPLIST_BAD_NODE;
  uint32_t x = 0;
  int64_t knownNotLess = 0;
  for (int64_t level = (int64_t)heightInUse - 1; level >= 0; level--) {
    for (;;) {
      int64_t next = link_of(a, x, (uint32_t)level);
      if (next < 0) return SKIPLIST_BAD_NODE;
      if (next == 0 || next == knownNotLess) {
        knownNotLess = next;
        break;
      }
      int64_t c = compare_node(a, (uint32_t)next, key, keyLength);
      if (c == SKIPLIST_BAD_NODE) return SKIPLIST_BAD_NODE;
      if (c >= 0) {
        knownNotLess = next;
        break;
      }
      x = (uint32_t)next;
    }
  }
  return x;
}

int64_t skiplist_find_splice(const SkiplistArena* a, uint32_t heightInUse, const uint8_t* key, size_t keyLength, uint32_t* prev) {
  if (keyLength < TRAILER_BYTES || heightInUse == 0 || heightInUse > SKIPLIST_MAX_HEIGHT) return SKIPLIST_BAD_NODE;
  uint32_t x = 0;
  int64_t knownGreater = 0;
  for (int64_t level = SKIPLIST_MAX_HEIGHT - 1; level >= 0; level--) {
    if (level < (int64_t)heightInUse) {
      for (;;) {
        int64_t next = link_of(a, x, (uint32_t)level);
        if (next < 0) return SKIPLIST_BAD_NODE;
        if (next == 0 || next == knownGreater) break;
        int64_t c = compare_node(a, (uint32_t)next, key, keyLength);
        if (c == SKIPLIST_BAD_NODE) return SKIPLIST_BAD_NODE;
        if (c == 0) return SKIPLIST_KEY_PRESENT;
        if (c > 0) {
          knownGreater = next;
          break;
        }
        x = (uint32_t)next;
      }
    }
    prev[level] = x;
  }
  return 0;
}
