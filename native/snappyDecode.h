/* Snappy raw block decoding with every bound checked: see snappyDecode.c. */
#ifndef SST_INGEST_SNAPPY_DECODE_H
#define SST_INGEST_SNAPPY_DECODE_H

#include <stddef.h>
#include <stdint.h>

enum SnappyDecodeStatus {
  SNAPPY_DECODE_OK = 0,
  /* The length preamble is not a valid varint32. */
  SNAPPY_DECODE_BAD_HEADER = -1,
  /* The input ends inside an element (a tag, a length or an offset, or literal bytes). */
  SNAPPY_DECODE_TRUNCATED = -2,
  /* A copy's offset is 0 or reaches before the start of the output. */
  SNAPPY_DECODE_BAD_OFFSET = -3,
  /* The elements would write past the length the preamble states. */
  SNAPPY_DECODE_OVERRUN = -4,
  /* The elements end before filling the stated length. */
  SNAPPY_DECODE_SHORT = -5,
};

/*
 * Reads the varint32 decoded-length preamble of src[0, srcBytes): returns its byte count (1..5)
 * and sets *decodedBytes, or returns 0 if it is malformed or truncated.
 */
size_t snappy_read_length(const uint8_t* src, size_t srcBytes, uint32_t* decodedBytes);

/*
 * Decodes the whole raw Snappy block src[0, srcBytes) (preamble included) into exactly
 * dst[0, dstBytes); dstBytes must equal the preamble's length, else SNAPPY_DECODE_BAD_HEADER.
 */
enum SnappyDecodeStatus snappy_decode_block(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstBytes);

const char* snappy_decode_status_text(enum SnappyDecodeStatus status);

#endif
