/*
 * lz4Encode: a greedy, single-probe LZ4 block encoder for the table writer's data blocks.
 *
 * Why our own: lz4-napi costs about 30 µs per 4 KiB block in the import's compression worker,
 * most of it the crossing into Rust, the fresh output Buffer and its u32 size prefix, which
 * the caller then copies off again. This encodes straight into the caller's buffer.
 *
 * Output: the raw LZ4 block format (no frame), which every LZ4 decoder reads, RocksDB's
 * included: a sequence of
 *   token (u8: literal count in the high nibble, match length - 4 in the low nibble; 15 means
 *   "more bytes follow", each adding 0-255, the last one below 255) ‖ literal-count bytes ‖
 *   literals ‖ u16le match offset (1..65535) ‖ match-length bytes,
 * and a last sequence of literals only. The format's end rules hold: the last match starts at
 * least MFLIMIT (12) bytes before the end, and the last LAST_LITERALS (5) bytes are literals.
 *
 * Search: one hash table of HASH_ENTRIES positions, indexed by the multiplicative hash of the
 * next four bytes; a candidate is taken if its four bytes match and it is within 64 KiB. When
 * no match turns up, the scan steps faster (one more byte per 64 misses), as LZ4's own fast
 * mode does, so incompressible input costs little. Compression ratio is that of LZ4's default
 * level within a few percent; the output is not byte-identical to liblz4's, and need not be.
 *
 * Bounds: every write is checked against dstCapacity before it happens; the encoder returns 0
 * rather than write past it. The hash table lives on the stack (16 KiB).
 */
#include "lz4Encode.h"
#include "loads.h"

#include <string.h>

#define MIN_MATCH 4
#define MFLIMIT 12
#define LAST_LITERALS 5
#define MAX_OFFSET 65535
#define HASH_LOG 12
#define HASH_ENTRIES (1u << HASH_LOG)
#define SKIP_TRIGGER 6
#define RUN_MASK 15


static inline uint32_t hash4(uint32_t v) { return (v * 2654435761u) >> (32 - HASH_LOG); }

/* Bytes equal at a and b, comparing no further than limit (a < limit, b < a). */
static inline size_t count_equal(const uint8_t* a, const uint8_t* b, const uint8_t* limit) {
  const uint8_t* start = a;
  while (a + 8 <= limit) {
    uint64_t diff = read64(a) ^ read64(b);
    if (diff != 0) return (size_t)(a - start) + ((size_t)__builtin_ctzll(diff) >> 3);
    a += 8;
    b += 8;
  }
  while (a < limit && *a == *b) {
    a++;
    b++;
  }
  return (size_t)(a - start);
}

/* Writes a length's continuation bytes (the part at or above 15); returns the new position or NULL. */
static inline uint8_t* put_length(uint8_t* op, const uint8_t* opEnd, size_t rest) {
  while (rest >= 255) {
    if (op >= opEnd) return NULL;
    *op++ = 255;
    rest -= 255;
  }
  if (op >= opEnd) return NULL;
  *op++ = (uint8_t)rest;
  return op;
}

/*
 * One sequence: literals anchor[0, literalBytes) then, when matchBytes > 0, a match. With a match,
 * the literals end at least MFLIMIT bytes before the source's end, so they are copied 8 bytes at
 * a time (reading at most 7 bytes past them, still inside the source) when the output has that
 * much slack too.
 */
static inline uint8_t* put_sequence(uint8_t* op, const uint8_t* opEnd, const uint8_t* anchor, size_t literalBytes,
                             size_t offset, size_t matchBytes) {
  if (op >= opEnd) return NULL;
  uint8_t* token = op++;
  size_t matchCode = matchBytes == 0 ? 0 : matchBytes - MIN_MATCH;
  *token = (uint8_t)(((literalBytes >= RUN_MASK ? RUN_MASK : literalBytes) << 4) |
                     (matchCode >= RUN_MASK ? RUN_MASK : matchCode));
  if (literalBytes >= RUN_MASK && (op = put_length(op, opEnd, literalBytes - RUN_MASK)) == NULL) return NULL;
  if ((size_t)(opEnd - op) < literalBytes) return NULL;
  if (matchBytes != 0 && (size_t)(opEnd - op) >= literalBytes + 8) {
    for (size_t i = 0; i < literalBytes; i += 8) memcpy(op + i, anchor + i, 8);
  } else {
    memcpy(op, anchor, literalBytes);
  }
  op += literalBytes;
  if (matchBytes == 0) return op;
  if (opEnd - op < 2) return NULL;
  op[0] = (uint8_t)offset;
  op[1] = (uint8_t)(offset >> 8);
  op += 2;
  if (matchCode >= RUN_MASK && (op = put_length(op, opEnd, matchCode - RUN_MASK)) == NULL) return NULL;
  return op;
}

size_t lz4_encode_block(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstCapacity) {
  uint8_t* op = dst;
  const uint8_t* opEnd = dst + dstCapacity;
  const uint8_t* anchor = src;
  if (srcBytes >= MFLIMIT + 1) {
    uint32_t table[HASH_ENTRIES];
    memset(table, 0, sizeof table);
    const uint8_t* ip = src + 1;
    const uint8_t* const matchStartLimit = src + srcBytes - MFLIMIT;
    const uint8_t* const matchEndLimit = src + srcBytes - LAST_LITERALS;
    unsigned misses = 1u << SKIP_TRIGGER;
    while (ip <= matchStartLimit) {
      uint32_t h = hash4(read32(ip));
      const uint8_t* ref = src + table[h];
      table[h] = (uint32_t)(ip - src);
      if (ref >= ip || (size_t)(ip - ref) > MAX_OFFSET || read32(ref) != read32(ip)) {
        ip += misses++ >> SKIP_TRIGGER;
        continue;
      }
      misses = 1u << SKIP_TRIGGER;
      while (ip > anchor && ref > src && ip[-1] == ref[-1]) {
        ip--;
        ref--;
      }
      size_t matchBytes = MIN_MATCH + count_equal(ip + MIN_MATCH, ref + MIN_MATCH, matchEndLimit);
      op = put_sequence(op, opEnd, anchor, (size_t)(ip - anchor), (size_t)(ip - ref), matchBytes);
      if (op == NULL) return 0;
      ip += matchBytes;
      anchor = ip;
      /* Index a position inside the match, so a repeat of its tail is found too. */
      if (ip - 2 > src && ip <= matchStartLimit) table[hash4(read32(ip - 2))] = (uint32_t)(ip - 2 - src);
    }
  }
  op = put_sequence(op, opEnd, anchor, (size_t)(src + srcBytes - anchor), 0, 0);
  return op == NULL ? 0 : (size_t)(op - dst);
}
