/*
 * XXH3-64 (the released XXH3 of xxHash 0.8, seed 0, the default 192-byte secret).
 *
 * RocksDB 7.8 checksums every block with it by default (ChecksumType kXXH3): the stored value is
 * low32(XXH3_64(contents)) XOR (type byte * 0x6b9083d9). It sits on every block read, so it is
 * computed here, in C, inside the same native call that reads and decodes the block, instead of
 * through a JavaScript hashing package whose per-call overhead costs more than the hash itself.
 *
 * Contract: xxh3_64(data, length) returns XXH3_64bits(data, length). Reads exactly `length`
 * bytes; no alignment is required (every load goes through memcpy). Written from the algorithm's
 * definition; test/native-codec.test.ts checks it against @node-rs/xxhash for every length from 0
 * to 2100 and for larger inputs.
 *
 * The input-length classes (0, 1-3, 4-8, 9-16, 17-128, 129-240, >240) each have their own mixing,
 * as the algorithm defines; inputs over 240 bytes run the striped "long" loop: eight 64-bit
 * accumulators consume 64-byte stripes, scrambled after every 1024-byte block.
 */
#include "xxh3.h"

#include <string.h>

#define PRIME32_1 0x9E3779B1U
#define PRIME32_2 0x85EBCA77U
#define PRIME32_3 0xC2B2AE3DU
#define PRIME64_1 0x9E3779B185EBCA87ULL
#define PRIME64_2 0xC2B2AE3D27D4EB4FULL
#define PRIME64_3 0x165667B19E3779F9ULL
#define PRIME64_4 0x85EBCA77C2B2AE63ULL
#define PRIME64_5 0x27D4EB2F165667C5ULL
#define PRIME_MX1 0x165667919E3779F9ULL
#define PRIME_MX2 0x9FB21C651E98DF25ULL

#define SECRET_BYTES XXH3_SECRET_BYTES
#define kSecret kXxh3Secret
#define STRIPE_BYTES 64
/* Stripes per block: the secret advances 8 bytes per stripe and must leave a full stripe's worth. */
#define STRIPES_PER_BLOCK ((SECRET_BYTES - STRIPE_BYTES) / 8)
#define BLOCK_BYTES (STRIPE_BYTES * STRIPES_PER_BLOCK)
/* Where the scramble key and the last stripe's key start, and where the merge key starts. */
#define SCRAMBLE_SECRET_OFFSET (SECRET_BYTES - STRIPE_BYTES)
#define LAST_STRIPE_SECRET_OFFSET (SECRET_BYTES - STRIPE_BYTES - 7)
#define MERGE_SECRET_OFFSET 11
/* Mid-size (129-240 bytes) inputs: the smallest secret size, and the last round's offset from it. */
#define MIDSIZE_SECRET_MIN_BYTES 136
#define MIDSIZE_LAST_OFFSET 17

/* The default secret; XXPH3 (xxph3.c) uses the same bytes. */
const uint8_t kXxh3Secret[XXH3_SECRET_BYTES] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

/* Little-endian loads: see loads.h (the build refuses big-endian targets). */
#include "loads.h"

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

#define mul128_fold64 xxh3_fold64

/* XXH64's final mix, used by the 0-3 byte classes. */
static inline uint64_t xxh64_avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= PRIME64_2;
  h ^= h >> 29;
  h *= PRIME64_3;
  h ^= h >> 32;
  return h;
}

static inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= PRIME_MX1;
  h ^= h >> 32;
  return h;
}

/* The 4-8 byte class's stronger final mix, which also folds in the length. */
static inline uint64_t rrmxmx(uint64_t h, uint64_t length) {
  h ^= rotl64(h, 49) ^ rotl64(h, 24);
  h *= PRIME_MX2;
  h ^= (h >> 35) + length;
  h *= PRIME_MX2;
  h ^= h >> 28;
  return h;
}

static inline uint64_t mix16(const uint8_t* in, const uint8_t* secret) {
  return mul128_fold64(read64(in) ^ read64(secret), read64(in + 8) ^ read64(secret + 8));
}

