/* XXH3-64 with seed 0 and the default secret: see xxh3.c. */
#ifndef SST_INGEST_XXH3_H
#define SST_INGEST_XXH3_H

#include <stddef.h>
#include <stdint.h>

#define XXH3_SECRET_BYTES 192

/* XXH3's 192-byte default secret, shared with XXPH3 (xxph3.c). */
extern const uint8_t kXxh3Secret[XXH3_SECRET_BYTES];

uint64_t xxh3_64(const uint8_t* data, size_t length);

/* The 128-bit product of a and b folded to 64 bits by XORing its halves (XXH3's and XXPH3's mixer). */
static inline uint64_t xxh3_fold64(uint64_t a, uint64_t b) {
  __uint128_t product = (__uint128_t)a * b;
  return (uint64_t)product ^ (uint64_t)(product >> 64);
}

#endif
