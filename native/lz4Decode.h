/* LZ4 raw block decoding with every bound checked: see lz4Decode.c. */
#ifndef SST_INGEST_LZ4_DECODE_H
#define SST_INGEST_LZ4_DECODE_H

#include <stddef.h>
#include <stdint.h>

enum Lz4DecodeStatus {
  LZ4_DECODE_OK = 0,
  /* The input ends inside a sequence (a token, a length byte, literals or an offset). */
  LZ4_DECODE_TRUNCATED = -1,
  /* A match offset is 0 or reaches before the start of the output. */
  LZ4_DECODE_BAD_OFFSET = -2,
  /* The sequences would write past the expected decoded size. */
  LZ4_DECODE_OVERRUN = -3,
  /* The sequences end before filling the expected decoded size. */
  LZ4_DECODE_SHORT = -4,
};

/* Decodes the raw LZ4 block src[0, srcBytes) into exactly dst[0, dstBytes). */
enum Lz4DecodeStatus lz4_decode_block(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstBytes);

const char* lz4_decode_status_text(enum Lz4DecodeStatus status);

#endif
