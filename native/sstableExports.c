/*
 * sstableExports: the table format layer's Node-API glue (C11), registered by addon.c. Its
 * TypeScript face is src/sstable/nativeBlockCodec.ts; the algorithms are lz4Decode.c,
 * lz4Encode.c, snappyDecode.c, xxh3.c and xxph3.c.
 *
 * Why: a block-cache miss used to cost four crossings between JavaScript and native code: the
 * read, the checksum, the LZ4 size framing and the decode, each with its own per-call overhead
 * (about 1 µs for the decode alone) on top of the work. readBlock() does all of it in one call
 * (LZ4 and Snappy; the caller decodes Zlib and ZSTD blocks on its JavaScript path):
 *
 *   pread(fd, blockBytes + 5 at position)  ->  verify the trailer's checksum  ->  decode
 *
 * and returns the block's contents in a new Buffer that the block cache can keep.
 *
 * On-disk layout it reads (RocksDB's BlockBasedTable): `contents ‖ u8 compression type ‖ u32le
 * checksum`. Compression 0 is raw contents; 4 (LZ4) and 5 (LZ4HC) are `varint32 decoded size ‖
 * raw LZ4 block` (format_version >= 2; the reader rejects older versions at open); 1 (Snappy) is a
 * raw Snappy block, which carries its own varint32 decoded length. Other types are
 * UNSUPPORTED_COMPRESSION, for the caller to decode or refuse. The checksum
 * types handled here are 0 (none) and 4 (XXH3: low32(XXH3_64(contents)) ^ (type * 0x6b9083d9));
 * the JavaScript caller keeps CRC32C and xxHash/xxHash64 files on its own path.
 *
 * Exports (all synchronous; safe to load in worker threads, the module is context-aware):
 *   readBlock(fd, position, blockBytes, checksumType, verify, maxDecodedBytes) -> Buffer
 *   readBlock(bytes, position, ...) -> the same from bytes[position..] already in memory (a
 *       readahead buffer: the scan reads 256 KiB at once instead of one pread per block)
 *   readBlock(..., maxDecodedBytes, dest, destOffset) -> number   decodes into dest[destOffset..]
 *       and returns the decoded length, or minus the length needed when it does not fit (then
 *       nothing is written; the caller retries with more room). Arena callers use this form:
 *       a fresh Buffer per block costs about 1 µs of allocation, more than reading the block.
 *   xxh3Low32(data, start, end) -> uint32        low 32 bits of XXH3_64(data[start, end))
 *   lz4DecodeInto(src, srcStart, srcEnd, dst) -> undefined   decodes exactly dst.length bytes
 *   snappyDecodeInto(src, srcStart, srcEnd, dst) -> undefined  the raw Snappy block src[start, end)
 *       (preamble included) into exactly dst.length bytes
 *   lz4EncodeInto(src, srcStart, srcEnd, dst, dstStart, dstEnd) -> number  the table writer's
 *       LZ4 encoder (lz4Encode.c): the encoded length, or 0 when it does not fit
 *   xxph3(data, start, end) -> [lo, hi]  XXPH3-64, the filter's key hash (xxph3.c)
 *   blockSeekGE(data, target, keyOut, io) -> offset | -1 | -2   a block's SeekGE (blockSearch.c)
 *   bloomMayMatch(bits, lengthBytes, numProbes, key) -> boolean   a FastLocalBloom probe
 *
 * Errors are thrown as JavaScript Errors with a `code` the caller maps to its own typed errors
 * (it knows the file name, block kind and offset): SHORT_READ (the file ends early; `missingBytes`
 * says how much), IO (the read failed; the message has strerror), CHECKSUM_MISMATCH (`stored`,
 * `computed`), LZ4_MALFORMED, SNAPPY_MALFORMED, UNSUPPORTED_COMPRESSION (`compressionType`),
 * INVALID_ARGUMENT.
 *
 * Limits: a block is read into a per-thread scratch buffer when it fits SCRATCH_MAX_BYTES and into
 * a heap buffer freed before returning otherwise, so no call retains more than SCRATCH_MAX_BYTES.
 * The decoded size is checked against the caller's maxDecodedBytes and against the codec's largest
 * possible expansion of the payload (LZ4 255x, Snappy 22x) before any output is allocated.
 */
