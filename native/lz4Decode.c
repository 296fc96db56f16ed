/*
 * LZ4 raw block decoding (the LZ4 block format, no frame), with every bound checked.
 *
 * RocksDB stores an LZ4 data block as `varint32 decoded size ‖ raw LZ4 block`. Decoding sits on
 * every block-cache miss, so it runs here, inside the native call that read the block, rather
 * than through a package whose per-call overhead and output framing cost as much as the decode.
 *
 * The block format: a sequence is `token ‖ [literal length extension] ‖ literals ‖ u16le offset ‖
 * [match length extension]`. The token's high nibble is the literal length, its low nibble the
 * match length minus 4; a nibble of 15 continues in extension bytes, each added, until one is not
 * 255. The last sequence has literals only and ends the input.
 *
 * Contract of lz4_decode_block: the decode succeeds only if the input is consumed exactly and the
 * output is filled exactly; anything else (including hostile input) returns an error status and
 * never reads outside src[0, srcBytes) or writes outside dst[0, dstBytes). Bytes of dst past the
 * point of failure are unspecified. Speed comes from 16-byte "wild" copies, taken only where at
 * least 16 bytes of slack remain on both sides: they may write past the end of the current
 * literal run or match, into output that later sequences must overwrite before the decode can
 * succeed (positions fill strictly in order, and success demands the output end exactly full).
 */
#include "lz4Decode.h"

#include <string.h>

#define MIN_MATCH_BYTES 4
#define WILD_COPY_BYTES 16

/* Adds the extension bytes of a length nibble of 15 to *length; false if the input ends first. */
static inline int read_length_extension(const uint8_t** inPos, const uint8_t* inEnd, size_t* length) {
  const uint8_t* in = *inPos;
  unsigned byte;
  do {
    if (in >= inEnd) return 0;
    byte = *in++;
    *length += byte;
  } while (byte == 255);
  *inPos = in;
  return 1;
}

enum Lz4DecodeStatus lz4_decode_block(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstBytes) {
  const uint8_t* in = src;
  const uint8_t* const inEnd = src + srcBytes;
  uint8_t* out = dst;
  uint8_t* const outEnd = dst + dstBytes;

  for (;;) {
    if (in >= inEnd) return LZ4_DECODE_TRUNCATED;
    const unsigned token = *in++;

    size_t literalBytes = token >> 4;
    if (literalBytes == 15 && !read_length_extension(&in, inEnd, &literalBytes)) return LZ4_DECODE_TRUNCATED;
    if (literalBytes > (size_t)(inEnd - in)) return LZ4_DECODE_TRUNCATED;
    if (literalBytes > (size_t)(outEnd - out)) return LZ4_DECODE_OVERRUN;
    if (literalBytes <= WILD_COPY_BYTES && inEnd - in >= WILD_COPY_BYTES && outEnd - out >= WILD_COPY_BYTES) {
      memcpy(out, in, WILD_COPY_BYTES);
    } else {
      memcpy(out, in, literalBytes);
    }
    out += literalBytes;
    in += literalBytes;
    if (in == inEnd) break; /* the last sequence: literals only */

    if (inEnd - in < 2) return LZ4_DECODE_TRUNCATED;
    const size_t offset = (size_t)in[0] | ((size_t)in[1] << 8);
    in += 2;
    if (offset == 0 || offset > (size_t)(out - dst)) return LZ4_DECODE_BAD_OFFSET;

    size_t matchBytes = token & 15;
    if (matchBytes == 15 && !read_length_extension(&in, inEnd, &matchBytes)) return LZ4_DECODE_TRUNCATED;
    matchBytes += MIN_MATCH_BYTES;
    if (matchBytes > (size_t)(outEnd - out)) return LZ4_DECODE_OVERRUN;

    const uint8_t* match = out - offset;
    if (offset >= WILD_COPY_BYTES && (size_t)(outEnd - out) >= matchBytes + WILD_COPY_BYTES - 1) {
      /* Each 16-byte chunk reads only bytes already written (offset >= 16), and the last chunk's
       * overshoot stays inside the output. */
      for (size_t i = 0; i < matchBytes; i += WILD_COPY_BYTES) memcpy(out + i, match + i, WILD_COPY_BYTES);
    } else if (offset >= matchBytes) {
      memcpy(out, match, matchBytes);
    } else {
      /* Overlapping match (a run): byte by byte, so each byte can repeat ones this copy wrote. */
      for (size_t i = 0; i < matchBytes; i++) out[i] = match[i];
    }
    out += matchBytes;
  }
  return out == outEnd ? LZ4_DECODE_OK : LZ4_DECODE_SHORT;
}

const char* lz4_decode_status_text(enum Lz4DecodeStatus status) {
  switch (status) {
    case LZ4_DECODE_OK:
      return "ok";
    case LZ4_DECODE_TRUNCATED:
      return "the LZ4 input ends inside a sequence";
    case LZ4_DECODE_BAD_OFFSET:
      return "an LZ4 match offset is 0 or reaches before the start of the block";
    case LZ4_DECODE_OVERRUN:
      return "the LZ4 sequences decode past the size in the block header";
    case LZ4_DECODE_SHORT:
      return "the LZ4 sequences decode to fewer bytes than the block header says";
  }
  return "unknown LZ4 decode status";
}