static uint64_t hash_0_to_16(const uint8_t* in, size_t length) {
  if (length > 8) {
    uint64_t lo = read64(in) ^ (read64(kSecret + 24) ^ read64(kSecret + 32));
    uint64_t hi = read64(in + length - 8) ^ (read64(kSecret + 40) ^ read64(kSecret + 48));
    uint64_t acc = length + __builtin_bswap64(lo) + hi + mul128_fold64(lo, hi);
    return avalanche(acc);
  }
  if (length >= 4) {
    uint64_t first = read32(in);
    uint64_t last = read32(in + length - 4);
    uint64_t combined = last + (first << 32);
    return rrmxmx(combined ^ (read64(kSecret + 8) ^ read64(kSecret + 16)), length);
  }
  if (length > 0) {
    uint32_t combined = ((uint32_t)in[0] << 16) | ((uint32_t)in[length >> 1] << 24) | (uint32_t)in[length - 1] |
                        ((uint32_t)length << 8);
    uint64_t flip = (uint64_t)(read32(kSecret) ^ read32(kSecret + 4));
    return xxh64_avalanche((uint64_t)combined ^ flip);
  }
  return xxh64_avalanche(read64(kSecret + 56) ^ read64(kSecret + 64));
}

static uint64_t hash_17_to_128(const uint8_t* in, size_t length) {
  uint64_t acc = length * PRIME64_1;
  if (length > 32) {
    if (length > 64) {
      if (length > 96) {
        acc += mix16(in + 48, kSecret + 96);
        acc += mix16(in + length - 64, kSecret + 112);
      }
      acc += mix16(in + 32, kSecret + 64);
      acc += mix16(in + length - 48, kSecret + 80);
    }
    acc += mix16(in + 16, kSecret + 32);
    acc += mix16(in + length - 32, kSecret + 48);
  }
  acc += mix16(in, kSecret);
  acc += mix16(in + length - 16, kSecret + 16);
  return avalanche(acc);
}

static uint64_t hash_129_to_240(const uint8_t* in, size_t length) {
  uint64_t acc = length * PRIME64_1;
  size_t rounds = length / 16;
  for (size_t i = 0; i < 8; i++) acc += mix16(in + 16 * i, kSecret + 16 * i);
  acc = avalanche(acc);
  for (size_t i = 8; i < rounds; i++) acc += mix16(in + 16 * i, kSecret + 16 * (i - 8) + 3);
  acc += mix16(in + length - 16, kSecret + MIDSIZE_SECRET_MIN_BYTES - MIDSIZE_LAST_OFFSET);
  return avalanche(acc);
}

static inline void accumulate_stripe(uint64_t acc[8], const uint8_t* in, const uint8_t* secret) {
  for (int i = 0; i < 8; i++) {
    uint64_t value = read64(in + 8 * i);
    uint64_t keyed = value ^ read64(secret + 8 * i);
    acc[i ^ 1] += value;
    acc[i] += (uint64_t)(uint32_t)keyed * (keyed >> 32);
  }
}

static inline void scramble(uint64_t acc[8], const uint8_t* secret) {
  for (int i = 0; i < 8; i++) {
    uint64_t a = acc[i];
    a ^= a >> 47;
    a ^= read64(secret + 8 * i);
    a *= PRIME32_1;
    acc[i] = a;
  }
}

static uint64_t hash_long(const uint8_t* in, size_t length) {
  uint64_t acc[8] = {PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1};
  size_t blocks = (length - 1) / BLOCK_BYTES;
  for (size_t b = 0; b < blocks; b++) {
    const uint8_t* block = in + b * BLOCK_BYTES;
    for (size_t s = 0; s < STRIPES_PER_BLOCK; s++) accumulate_stripe(acc, block + s * STRIPE_BYTES, kSecret + 8 * s);
    scramble(acc, kSecret + SCRAMBLE_SECRET_OFFSET);
  }
  /* The last, partial block: its whole stripes, then the input's last 64 bytes as a final stripe. */
  size_t stripes = ((length - 1) - blocks * BLOCK_BYTES) / STRIPE_BYTES;
  const uint8_t* tail = in + blocks * BLOCK_BYTES;
  for (size_t s = 0; s < stripes; s++) accumulate_stripe(acc, tail + s * STRIPE_BYTES, kSecret + 8 * s);
  accumulate_stripe(acc, in + length - STRIPE_BYTES, kSecret + LAST_STRIPE_SECRET_OFFSET);

  uint64_t result = length * PRIME64_1;
  for (int i = 0; i < 4; i++) {
    const uint8_t* key = kSecret + MERGE_SECRET_OFFSET + 16 * i;
    result += mul128_fold64(acc[2 * i] ^ read64(key), acc[2 * i + 1] ^ read64(key + 8));
  }
  return avalanche(result);
}

uint64_t xxh3_64(const uint8_t* data, size_t length) {
  if (length <= 16) return hash_0_to_16(data, length);
  if (length <= 128) return hash_17_to_128(data, length);
  if (length <= 240) return hash_129_to_240(data, length);
  return hash_long(data, length);
}
