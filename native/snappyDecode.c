/*
 * Snappy raw block decoding (Snappy's block format, not its framing format), with every bound
 * checked.
 *
 * Snappy is RocksDB's default compression, so a database RocksDB made is mostly Snappy blocks;
 * decoding them here, inside the native call that read the block, avoids a package call per
 * block-cache miss (bench/block-codecs.ts measures both).
 *
 * The format: a varint32 preamble (the decoded length), then elements, each starting with a tag
 * byte whose low two bits say what it is:
 *   00 literal: length - 1 is tag >> 2 when below 60; tag >> 2 of 60..63 means that length - 1
 *      follows in 1..4 little-endian bytes. The literal bytes follow.
 *   01 copy, 1-byte offset: length 4 + ((tag >> 2) & 7); offset ((tag >> 5) << 8) | next byte.
 *   10 copy, 2-byte offset: length 1 + (tag >> 2); offset u16le.
 *   11 copy, 4-byte offset: length 1 + (tag >> 2); offset u32le.
 * A copy repeats `length` bytes starting `offset` bytes back in the output; it may overlap the
 * bytes it writes (offset < length repeats a pattern).
 *
 * Contract of snappy_decode_block: it succeeds only if the input is consumed exactly and the
 * output filled exactly; anything else, hostile input included, returns an error status and
 * never reads outside src[0, srcBytes) or writes outside dst[0, dstBytes). Bytes of dst past the
 * point of failure are unspecified. Speed comes from fixed-size "wild" copies (16 bytes for a
 * short literal, 8-byte steps for a copy whose offset is at least 8), taken only where the input
 * and output have that much room left: they may write past the end of the element, into output
 * that later elements must overwrite before the decode can succeed (positions fill strictly in
 * order, and success demands the output end exactly full).
 */
#include "snappyDecode.h"

#include <string.h>

#define TAG_LITERAL 0
#define TAG_COPY_1 1
#define TAG_COPY_2 2
#define LITERAL_INLINE_MAX 60
#define WILD_LITERAL_BYTES 16
#define WILD_COPY_STEP_BYTES 8
/* Snappy's longest copy: 64 bytes, so a wild copy writes at most 64 + 7 bytes. */
#define MAX_COPY_BYTES 64

size_t snappy_read_length(const uint8_t* src, size_t srcBytes, uint32_t* decodedBytes) {
  uint32_t result = 0;
  for (size_t i = 0; i < 5 && i < srcBytes; i++) {
    uint32_t byte = src[i];
    if (i == 4 && byte > 0x0f) return 0; /* more than 32 bits */
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *decodedBytes = result;
      return i + 1;
    }
  }
  return 0;
}

/* Little-endian integer of `bytes` (1..4) bytes at p. */
static inline uint32_t load_le(const uint8_t* p, unsigned bytes) {
  uint32_t v = 0;
  for (unsigned i = 0; i < bytes; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

/*
 * Copies `length` (<= MAX_COPY_BYTES) bytes from `offset` back in the output; the caller checked
 * the bounds. `room` is the output left from `out`.
 */
static inline void copy_back(uint8_t* out, size_t offset, size_t length, size_t room) {
  const uint8_t* from = out - offset;
  if (offset >= WILD_COPY_STEP_BYTES && room >= MAX_COPY_BYTES + WILD_COPY_STEP_BYTES) {
    /* Each step reads 8 bytes that end at or before where it writes: already final. */
    for (size_t i = 0; i < length; i += WILD_COPY_STEP_BYTES) memcpy(out + i, from + i, WILD_COPY_STEP_BYTES);
    return;
  }
  if (offset >= length) {
    memcpy(out, from, length);
    return;
  }
  for (size_t i = 0; i < length; i++) out[i] = from[i]; /* overlapping: byte by byte, in order */
}

enum SnappyDecodeStatus snappy_decode_block(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstBytes) {
  uint32_t stated;
  size_t headerBytes = snappy_read_length(src, srcBytes, &stated);
  if (headerBytes == 0 || stated != dstBytes) return SNAPPY_DECODE_BAD_HEADER;
  const uint8_t* in = src + headerBytes;
  const uint8_t* const inEnd = src + srcBytes;
  uint8_t* out = dst;
  uint8_t* const outEnd = dst + dstBytes;
  while (in < inEnd) {
    unsigned tag = *in++;
    size_t length, offset;
    if ((tag & 3) == TAG_LITERAL) {
      length = tag >> 2;
      if (length >= LITERAL_INLINE_MAX) {
        unsigned extra = (unsigned)length - (LITERAL_INLINE_MAX - 1);
        if ((size_t)(inEnd - in) < extra) return SNAPPY_DECODE_TRUNCATED;
        length = load_le(in, extra);
        in += extra;
      }
      length += 1;
      if (length <= WILD_LITERAL_BYTES && (size_t)(inEnd - in) >= WILD_LITERAL_BYTES &&
          (size_t)(outEnd - out) >= WILD_LITERAL_BYTES) {
        memcpy(out, in, WILD_LITERAL_BYTES);
        in += length;
        out += length;
        continue;
      }
      if ((size_t)(inEnd - in) < length) return SNAPPY_DECODE_TRUNCATED;
      if ((size_t)(outEnd - out) < length) return SNAPPY_DECODE_OVERRUN;
      memcpy(out, in, length);
      in += length;
      out += length;
      continue;
    }
    if ((tag & 3) == TAG_COPY_1) {
      if (in >= inEnd) return SNAPPY_DECODE_TRUNCATED;
      length = 4 + ((tag >> 2) & 7);
      offset = ((size_t)(tag >> 5) << 8) | *in++;
    } else {
      unsigned offsetBytes = (tag & 3) == TAG_COPY_2 ? 2 : 4;
      if ((size_t)(inEnd - in) < offsetBytes) return SNAPPY_DECODE_TRUNCATED;
      length = 1 + (tag >> 2);
      offset = load_le(in, offsetBytes);
      in += offsetBytes;
    }
    if (offset == 0 || offset > (size_t)(out - dst)) return SNAPPY_DECODE_BAD_OFFSET;
    if ((size_t)(outEnd - out) < length) return SNAPPY_DECODE_OVERRUN;
    copy_back(out, offset, length, (size_t)(outEnd - out));
    out += length;
  }
  return out == outEnd ? SNAPPY_DECODE_OK : SNAPPY_DECODE_SHORT;
}

const char* snappy_decode_status_text(enum SnappyDecodeStatus status) {
  switch (status) {
    case SNAPPY_DECODE_OK:
      return "ok";
    case SNAPPY_DECODE_BAD_HEADER:
      return "Snappy length preamble is malformed or disagrees with the output size";
    case SNAPPY_DECODE_TRUNCATED:
      return "Snappy input ends inside an element";
    case SNAPPY_DECODE_BAD_OFFSET:
      return "Snappy copy offset is 0 or reaches before the output";
    case SNAPPY_DECODE_OVERRUN:
      return "Snappy elements run past the stated length";
    case SNAPPY_DECODE_SHORT:
      return "Snappy elements end before the stated length";
  }
  return "unknown Snappy decode status";
}
