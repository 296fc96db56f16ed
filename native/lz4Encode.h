/* LZ4 raw block encoding into a bounded output: see lz4Encode.c. */
#ifndef SST_INGEST_LZ4_ENCODE_H
#define SST_INGEST_LZ4_ENCODE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Encodes src[0, srcBytes) as one raw LZ4 block into dst[0, dstCapacity). Returns the encoded
 * length, or 0 when the encoding would not fit in dstCapacity (the caller then stores the
 * input raw; dst's contents are unspecified). srcBytes must be below 2^31.
 */
size_t lz4_encode_block(const uint8_t* src, size_t srcBytes, uint8_t* dst, size_t dstCapacity);

#endif