/* pread() and off_t are POSIX, hidden by -std=c11 unless asked for. */
#define _POSIX_C_SOURCE 200809L
#include "napiHelpers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blockSearch.h"
#include "layerExports.h"
#include "lz4Decode.h"
#include "lz4Encode.h"
#include "snappyDecode.h"
#include "xxh3.h"
#include "xxph3.h"

#define BLOCK_TRAILER_BYTES 5
#define SCRATCH_MAX_BYTES (256 * 1024)
#define LZ4_MAX_EXPANSION 255
/* A 3-byte Snappy copy emits at most 64 bytes; the slack covers tiny blocks. */
#define SNAPPY_MAX_EXPANSION 22
#define SNAPPY_EXPANSION_SLACK 64
#define COMPRESSION_SNAPPY 1
#define COMPRESSION_NONE 0
#define COMPRESSION_LZ4 4
#define COMPRESSION_LZ4HC 5
#define CHECKSUM_NONE 0
#define CHECKSUM_XXH3 4
#define XXH3_TYPE_MULTIPLIER 0x6b9083d9U

static _Thread_local uint8_t* scratch = NULL;
static _Thread_local size_t scratchBytes = 0;

/* Reads exactly `length` bytes at `position`; on failure throws and returns 0. */
static int read_fully(napi_env env, int fd, uint8_t* into, size_t length, int64_t position) {
  size_t done = 0;
  while (done < length) {
    ssize_t n = pread(fd, into + done, length - done, (off_t)(position + (int64_t)done));
    if (n < 0) {
      if (errno == EINTR) continue;
      char message[160];
      snprintf(message, sizeof message, "pread of %zu bytes at offset %lld failed: %s", length, (long long)position,
               strerror(errno));
      throw_coded(env, "IO", message, NULL, 0, NULL, 0);
      return 0;
    }
    if (n == 0) {
      char message[96];
      snprintf(message, sizeof message, "file ends %zu bytes early", length - done);
      throw_coded(env, "SHORT_READ", message, "missingBytes", (double)(length - done), NULL, 0);
      return 0;
    }
    done += (size_t)n;
  }
  return 1;
}

static uint32_t xxh3_low32(const uint8_t* data, size_t length) { return (uint32_t)xxh3_64(data, length); }

/* Parses a varint32 from p[0, length); returns its byte count, or 0 if malformed or truncated. */
static size_t read_varint32(const uint8_t* p, size_t length, uint32_t* value) {
  uint32_t result = 0;
  for (size_t i = 0; i < 5 && i < length; i++) {
    uint32_t byte = p[i];
    if (i == 4 && byte > 0x0f) return 0; /* more than 32 bits */
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *value = result;
      return i + 1;
    }
  }
  return 0;
}

/*
 * Where decoded contents go: a new Buffer (dest == NULL), or dest[0, destRoom) of the caller's
 * arena, in which case the result is the decoded length, or minus the length needed if it does
 * not fit (nothing is written then).
 */
typedef struct {
  uint8_t* dest;
  size_t destRoom;
} Output;

/* Room for `bytes` of output; sets *result. Returns NULL (having set *result) if the caller must stop. */
static void* output_room(napi_env env, const Output* output, size_t bytes, napi_value* result, int* stop) {
  void* out = NULL;
  *stop = 0;
  if (output->dest == NULL) {
    if (napi_create_buffer(env, bytes, &out, result) != napi_ok) *stop = 1;
    return out;
  }
  if (bytes > output->destRoom) {
    napi_create_double(env, -(double)bytes, result);
    *stop = 1;
    return NULL;
  }
  napi_create_uint32(env, (uint32_t)bytes, result);
  return output->dest;
}

