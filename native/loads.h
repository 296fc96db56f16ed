/*
 * Unaligned little-endian loads shared by the native codecs (memcpy compiles to one mov).
 * Little-endian only: x86-64 and aarch64 are; the build refuses other targets, since the
 * codecs read multi-byte fields and compare words byte by byte from the low end.
 */
#ifndef SST_INGEST_LOADS_H
#define SST_INGEST_LOADS_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the native codecs assume a little-endian target"
#endif

static inline uint64_t read64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline uint32_t read32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#endif
