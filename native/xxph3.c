/*
 * XXPH3-64: the preview of XXH3 from xxHash 0.7.2 (seed 0, the default secret) that RocksDB froze
 * as its 64-bit key hash (Hash64). Format_version 5 Bloom filters (FastLocalBloom) hash every user
 * key with it, so a filter built here must use exactly these mixing rules; they are NOT those of
 * the released XXH3 (xxh3.c) for most length classes.
 *
 * Contract: xxph3_64(data, length) equals xxph3Reference in src/sstable/hash.ts (a BigInt
 * transcription of the definition) and the JavaScript fast path `xxph3`;
 * test/native/xxph3.test.ts compares all three for every length from 0 to 2100. Reads exactly
 * `length` bytes, unaligned (loads.h).
 *
 * Length classes: 0, 1-3, 4-8, 9-16, 17-128, 129-240, and > 240, which runs eight 64-bit
 * accumulators over 64-byte stripes, scrambled after every 1024 bytes.
 */
#include "xxph3.h"

#include "loads.h"
#include "xxh3.h"

#define P32_1 0x9E3779B1ULL
#define P32_2 0x85EBCA77ULL
#define P32_3 0xC2B2AE3DULL
#define P64_1 0x9E3779B185EBCA87ULL
#define P64_2 0xC2B2AE3D27D4EB4FULL
#define P64_3 0x165667B19E3779F9ULL
#define P64_4 0x85EBCA77C2B2AE63ULL
#define P64_5 0x27D4EB2F165667C5ULL
/* Secret offsets of xxHash 0.7.2's layout. */
#define MIDSIZE_START_OFFSET 3
#define MIDSIZE_LAST_OFFSET (136 - 17)
#define LAST_STRIPE_OFFSET (XXH3_SECRET_BYTES - 64 - 7)
#define SCRAMBLE_OFFSET (XXH3_SECRET_BYTES - 64)
#define MERGE_OFFSET 11
#define STRIPES_PER_BLOCK 16
#define BLOCK_BYTES (64 * STRIPES_PER_BLOCK)

static const uint8_t* const S = kXxh3Secret;

#define fold xxh3_fold64

static inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= P64_3;
  return h ^ (h >> 32);
}

static inline uint64_t mix(const uint8_t* d, size_t at, size_t secretAt) {
  return fold(read64(d + at) ^ read64(S + secretAt), read64(d + at + 8) ^ read64(S + secretAt + 8));
}

static uint64_t hash_short(const uint8_t* d, size_t L) {
  if (L == 0) return fold(read64(S), P64_2);
  if (L <= 3) {
    uint32_t c = (uint32_t)d[0] | ((uint32_t)d[L >> 1] << 8) | ((uint32_t)d[L - 1] << 16) | ((uint32_t)L << 24);
    return avalanche(((uint64_t)c ^ (uint64_t)read32(S)) * P64_1);
  }
  if (L <= 8) {
    uint64_t x = (uint64_t)read32(d) | ((uint64_t)read32(d + L - 4) << 32);
    uint64_t k = x ^ read64(S);
    uint64_t m = L + (k ^ (k >> 51)) * P32_1;
    return avalanche((m ^ (m >> 47)) * P64_2);
  }
  uint64_t lo = read64(d) ^ read64(S);
  uint64_t hi = read64(d + L - 8) ^ read64(S + 8);
  return avalanche(L + lo + hi + fold(lo, hi));
}

static uint64_t hash_17_to_128(const uint8_t* d, size_t L) {
  uint64_t a = L * P64_1;
  if (L > 32) {
    if (L > 64) {
      if (L > 96) a += mix(d, 48, 96) + mix(d, L - 64, 112);
      a += mix(d, 32, 64) + mix(d, L - 48, 80);
    }
    a += mix(d, 16, 32) + mix(d, L - 32, 48);
  }
  a += mix(d, 0, 0) + mix(d, L - 16, 16);
  return avalanche(a);
}

static uint64_t hash_129_to_240(const uint8_t* d, size_t L) {
  uint64_t a = L * P64_1;
  for (size_t i = 0; i < 8; i++) a += mix(d, 16 * i, 16 * i);
  a = avalanche(a);
  for (size_t i = 8; i < L / 16; i++) a += mix(d, 16 * i, 16 * (i - 8) + MIDSIZE_START_OFFSET);
  a += mix(d, L - 16, MIDSIZE_LAST_OFFSET);
  return avalanche(a);
}

/* The preview's stripe: each lane adds its own input word (the release adds it to the neighbour lane). */
static inline void stripe(uint64_t acc[8], const uint8_t* in, size_t secretAt) {
  for (int j = 0; j < 8; j++) {
    uint64_t v = read64(in + 8 * j);
    uint64_t k = v ^ read64(S + secretAt + 8 * j);
    acc[j] += v + (k & 0xffffffffULL) * (k >> 32);
  }
}

static uint64_t hash_long(const uint8_t* d, size_t L) {
  uint64_t acc[8] = {P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1};
  size_t blocks = L / BLOCK_BYTES;
  for (size_t b = 0; b < blocks; b++) {
    for (size_t t = 0; t < STRIPES_PER_BLOCK; t++) stripe(acc, d + BLOCK_BYTES * b + 64 * t, 8 * t);
    for (int j = 0; j < 8; j++) {
      uint64_t a = acc[j];
      a ^= a >> 47;
      a ^= read64(S + SCRAMBLE_OFFSET + 8 * j);
      acc[j] = a * P32_1;
    }
  }
  size_t stripes = (L - BLOCK_BYTES * blocks) / 64;
  for (size_t t = 0; t < stripes; t++) stripe(acc, d + BLOCK_BYTES * blocks + 64 * t, 8 * t);
  if (L % 64 != 0) stripe(acc, d + L - 64, LAST_STRIPE_OFFSET);
  uint64_t r = L * P64_1;
  for (int j = 0; j < 4; j++)
    r += fold(acc[2 * j] ^ read64(S + MERGE_OFFSET + 16 * j), acc[2 * j + 1] ^ read64(S + MERGE_OFFSET + 8 + 16 * j));
  return avalanche(r);
}

uint64_t xxph3_64(const uint8_t* data, size_t length) {
  if (length <= 16) return hash_short(data, length);
  if (length <= 128) return hash_17_to_128(data, length);
  if (length <= 240) return hash_129_to_240(data, length);
  return hash_long(data, length);
}