/* Decodes a raw Snappy block into `output`; on failure throws and returns NULL. */
static napi_value decode_snappy(napi_env env, const uint8_t* stored, size_t storedBytes, uint32_t maxDecodedBytes,
                                const Output* output) {
  napi_value result = NULL;
  int stop;
  uint32_t decodedBytes;
  if (snappy_read_length(stored, storedBytes, &decodedBytes) == 0) {
    throw_coded(env, "SNAPPY_MALFORMED", "bad Snappy length preamble", NULL, 0, NULL, 0);
    return NULL;
  }
  if (decodedBytes > maxDecodedBytes ||
      (uint64_t)decodedBytes > (uint64_t)storedBytes * SNAPPY_MAX_EXPANSION + SNAPPY_EXPANSION_SLACK) {
    char message[128];
    snprintf(message, sizeof message, "Snappy size header %u is implausible for %zu payload bytes", decodedBytes,
             storedBytes);
    throw_coded(env, "SNAPPY_MALFORMED", message, NULL, 0, NULL, 0);
    return NULL;
  }
  void* out = output_room(env, output, decodedBytes, &result, &stop);
  if (stop) return result;
  enum SnappyDecodeStatus status = snappy_decode_block(stored, storedBytes, (uint8_t*)out, decodedBytes);
  if (status != SNAPPY_DECODE_OK) {
    throw_coded(env, "SNAPPY_MALFORMED", snappy_decode_status_text(status), NULL, 0, NULL, 0);
    return NULL;
  }
  return result;
}

/* Decodes a stored block's contents into `output`; on failure throws and returns NULL. */
static napi_value decode_contents(napi_env env, const uint8_t* stored, size_t storedBytes, unsigned type,
                                  uint32_t maxDecodedBytes, const Output* output) {
  napi_value result = NULL;
  void* out;
  int stop;
  if (type == COMPRESSION_NONE) {
    out = output_room(env, output, storedBytes, &result, &stop);
    if (stop) return result;
    memcpy(out, stored, storedBytes);
    return result;
  }
  if (type == COMPRESSION_SNAPPY) return decode_snappy(env, stored, storedBytes, maxDecodedBytes, output);
  if (type != COMPRESSION_LZ4 && type != COMPRESSION_LZ4HC) {
    char message[64];
    snprintf(message, sizeof message, "compression type %u is not supported here", type);
    throw_coded(env, "UNSUPPORTED_COMPRESSION", message, "compressionType", (double)type, NULL, 0);
    return NULL;
  }
  uint32_t decodedBytes;
  size_t headerBytes = read_varint32(stored, storedBytes, &decodedBytes);
  if (headerBytes == 0) {
    throw_coded(env, "LZ4_MALFORMED", "bad LZ4 size header", NULL, 0, NULL, 0);
    return NULL;
  }
  size_t payloadBytes = storedBytes - headerBytes;
  if (decodedBytes > maxDecodedBytes || (uint64_t)decodedBytes > (uint64_t)payloadBytes * LZ4_MAX_EXPANSION + 16) {
    char message[128];
    snprintf(message, sizeof message, "LZ4 size header %u is implausible for %zu payload bytes", decodedBytes,
             payloadBytes);
    throw_coded(env, "LZ4_MALFORMED", message, NULL, 0, NULL, 0);
    return NULL;
  }
  out = output_room(env, output, decodedBytes, &result, &stop);
  if (stop) return result;
  enum Lz4DecodeStatus status = lz4_decode_block(stored + headerBytes, payloadBytes, (uint8_t*)out, decodedBytes);
  if (status != LZ4_DECODE_OK) {
    throw_coded(env, "LZ4_MALFORMED", lz4_decode_status_text(status), NULL, 0, NULL, 0);
    return NULL;
  }
  return result;
}

/*
 * Room to read `readBytes` into: the per-thread scratch buffer (grown, doubling, up to
 * SCRATCH_MAX_BYTES) when it fits there, else a heap buffer, also left in *owned for the caller
 * to free. On failure throws and returns NULL.
 */
static uint8_t* read_buffer(napi_env env, size_t readBytes, uint8_t** owned) {
  if (readBytes <= SCRATCH_MAX_BYTES) {
    if (scratchBytes < readBytes) {
      size_t grown = scratchBytes == 0 ? 8192 : scratchBytes;
      while (grown < readBytes) grown *= 2;
      if (grown > SCRATCH_MAX_BYTES) grown = SCRATCH_MAX_BYTES;
      uint8_t* bigger = (uint8_t*)realloc(scratch, grown);
      if (bigger == NULL) {
        napi_throw_error(env, "IO", "out of memory for the block read buffer");
        return NULL;
      }
      scratch = bigger;
      scratchBytes = grown;
    }
    return scratch;
  }
  *owned = (uint8_t*)malloc(readBytes);
  if (*owned == NULL) napi_throw_error(env, "IO", "out of memory for a large block");
  return *owned;
}

/* Verifies a block read into `buffer` (contents ‖ type ‖ checksum) and decodes it into `output`. */
static napi_value verify_and_decode(napi_env env, const uint8_t* buffer, uint32_t blockBytes, uint32_t checksumType,
                                    bool verify, uint32_t maxDecodedBytes, const Output* output) {
  unsigned type = buffer[blockBytes];
  uint32_t stored;
  memcpy(&stored, buffer + blockBytes + 1, sizeof stored);
  uint32_t computed = 0;
  if (verify && checksumType == CHECKSUM_XXH3) computed = xxh3_low32(buffer, blockBytes) ^ (type * XXH3_TYPE_MULTIPLIER);
  if (verify && checksumType != CHECKSUM_NONE && computed != stored) {
    char message[96];
    snprintf(message, sizeof message, "checksum mismatch: stored 0x%x, computed 0x%x", stored, computed);
    throw_coded(env, "CHECKSUM_MISMATCH", message, "stored", (double)stored, "computed", (double)computed);
    return NULL;
  }
  return decode_contents(env, buffer, blockBytes, type, maxDecodedBytes, output);
}

/*
 * The block's source: a file descriptor (read with pread), or bytes already holding the block
 * and its trailer at `position` (a readahead buffer, src/sstable/reader/blockPrefetcher.ts).
 * On failure throws and returns 0.
 */
typedef struct {
  int32_t fd;
  const uint8_t* bytes;
  size_t bytesLength;
} BlockSource;

static int block_source_of(napi_env env, napi_value value, BlockSource* source) {
  napi_valuetype kind;
  napi_typeof(env, value, &kind);
  source->fd = -1;
  source->bytes = NULL;
  source->bytesLength = 0;
  if (kind == napi_number) return napi_get_value_int32(env, value, &source->fd) == napi_ok && source->fd >= 0;
  uint8_t* bytes;
  if (!get_bytes(env, value, &bytes, &source->bytesLength)) return 0;
  source->bytes = bytes;
  return 1;
}

static napi_value read_block(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6 && argc != 8) {
    throw_invalid(env, "readBlock(fdOrBytes, position, blockBytes, checksumType, verify, maxDecodedBytes[, dest, destOffset])");
    return NULL;
  }
  BlockSource source;
  int64_t position;
  uint32_t blockBytes, checksumType, maxDecodedBytes;
  bool verify;
  if (!block_source_of(env, argv[0], &source) || napi_get_value_int64(env, argv[1], &position) != napi_ok ||
      napi_get_value_uint32(env, argv[2], &blockBytes) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &checksumType) != napi_ok ||
      napi_get_value_bool(env, argv[4], &verify) != napi_ok ||
      napi_get_value_uint32(env, argv[5], &maxDecodedBytes) != napi_ok) {
    throw_invalid(env, "readBlock: expected (fd >= 0 or bytes, int, uint32, uint32, boolean, uint32)");
    return NULL;
  }
  if (position < 0 || (checksumType != CHECKSUM_NONE && checksumType != CHECKSUM_XXH3)) {
    throw_invalid(env, "readBlock: negative position, or a checksum type other than none/xxh3");
    return NULL;
  }

  Output output = {NULL, 0};
  if (argc == 8) {
    uint8_t* dest;
    size_t destLength, destOffset;
    if (!get_bytes(env, argv[6], &dest, &destLength) || !get_index(env, argv[7], destLength, &destOffset)) return NULL;
    output.dest = dest + destOffset;
    output.destRoom = destLength - destOffset;
  }

  size_t readBytes = (size_t)blockBytes + BLOCK_TRAILER_BYTES;
  if (source.bytes != NULL) {
    if ((uint64_t)position + readBytes > source.bytesLength) {
      throw_invalid(env, "readBlock: the block and its trailer lie outside the bytes given");
      return NULL;
    }
    return verify_and_decode(env, source.bytes + position, blockBytes, checksumType, verify, maxDecodedBytes, &output);
  }
  uint8_t* owned = NULL;
  uint8_t* buffer = read_buffer(env, readBytes, &owned);
  if (buffer == NULL) return NULL;
  napi_value result = NULL;
  if (read_fully(env, source.fd, buffer, readBytes, position)) {
    result = verify_and_decode(env, buffer, blockBytes, checksumType, verify, maxDecodedBytes, &output);
  }
  free(owned);
  return result;
}

static napi_value xxh3_low32_js(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint8_t* data;
  size_t length, start, end;
  if (argc != 3) {
    throw_invalid(env, "xxh3Low32(data, start, end)");
    return NULL;
  }
  if (!get_bytes(env, argv[0], &data, &length) || !get_index(env, argv[1], length, &start) ||
      !get_index(env, argv[2], length, &end))
    return NULL;
  if (start > end) {
    throw_invalid(env, "xxh3Low32: start > end");
    return NULL;
  }
  napi_value result;
  napi_create_uint32(env, xxh3_low32(data + start, end - start), &result);
  return result;
}

/**
 * The arguments of a decodeInto(src, srcStart, srcEnd, dst) call: false (with a JavaScript error
 * thrown) when they are not two byte arrays and a range inside the first.
 */
static int get_decode_args(napi_env env, napi_callback_info info, const char *usage, uint8_t **src, size_t *srcLength,
                            uint8_t **dst, size_t *dstLength) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  size_t start, end;
  if (argc != 4) {
    throw_invalid(env, usage);
    return 0;
  }
  uint8_t *whole;
  size_t wholeLength;
  if (!get_bytes(env, argv[0], &whole, &wholeLength) || !get_index(env, argv[1], wholeLength, &start) ||
      !get_index(env, argv[2], wholeLength, &end) || !get_bytes(env, argv[3], dst, dstLength))
    return 0;
  if (start > end) {
    throw_invalid(env, "decodeInto: srcStart > srcEnd");
    return 0;
  }
  *src = whole + start;
  *srcLength = end - start;
  return 1;
}

static napi_value lz4_decode_into_js(napi_env env, napi_callback_info info) {
  uint8_t *src, *dst;
  size_t srcLength, dstLength;
  if (!get_decode_args(env, info, "lz4DecodeInto(src, srcStart, srcEnd, dst)", &src, &srcLength, &dst, &dstLength)) return NULL;
  enum Lz4DecodeStatus status = lz4_decode_block(src, srcLength, dst, dstLength);
  if (status != LZ4_DECODE_OK) throw_coded(env, "LZ4_MALFORMED", lz4_decode_status_text(status), NULL, 0, NULL, 0);
  return NULL;
}

static napi_value snappy_decode_into_js(napi_env env, napi_callback_info info) {
  uint8_t *src, *dst;
  size_t srcLength, dstLength;
  if (!get_decode_args(env, info, "snappyDecodeInto(src, srcStart, srcEnd, dst)", &src, &srcLength, &dst, &dstLength))
    return NULL;
  enum SnappyDecodeStatus status = snappy_decode_block(src, srcLength, dst, dstLength);
  if (status != SNAPPY_DECODE_OK) throw_coded(env, "SNAPPY_MALFORMED", snappy_decode_status_text(status), NULL, 0, NULL, 0);
  return NULL;
}

/*
 * lz4EncodeInto(src, srcStart, srcEnd, dst, dstStart, dstEnd) -> number: src[srcStart, srcEnd)
 * as a raw LZ4 block written at dst[dstStart..]; the encoded length, or 0 when it does not fit
 * in dst[dstStart, dstEnd) (the caller then stores the block raw).
 */
static napi_value lz4_encode_into_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6) {
    throw_invalid(env, "lz4EncodeInto(src, srcStart, srcEnd, dst, dstStart, dstEnd)");
    return NULL;
  }
  uint8_t *src, *dst;
  size_t srcLength, dstLength, srcStart, srcEnd, dstStart, dstEnd;
  if (!get_bytes(env, argv[0], &src, &srcLength) || !get_index(env, argv[1], srcLength, &srcStart) ||
      !get_index(env, argv[2], srcLength, &srcEnd) || !get_bytes(env, argv[3], &dst, &dstLength) ||
      !get_index(env, argv[4], dstLength, &dstStart) || !get_index(env, argv[5], dstLength, &dstEnd))
    return NULL;
  if (srcStart > srcEnd || dstStart > dstEnd || srcEnd - srcStart >= ((size_t)1 << 31)) {
    throw_invalid(env, "lz4EncodeInto: start > end, or a source of 2 GiB or more");
    return NULL;
  }
  size_t written = lz4_encode_block(src + srcStart, srcEnd - srcStart, dst + dstStart, dstEnd - dstStart);
  napi_value result;
  napi_create_uint32(env, (uint32_t)written, &result);
  return result;
}

/* xxph3(data, start, end) -> [lo, hi]: XXPH3-64 of data[start, end) as two uint32 halves (tests). */
static napi_value xxph3_js(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint8_t* data;
  size_t length, start, end;
  if (argc != 3 || !get_bytes(env, argv[0], &data, &length) || !get_index(env, argv[1], length, &start) ||
      !get_index(env, argv[2], length, &end) || end < start) {
    if (argc != 3) throw_invalid(env, "xxph3(data, start, end)");
    return NULL;
  }
  uint64_t h = xxph3_64(data + start, end - start);
  napi_value result, lo, hi;
  napi_create_array_with_length(env, 2, &result);
  napi_create_uint32(env, (uint32_t)h, &lo);
  napi_create_uint32(env, (uint32_t)(h >> 32), &hi);
  napi_set_element(env, result, 0, lo);
  napi_set_element(env, result, 1, hi);
  return result;
}

/* blockSeekGE's io array: inputs at the front, the entry found after IO_OUT (see nativeSearch.ts). */
enum {
  IO_ENTRIES_END = 0,
  IO_NUM_RESTARTS,
  IO_ORDER,
  IO_VALUE_FORMAT,
  IO_MIN_KEY_BYTES,
  IO_GLOBAL_SEQNO,
  IO_COMPARISONS,
  IO_OUT = 8,
  IO_LENGTH = 16
};

/*
 * blockSeekGE(data, target, keyOut, io) -> offset | -1 past the end | -2 declined (blockSearch.c):
 * the first entry of the block in `data` whose key is >= target; its raw key lands in keyOut,
 * its extent in io[IO_OUT..], and io[IO_COMPARISONS] grows by the comparisons made.
 */
static napi_value block_seek_ge_js(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint8_t *data, *target, *keyOut;
  size_t dataBytes, targetBytes, keyOutBytes, ioLength;
  double* io;
  if (argc != 4) {
    throw_invalid(env, "blockSeekGE(data, target, keyOut, io)");
    return NULL;
  }
  if (!get_bytes(env, argv[0], &data, &dataBytes) || !get_bytes(env, argv[1], &target, &targetBytes) ||
      !get_bytes(env, argv[2], &keyOut, &keyOutBytes) || !get_typed(env, argv[3], napi_float64_array, (void**)&io, &ioLength))
    return NULL;
  if (ioLength < IO_LENGTH || !(io[IO_ENTRIES_END] >= 0) || !(io[IO_NUM_RESTARTS] >= 0) ||
      io[IO_ENTRIES_END] + 4 * io[IO_NUM_RESTARTS] > (double)dataBytes || io[IO_ORDER] < 0 || io[IO_ORDER] > 1 ||
      io[IO_VALUE_FORMAT] < 0 || io[IO_VALUE_FORMAT] > 2) {
    throw_invalid(env, "blockSeekGE: io describes no block of data");
    return NULL;
  }
  BlockSearch search = {data, (uint32_t)io[IO_ENTRIES_END], (uint32_t)io[IO_NUM_RESTARTS], target, targetBytes,
                        (int)io[IO_ORDER], (int)io[IO_VALUE_FORMAT], (uint32_t)io[IO_MIN_KEY_BYTES],
                        (int64_t)io[IO_GLOBAL_SEQNO], keyOut, keyOutBytes, &io[IO_COMPARISONS]};
  BlockSeekResult r = {0};
  int64_t found = block_seek_ge(&search, &r);
  if (found >= 0) {
    io[IO_OUT + 0] = r.entryOffset;
    io[IO_OUT + 1] = r.keyLength;
    io[IO_OUT + 2] = r.sharedBytes;
    io[IO_OUT + 3] = r.valueStart;
    io[IO_OUT + 4] = r.valueEnd;
    io[IO_OUT + 5] = r.restartIndex;
    io[IO_OUT + 6] = r.handleOffset;
    io[IO_OUT + 7] = r.handleSize;
  }
  napi_value result;
  napi_create_int32(env, (int32_t)found, &result);
  return result;
}

/* bloomMayMatch(bits, lengthBytes, numProbes, key) -> boolean: a FastLocalBloom probe (blockSearch.c). */
static napi_value bloom_may_match_js(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint8_t *bits, *key;
  size_t bitsBytes, keyBytes, lengthBytes;
  uint32_t numProbes;
  if (argc != 4) {
    throw_invalid(env, "bloomMayMatch(bits, lengthBytes, numProbes, key)");
    return NULL;
  }
  if (!get_bytes(env, argv[0], &bits, &bitsBytes) || !get_index(env, argv[1], bitsBytes, &lengthBytes) ||
      !get_bytes(env, argv[3], &key, &keyBytes))
    return NULL;
  if (napi_get_value_uint32(env, argv[2], &numProbes) != napi_ok || lengthBytes < 64) {
    throw_invalid(env, "bloomMayMatch: numProbes must be a uint32 and the bits at least one 64-byte line");
    return NULL;
  }
  napi_value result;
  napi_get_boolean(env, bloom_may_match(bits, lengthBytes, numProbes, xxph3_64(key, keyBytes)), &result);
  return result;
}

napi_status sstable_register(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
      NAPI_EXPORT_FUNCTION("readBlock", read_block),
      NAPI_EXPORT_FUNCTION("xxh3Low32", xxh3_low32_js),
      NAPI_EXPORT_FUNCTION("lz4DecodeInto", lz4_decode_into_js),
      NAPI_EXPORT_FUNCTION("snappyDecodeInto", snappy_decode_into_js),
      NAPI_EXPORT_FUNCTION("lz4EncodeInto", lz4_encode_into_js),
      NAPI_EXPORT_FUNCTION("xxph3", xxph3_js),
      NAPI_EXPORT_FUNCTION("blockSeekGE", block_seek_ge_js),
      NAPI_EXPORT_FUNCTION("bloomMayMatch", bloom_may_match_js),
  };
  return napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
}
