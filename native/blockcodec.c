/*
 * blockcodec: the table reader's block read path as one native call (Node-API, C11).
 *
 * A block-cache miss used to cost four crossings between JavaScript and native code: the read,
 * the checksum, the LZ4 size framing and the decode, each with its own per-call overhead (about
 * 1 µs for the decode alone) on top of the work. readBlock() does all of it in one call
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
 *   adviseHugePages(view) -> boolean  madvise(MADV_HUGEPAGE) for a large fresh buffer
 *   releasePages(view) -> boolean  madvise(MADV_DONTNEED): a large buffer's memory back now
 *   startWriteback(fd, offset, length) -> boolean  start a file range's writeback (writeback.c)
 *   punchHole(fd, offset, length) -> boolean  free a file range's blocks and pages (writeback.c)
 *   threadCpuSeconds() -> number  the calling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID)
 *   sortEntries(...), gatherRun(...)  the import's sort buffer: sorting its entries by key and
 *       gathering them into a run file's chunk (rowSort.c)
 *   mergeContextBytes, mergeInit, mergeSetReader, mergeSetOutput, mergeBlocks  the import's merge
 *       of runs into data blocks (mergeBlocks.c; driven by src/ingest/sort/nativeMerge.ts)
 *   xxph3(data, start, end) -> [lo, hi]  XXPH3-64, the filter's key hash (xxph3.c)
 *
 * Errors are thrown as JavaScript Errors with a `code` the caller maps to its own typed errors
 * (it knows the file name, block kind and offset): SHORT_READ (the file ends early; `missingBytes`
 * says how much), IO (the read failed; the message has strerror), CHECKSUM_MISMATCH (`stored`,
 * `computed`), LZ4_MALFORMED, UNSUPPORTED_COMPRESSION (`compressionType`), INVALID_ARGUMENT.
 *
 * Limits: a block is read into a per-thread scratch buffer when it fits SCRATCH_MAX_BYTES and into
 * a heap buffer freed before returning otherwise, so no call retains more than SCRATCH_MAX_BYTES.
 * The decoded size is checked against the caller's maxDecodedBytes and against the codec's largest
 * possible expansion of the payload (LZ4 255x, Snappy 22x) before any output is allocated.
 */
/* pread() and off_t are POSIX, hidden by -std=c11 unless asked for. */
#define _POSIX_C_SOURCE 200809L
/* madvise() and MADV_HUGEPAGE (adviseHugePages) are outside POSIX. */
#define _DEFAULT_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>

#include "lz4Decode.h"
#include "lz4Encode.h"
#include "rowParse.h"
#include "rowSort.h"
#include "writeback.h"
#include "snappyDecode.h"
#include "xxh3.h"
#include "xxph3.h"
#include "mergeBlocks.h"

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

/* Throws Error(message) with .code = code and, if detailName is not NULL, .detailName = detail. */
static void throw_coded(napi_env env, const char* code, const char* message, const char* detailName, double detail,
                        const char* detail2Name, double detail2) {
  napi_value codeValue, messageValue, error, number;
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &codeValue);
  napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &messageValue);
  napi_create_error(env, codeValue, messageValue, &error);
  if (detailName != NULL) {
    napi_create_double(env, detail, &number);
    napi_set_named_property(env, error, detailName, number);
  }
  if (detail2Name != NULL) {
    napi_create_double(env, detail2, &number);
    napi_set_named_property(env, error, detail2Name, number);
  }
  napi_throw(env, error);
}

static void throw_invalid(napi_env env, const char* message) {
  throw_coded(env, "INVALID_ARGUMENT", message, NULL, 0, NULL, 0);
}

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

static int get_bytes(napi_env env, napi_value value, uint8_t** data, size_t* length);
static int get_index(napi_env env, napi_value value, size_t length, size_t* index);

static napi_value read_block(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6 && argc != 8) {
    throw_invalid(env, "readBlock(fd, position, blockBytes, checksumType, verify, maxDecodedBytes[, dest, destOffset])");
    return NULL;
  }
  int32_t fd;
  int64_t position;
  uint32_t blockBytes, checksumType, maxDecodedBytes;
  bool verify;
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int64(env, argv[1], &position) != napi_ok ||
      napi_get_value_uint32(env, argv[2], &blockBytes) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &checksumType) != napi_ok ||
      napi_get_value_bool(env, argv[4], &verify) != napi_ok ||
      napi_get_value_uint32(env, argv[5], &maxDecodedBytes) != napi_ok) {
    throw_invalid(env, "readBlock: expected (int, int, uint32, uint32, boolean, uint32)");
    return NULL;
  }
  if (fd < 0 || position < 0 || (checksumType != CHECKSUM_NONE && checksumType != CHECKSUM_XXH3)) {
    throw_invalid(env, "readBlock: negative fd or position, or a checksum type other than none/xxh3");
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
  uint8_t* buffer;
  uint8_t* owned = NULL;
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
    buffer = scratch;
  } else {
    owned = (uint8_t*)malloc(readBytes);
    if (owned == NULL) {
      napi_throw_error(env, "IO", "out of memory for a large block");
      return NULL;
    }
    buffer = owned;
  }

  napi_value result = NULL;
  if (read_fully(env, fd, buffer, readBytes, position)) {
    unsigned type = buffer[blockBytes];
    uint32_t stored;
    memcpy(&stored, buffer + blockBytes + 1, sizeof stored);
    uint32_t computed = 0;
    if (verify && checksumType == CHECKSUM_XXH3) computed = xxh3_low32(buffer, blockBytes) ^ (type * XXH3_TYPE_MULTIPLIER);
    if (verify && checksumType != CHECKSUM_NONE && computed != stored) {
      char message[96];
      snprintf(message, sizeof message, "checksum mismatch: stored 0x%x, computed 0x%x", stored, computed);
      throw_coded(env, "CHECKSUM_MISMATCH", message, "stored", (double)stored, "computed", (double)computed);
    } else {
      result = decode_contents(env, buffer, blockBytes, type, maxDecodedBytes, &output);
    }
  }
  free(owned);
  return result;
}

/* Gets a Buffer/Uint8Array argument's bytes; on failure throws and returns 0. */
static int get_bytes(napi_env env, napi_value value, uint8_t** data, size_t* length) {
  bool isTyped = false;
  napi_is_typedarray(env, value, &isTyped);
  if (!isTyped) {
    throw_invalid(env, "expected a Buffer or Uint8Array");
    return 0;
  }
  napi_typedarray_type type;
  napi_value arrayBuffer;
  size_t byteOffset;
  void* bytes;
  if (napi_get_typedarray_info(env, value, &type, length, &bytes, &arrayBuffer, &byteOffset) != napi_ok ||
      type != napi_uint8_array) {
    throw_invalid(env, "expected a Buffer or Uint8Array");
    return 0;
  }
  *data = (uint8_t*)bytes;
  return 1;
}

/* Reads argv[i] as an index into a buffer of `length` bytes; on failure throws and returns 0. */
static int get_index(napi_env env, napi_value value, size_t length, size_t* index) {
  uint32_t v;
  if (napi_get_value_uint32(env, value, &v) != napi_ok || v > length) {
    throw_invalid(env, "index out of range");
    return 0;
  }
  *index = v;
  return 1;
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

/* The memory of a typed array argument (any element type); on failure throws and returns 0. */
static int typed_extent(napi_env env, napi_value value, const char* usage, uintptr_t* start, size_t* byteLength) {
  bool isTyped = false;
  if (napi_is_typedarray(env, value, &isTyped) != napi_ok || !isTyped) {
    throw_invalid(env, usage);
    return 0;
  }
  napi_typedarray_type type;
  size_t elements, byteOffset;
  void* bytes;
  napi_value arrayBuffer;
  napi_get_typedarray_info(env, value, &type, &elements, &bytes, &arrayBuffer, &byteOffset);
  size_t elementBytes = 1;
  switch (type) {
    case napi_int16_array: case napi_uint16_array: elementBytes = 2; break;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: elementBytes = 4; break;
    case napi_float64_array: case napi_bigint64_array: case napi_biguint64_array: elementBytes = 8; break;
    default: break;
  }
  *start = (uintptr_t)bytes;
  *byteLength = elements * elementBytes;
  return 1;
}

/* The [start, end) of the whole `alignBytes`-aligned units inside [bytes, bytes + byteLength); start >= end: none. */
static void aligned_interior(uintptr_t bytes, size_t byteLength, uintptr_t alignBytes, uintptr_t* start, uintptr_t* end) {
  *start = (bytes + alignBytes - 1) & ~(alignBytes - 1);
  *end = (bytes + byteLength) & ~(alignBytes - 1);
}

/*
 * madvise(advice) over the whole `alignBytes` units inside the one typed-array argument's memory
 * (advice only where the platform has it: `available`); the JavaScript result is whether it took.
 */
static napi_value madvise_interior_js(napi_env env, napi_callback_info info, const char* usage, uintptr_t alignBytes, int advice,
                                      bool available) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uintptr_t bytes;
  size_t byteLength;
  if (argc != 1 || !typed_extent(env, argv[0], usage, &bytes, &byteLength)) return NULL;
  uintptr_t start, end;
  aligned_interior(bytes, byteLength, alignBytes, &start, &end);
  bool done = available && end > start && madvise((void*)start, end - start, advice) == 0;
  napi_value result;
  napi_get_boolean(env, done, &result);
  return result;
}

/*
 * adviseHugePages(view) -> boolean: madvise(MADV_HUGEPAGE) over the 2 MiB-aligned interior of
 * the view's memory, before it is first touched. Why: a fresh large buffer is faulted in one
 * 4 KiB page at a time, and on this product's VMs a fault costs microseconds of system time;
 * with transparent huge pages in "madvise" mode (the common default) a region so advised is
 * faulted 2 MiB at a time. False when the platform has no MADV_HUGEPAGE or the view is too small.
 * Advice only: the memory's contents and lifetime are unchanged.
 */
static napi_value advise_huge_pages_js(napi_env env, napi_callback_info info) {
#ifdef MADV_HUGEPAGE
  return madvise_interior_js(env, info, "adviseHugePages(typedArray)", (uintptr_t)2 << 20, MADV_HUGEPAGE, true);
#else
  return madvise_interior_js(env, info, "adviseHugePages(typedArray)", (uintptr_t)2 << 20, 0, false);
#endif
}

/* Gets a typed array argument of `type` (its data and element count); on failure throws and returns 0. */
static int get_typed(napi_env env, napi_value value, napi_typedarray_type type, void** data, size_t* elements) {
  bool isTyped = false;
  napi_typedarray_type actual;
  napi_value arrayBuffer;
  size_t byteOffset;
  if (napi_is_typedarray(env, value, &isTyped) != napi_ok || !isTyped ||
      napi_get_typedarray_info(env, value, &actual, elements, data, &arrayBuffer, &byteOffset) != napi_ok || actual != type) {
    throw_invalid(env, "a column of the wrong type");
    return 0;
  }
  return 1;
}

/* Gets a column of at least `minimum` elements of `type`; on failure throws and returns 0. */
static int get_column(napi_env env, napi_value value, napi_typedarray_type type, size_t minimum, void** data) {
  size_t elements;
  if (!get_typed(env, value, type, data, &elements)) return 0;
  if (elements < minimum) {
    throw_invalid(env, "a column shorter than the entry count");
    return 0;
  }
  return 1;
}

static int get_u32_column(napi_env env, napi_value value, size_t minimum, uint32_t** data) {
  return get_column(env, value, napi_uint32_array, minimum, (void**)data);
}

static int get_u8_column(napi_env env, napi_value value, size_t minimum, uint8_t** data) {
  return get_column(env, value, napi_uint8_array, minimum, (void**)data);
}

/*
 * sortEntries(arena, offset, keyLength, count, order, high, low, lengthClass, orderScratch,
 * highScratch, lowScratch, classScratch) -> undefined: SortBuffer.sort() (rowSort.c). Every
 * column holds at least `count` slots and every key lies inside the arena, or INVALID_ARGUMENT
 * is thrown before anything is written.
 */
static napi_value sort_entries_js(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t count;
  if (argc != 12 || napi_get_value_uint32(env, argv[3], &count) != napi_ok) {
    throw_invalid(env, "sortEntries(arena, offset, keyLength, count, order, high, low, lengthClass, orderScratch, highScratch, lowScratch, classScratch)");
    return NULL;
  }
  uint8_t* arena;
  size_t arenaBytes;
  RowSortColumns c;
  uint32_t *offset, *keyLength;
  c.count = count;
  if (!get_bytes(env, argv[0], &arena, &arenaBytes) || !get_u32_column(env, argv[1], count, &offset) ||
      !get_u32_column(env, argv[2], count, &keyLength) || !get_u32_column(env, argv[4], count, &c.order) ||
      !get_u32_column(env, argv[5], count, &c.high) || !get_u32_column(env, argv[6], count, &c.low) ||
      !get_u8_column(env, argv[7], count, &c.lengthClass) || !get_u32_column(env, argv[8], count, &c.orderScratch) ||
      !get_u32_column(env, argv[9], count, &c.highScratch) || !get_u32_column(env, argv[10], count, &c.lowScratch) ||
      !get_u8_column(env, argv[11], count, &c.classScratch))
    return NULL;
  for (uint32_t e = 0; e < count; e++) {
    if ((size_t)offset[e] + keyLength[e] > arenaBytes) {
      throw_invalid(env, "sortEntries: a key outside the arena");
      return NULL;
    }
  }
  c.arena = arena;
  c.offset = offset;
  c.keyLength = keyLength;
  row_sort(&c);
  return NULL;
}

/*
 * gatherRun(arena, order, offset, keyLength, valueLength, source, line, to, out, outEnd,
 * stopAtFill, state) -> undefined: row_gather (rowSort.c) from entry state[0] at out[state[1]..];
 * leaves the next entry's index in state[0] and the fill in state[1]. An entry outside the
 * columns or the arena is INVALID_ARGUMENT (what was gathered before it is in `state`).
 */
static napi_value gather_run_js(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t to, outEnd, stopAtFill;
  if (argc != 12 || napi_get_value_uint32(env, argv[7], &to) != napi_ok ||
      napi_get_value_uint32(env, argv[9], &outEnd) != napi_ok || napi_get_value_uint32(env, argv[10], &stopAtFill) != napi_ok) {
    throw_invalid(env, "gatherRun(arena, order, offset, keyLength, valueLength, source, line, to, out, outEnd, stopAtFill, state)");
    return NULL;
  }
  RowGatherColumns c;
  uint8_t *arena, *out;
  size_t outBytes, slots;
  uint32_t *order, *offset, *keyLength, *valueLength, *source, *state;
  double* line;
  if (!get_bytes(env, argv[0], &arena, &c.arenaBytes) || !get_u32_column(env, argv[1], to, &order) ||
      !get_typed(env, argv[6], napi_float64_array, (void**)&line, &slots) || !get_bytes(env, argv[8], &out, &outBytes) ||
      !get_u32_column(env, argv[11], 2, &state))
    return NULL;
  napi_value sized[] = {argv[2], argv[3], argv[4], argv[5]};
  uint32_t** columns[] = {&offset, &keyLength, &valueLength, &source};
  for (int i = 0; i < 4; i++) {
    size_t elements;
    if (!get_typed(env, sized[i], napi_uint32_array, (void**)columns[i], &elements)) return NULL;
    if (elements < slots) slots = elements;
  }
  if (outEnd > outBytes || state[1] > outEnd || state[0] > to || slots > UINT32_MAX) {
    throw_invalid(env, "gatherRun: outEnd, the fill or the first entry out of range");
    return NULL;
  }
  c.arena = arena;
  c.order = order;
  c.offset = offset;
  c.keyLength = keyLength;
  c.valueLength = valueLength;
  c.source = source;
  c.line = line;
  c.columnSlots = (uint32_t)slots;
  size_t fill = state[1];
  int bad = 0;
  state[0] = row_gather(&c, state[0], to, out, &fill, outEnd, stopAtFill, &bad);
  state[1] = (uint32_t)fill;
  if (bad) throw_invalid(env, "gatherRun: an entry outside the columns or the arena");
  return NULL;
}

/* parseRows' layout argument: Int32Array slots. */
enum {
  LAYOUT_DELIMITER,
  LAYOUT_QUOTE,
  LAYOUT_COMMENT,
  LAYOUT_FIELD_COUNT,
  LAYOUT_KEY_FIELD,
  LAYOUT_KEY_TYPE,
  LAYOUT_VALUE_DELIMITER,
  LAYOUT_FIXED_BYTES,
  LAYOUT_SOURCE,
  LAYOUT_SLOTS
};

/* Checks parseRows' layout and value fields into `a`; 0 (nothing thrown yet) when out of range. */
static int row_parse_layout(RowParseArgs* a, const int32_t* layout, const int32_t* valueFields, size_t valueFieldCount) {
  for (int i = LAYOUT_DELIMITER; i <= LAYOUT_COMMENT; i++)
    if (layout[i] < (i == LAYOUT_DELIMITER ? 0 : -1) || layout[i] > 255) return 0;
  if (layout[LAYOUT_FIELD_COUNT] < 1 || layout[LAYOUT_FIELD_COUNT] > ROW_PARSE_MAX_FIELDS || layout[LAYOUT_KEY_FIELD] < 0 ||
      layout[LAYOUT_KEY_FIELD] >= layout[LAYOUT_FIELD_COUNT] || layout[LAYOUT_KEY_TYPE] < ROW_PARSE_KEY_BYTES ||
      layout[LAYOUT_KEY_TYPE] > ROW_PARSE_KEY_UINT64 || layout[LAYOUT_VALUE_DELIMITER] < 0 || layout[LAYOUT_VALUE_DELIMITER] > 255 ||
      layout[LAYOUT_FIXED_BYTES] < 0 || layout[LAYOUT_SOURCE] < 0)
    return 0;
  for (size_t i = 0; i < valueFieldCount; i++)
    if (valueFields[i] < 0 || valueFields[i] >= layout[LAYOUT_FIELD_COUNT]) return 0;
  a->delimiter = layout[LAYOUT_DELIMITER];
  a->quote = layout[LAYOUT_QUOTE];
  a->comment = layout[LAYOUT_COMMENT];
  a->fieldCount = (uint32_t)layout[LAYOUT_FIELD_COUNT];
  a->keyField = (uint32_t)layout[LAYOUT_KEY_FIELD];
  a->keyType = layout[LAYOUT_KEY_TYPE];
  a->valueFields = valueFields;
  a->valueFieldCount = (uint32_t)valueFieldCount;
  a->valueDelimiter = (uint8_t)layout[LAYOUT_VALUE_DELIMITER];
  a->fixedBytes = (uint32_t)layout[LAYOUT_FIXED_BYTES];
  a->sourceId = (uint32_t)layout[LAYOUT_SOURCE];
  return 1;
}

/* Gets parseRows' five sort-buffer columns; a->slots is the shortest one's length. */
static int row_parse_columns(napi_env env, napi_value* argv, RowParseArgs* a) {
  size_t slots;
  if (!get_typed(env, argv[4], napi_float64_array, (void**)&a->line, &slots)) return 0;
  napi_value sized[] = {argv[0], argv[1], argv[2], argv[3]};
  uint32_t** columns[] = {&a->offset, &a->keyLength, &a->valueLength, &a->source};
  for (int i = 0; i < 4; i++) {
    size_t elements;
    if (!get_typed(env, sized[i], napi_uint32_array, (void**)columns[i], &elements)) return 0;
    if (elements < slots) slots = elements;
  }
  a->slots = slots > UINT32_MAX ? UINT32_MAX : (uint32_t)slots;
  return 1;
}

/*
 * parseRows(src, end, stopAt, layout, valueFields, arena, limits, offset, keyLength, valueLength,
 * source, line, state) -> records taken: row_parse (rowParse.c). layout is an Int32Array
 * [delimiter, quote, comment, fieldCount, keyField, keyType, valueDelimiter, fixedBytes, source]
 * (quote and comment -1 for none); limits a Float64Array [arenaStart, memoryLimitBytes,
 * bytesPerEntry]; state a Float64Array [pos, line, count, used], read and left where the
 * call stopped. Arguments out of range are INVALID_ARGUMENT before anything is written.
 */
static napi_value parse_rows_js(napi_env env, napi_callback_info info) {
  size_t argc = 13;
  napi_value argv[13];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t end, stopAt;
  if (argc != 13 || napi_get_value_uint32(env, argv[1], &end) != napi_ok || napi_get_value_uint32(env, argv[2], &stopAt) != napi_ok) {
    throw_invalid(env, "parseRows(src, end, stopAt, layout, valueFields, arena, limits, offset, keyLength, valueLength, source, line, state)");
    return NULL;
  }
  RowParseArgs a;
  uint8_t* src;
  size_t srcBytes, layoutSlots, valueFieldCount, limitSlots, stateSlots;
  int32_t *layout, *valueFields;
  double *limits, *state;
  if (!get_bytes(env, argv[0], &src, &srcBytes) || !get_typed(env, argv[3], napi_int32_array, (void**)&layout, &layoutSlots) ||
      !get_typed(env, argv[4], napi_int32_array, (void**)&valueFields, &valueFieldCount) ||
      !get_bytes(env, argv[5], &a.arena, &a.arenaBytes) || !get_typed(env, argv[6], napi_float64_array, (void**)&limits, &limitSlots) ||
      !row_parse_columns(env, argv + 7, &a) || !get_typed(env, argv[12], napi_float64_array, (void**)&state, &stateSlots))
    return NULL;
  if (layoutSlots != LAYOUT_SLOTS || limitSlots != 3 || stateSlots != 4 || !row_parse_layout(&a, layout, valueFields, valueFieldCount)) {
    throw_invalid(env, "parseRows: a layout, limit or state out of range");
    return NULL;
  }
  RowParseState st = {(size_t)state[0], state[1], (uint32_t)state[2], (size_t)state[3]};
  if (end > srcBytes || state[0] < 0 || st.pos > end || limits[0] < 0 || limits[0] > a.arenaBytes || limits[1] < 0 ||
      limits[2] < 1 || limits[2] > UINT32_MAX ||
      state[3] < limits[0] || st.used > a.arenaBytes || state[2] < 0 || st.count > a.slots) {
    throw_invalid(env, "parseRows: a position, limit or count out of range");
    return NULL;
  }
  a.src = src;
  a.end = end;
  a.stopAt = stopAt;
  a.arenaStart = (size_t)limits[0];
  a.memoryLimitBytes = (size_t)limits[1];
  a.bytesPerEntry = (uint32_t)limits[2];
  uint32_t taken = row_parse(&a, &st);
  state[0] = (double)st.pos;
  state[1] = st.line;
  state[2] = st.count;
  state[3] = (double)st.used;
  napi_value result;
  napi_create_uint32(env, taken, &result);
  return result;
}

/*
 * releasePages(view) -> boolean: madvise(MADV_DONTNEED) over the whole pages inside the view's
 * memory, which the caller will not read again: their memory goes back to the kernel now
 * instead of whenever the garbage collector frees the buffer (a parse worker's sort buffer,
 * before the worker goes on to merge). The view stays valid; the released pages read as zeros.
 */
static napi_value release_pages_js(napi_env env, napi_callback_info info) {
  return madvise_interior_js(env, info, "releasePages(typedArray)", (uintptr_t)sysconf(_SC_PAGESIZE), MADV_DONTNEED, true);
}

/*
 * startWriteback(fd, offset, length) -> boolean: sync_file_range(SYNC_FILE_RANGE_WRITE) over
 * the range (writeback.c); false where the kernel refused or the platform has none. A hint only.
 */
/* (fd, offset, length) -> boolean calls on a file range: startWriteback and punchHole. */
static napi_value file_range_call(napi_env env, napi_callback_info info, const char* usage, int (*call)(int, int64_t, int64_t)) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd;
  int64_t offset, length;
  if (argc != 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int64(env, argv[1], &offset) != napi_ok ||
      napi_get_value_int64(env, argv[2], &length) != napi_ok || fd < 0 || offset < 0 || length < 0) {
    throw_invalid(env, usage);
    return NULL;
  }
  napi_value result;
  napi_get_boolean(env, call(fd, offset, length) != 0, &result);
  return result;
}

static napi_value start_writeback_js(napi_env env, napi_callback_info info) {
  return file_range_call(env, info, "startWriteback(fd, offset, length)", start_writeback);
}

/* punchHole(fd, offset, length) -> boolean: punch_hole (writeback.c). */
static napi_value punch_hole_js(napi_env env, napi_callback_info info) {
  return file_range_call(env, info, "punchHole(fd, offset, length)", punch_hole);
}

/*
 * threadCpuSeconds() -> number: CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in
 * seconds, or -1 where the clock is unavailable. process.cpuUsage() counts every thread of the
 * process, so V8's background compiler and GC helpers, working for whatever ran before, are
 * charged to the code being measured; a thread's own clock is not.
 */
static napi_value thread_cpu_seconds_js(napi_env env, napi_callback_info info) {
  struct timespec ts;
  double seconds = -1;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) seconds = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  napi_value result;
  napi_create_double(env, seconds, &result);
  return result;
}

/* The merge context argument: an 8-byte-aligned Uint8Array holding a checked MergeState. */
static MergeState* get_merge_context(napi_env env, napi_value value) {
  uint8_t* data;
  size_t bytes;
  if (!get_typed(env, value, napi_uint8_array, (void**)&data, &bytes)) return NULL;
  MergeState* s = (MergeState*)data;
  if (((uintptr_t)data & 7) != 0 || !merge_context_ok(s, bytes)) {
    throw_invalid(env, "not a merge context (mergeContextBytes / mergeInit)");
    return NULL;
  }
  return s;
}

/* mergeContextBytes(k) -> number: the context size for k runs. */
static napi_value merge_context_bytes_js(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  uint32_t k;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 1 || napi_get_value_uint32(env, argv[0], &k) != napi_ok || k > (1u << 20)) {
    throw_invalid(env, "mergeContextBytes(runs): runs in [0, 2^20]");
    return NULL;
  }
  napi_value result;
  napi_create_double(env, (double)merge_context_bytes(k), &result);
  return result;
}

/*
 * mergeInit(ctx, runs, blockSizeBytes, deviationLimitBytes, restartInterval, hashKeys,
 * targetFileSizeBytes, low, high) -> undefined. low / high are Uint8Arrays or null; they, like
 * every buffer given later, must stay alive (the driver holds them) while ctx is in use.
 */
static napi_value merge_init_js(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t k, blockSize, deviation, restartInterval;
  bool hashKeys;
  double target;
  uint8_t* data;
  size_t bytes;
  if (argc != 9 || napi_get_value_uint32(env, argv[1], &k) != napi_ok || napi_get_value_uint32(env, argv[2], &blockSize) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &deviation) != napi_ok || napi_get_value_uint32(env, argv[4], &restartInterval) != napi_ok ||
      napi_get_value_bool(env, argv[5], &hashKeys) != napi_ok || napi_get_value_double(env, argv[6], &target) != napi_ok ||
      restartInterval == 0 || blockSize == 0) {
    throw_invalid(env, "mergeInit(ctx, runs, blockSizeBytes, deviationLimitBytes, restartInterval, hashKeys, targetFileSizeBytes, low, high)");
    return NULL;
  }
  if (!get_typed(env, argv[0], napi_uint8_array, (void**)&data, &bytes)) return NULL;
  if (((uintptr_t)data & 7) != 0 || bytes < merge_context_bytes(k)) {
    throw_invalid(env, "mergeInit: the context is unaligned or smaller than mergeContextBytes(runs)");
    return NULL;
  }
  MergeState* s = (MergeState*)data;
  merge_context_init(s, k);
  s->blockSizeBytes = blockSize;
  s->deviationLimitBytes = deviation;
  s->restartInterval = restartInterval;
  s->hashKeys = hashKeys;
  s->targetFileSizeBytes = target;
  napi_valuetype type;
  for (int b = 0; b < 2; b++) {
    napi_typeof(env, argv[7 + b], &type);
    if (type == napi_null) continue;
    uint8_t* key;
    size_t keyBytes;
    if (!get_bytes(env, argv[7 + b], &key, &keyBytes)) return NULL;
    if (b == 0) {
      s->low = key;
      s->lowBytes = (uint32_t)keyBytes;
      s->hasLow = 1;
    } else {
      s->high = key;
      s->highBytes = (uint32_t)keyBytes;
      s->hasHigh = 1;
    }
  }
  return NULL;
}

/* mergeSetReader(ctx, i, buf, pos, limit, eof) -> undefined: run i's read buffer and its valid bytes [pos, limit). */
static napi_value merge_set_reader_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t i, pos, limit;
  bool eof;
  uint8_t* buf;
  size_t bytes;
  if (argc != 6 || napi_get_value_uint32(env, argv[1], &i) != napi_ok || napi_get_value_uint32(env, argv[3], &pos) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &limit) != napi_ok || napi_get_value_bool(env, argv[5], &eof) != napi_ok) {
    throw_invalid(env, "mergeSetReader(ctx, i, buf, pos, limit, eof)");
    return NULL;
  }
  MergeState* s = get_merge_context(env, argv[0]);
  if (s == NULL || !get_bytes(env, argv[2], &buf, &bytes)) return NULL;
  if (i >= s->k || pos > limit || limit > bytes) {
    throw_invalid(env, "mergeSetReader: reader index or [pos, limit) out of range");
    return NULL;
  }
  MergeReader* r = merge_readers(s) + i;
  r->buf = buf;
  r->pos = pos;
  r->limit = limit;
  r->eof = eof;
  return NULL;
}

/*
 * mergeSetOutput(ctx, block, restarts, hashLo, hashHi, keys) -> undefined: where blocks, restart
 * offsets, key hashes and the three internal-key slots (keys: 3 equal slots) go. The entry
 * capacity is the shortest of restarts - 1, hashLo and hashHi. Contents already written (an open
 * block) must have been copied over by the caller.
 */
static napi_value merge_set_output_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6) {
    throw_invalid(env, "mergeSetOutput(ctx, block, restarts, hashLo, hashHi, keys)");
    return NULL;
  }
  MergeState* s = get_merge_context(env, argv[0]);
  uint8_t *block, *keys;
  size_t blockBytes, keysBytes, restarts, lo, hi;
  uint32_t *restartData, *loData, *hiData;
  if (s == NULL || !get_bytes(env, argv[1], &block, &blockBytes) ||
      !get_typed(env, argv[2], napi_uint32_array, (void**)&restartData, &restarts) ||
      !get_typed(env, argv[3], napi_uint32_array, (void**)&loData, &lo) || !get_typed(env, argv[4], napi_uint32_array, (void**)&hiData, &hi) ||
      !get_bytes(env, argv[5], &keys, &keysBytes))
    return NULL;
  size_t entries = restarts > 0 ? restarts - 1 : 0;
  if (lo < entries) entries = lo;
  if (hi < entries) entries = hi;
  size_t slot = keysBytes / 3;
  if (entries < 1 || blockBytes > UINT32_MAX || slot > UINT32_MAX || entries > UINT32_MAX || slot < 8 ||
      (size_t)s->entriesBytes + 4 * ((size_t)s->restartCount + 1) > blockBytes || s->blockEntries > entries ||
      (size_t)s->lastKeyBytes > slot || (size_t)s->firstKeyBytes > slot) {
    throw_invalid(env, "mergeSetOutput: an output smaller than what it already holds, or empty");
    return NULL;
  }
  s->block = block;
  s->blockCapacity = (uint32_t)blockBytes;
  s->restarts = restartData;
  s->hashLo = loData;
  s->hashHi = hiData;
  s->entryCapacity = (uint32_t)entries;
  s->keys = keys;
  s->keySlotBytes = (uint32_t)slot;
  return NULL;
}

/* mergeBlocks(ctx, io) -> code: merge_blocks (mergeBlocks.c); io is a Float64Array of MIO_SLOTS. */
static napi_value merge_blocks_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  double* io;
  size_t slots;
  if (argc != 2) {
    throw_invalid(env, "mergeBlocks(ctx, io)");
    return NULL;
  }
  MergeState* s = get_merge_context(env, argv[0]);
  if (s == NULL || !get_typed(env, argv[1], napi_float64_array, (void**)&io, &slots)) return NULL;
  if (slots < MIO_SLOTS || s->block == NULL) {
    throw_invalid(env, "mergeBlocks: io too short, or no output set");
    return NULL;
  }
  /* Every reader is lent a buffer before the first call; later calls only replace them. */
  MergeReader* rs = merge_readers(s);
  for (uint32_t i = 0; !s->started && i < s->k; i++) {
    if (rs[i].buf == NULL) {
      throw_invalid(env, "mergeBlocks: a reader without a buffer");
      return NULL;
    }
  }
  napi_value result;
  napi_create_int32(env, merge_blocks(s, io), &result);
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

NAPI_MODULE_INIT() {
  napi_property_descriptor properties[] = {
      {"readBlock", NULL, read_block, NULL, NULL, NULL, napi_default, NULL},
      {"xxh3Low32", NULL, xxh3_low32_js, NULL, NULL, NULL, napi_default, NULL},
      {"lz4DecodeInto", NULL, lz4_decode_into_js, NULL, NULL, NULL, napi_default, NULL},
      {"snappyDecodeInto", NULL, snappy_decode_into_js, NULL, NULL, NULL, napi_default, NULL},
      {"lz4EncodeInto", NULL, lz4_encode_into_js, NULL, NULL, NULL, napi_default, NULL},
      {"adviseHugePages", NULL, advise_huge_pages_js, NULL, NULL, NULL, napi_default, NULL},
      {"sortEntries", NULL, sort_entries_js, NULL, NULL, NULL, napi_default, NULL},
      {"gatherRun", NULL, gather_run_js, NULL, NULL, NULL, napi_default, NULL},
      {"parseRows", NULL, parse_rows_js, NULL, NULL, NULL, napi_default, NULL},
      {"releasePages", NULL, release_pages_js, NULL, NULL, NULL, napi_default, NULL},
      {"startWriteback", NULL, start_writeback_js, NULL, NULL, NULL, napi_default, NULL},
      {"punchHole", NULL, punch_hole_js, NULL, NULL, NULL, napi_default, NULL},
      {"threadCpuSeconds", NULL, thread_cpu_seconds_js, NULL, NULL, NULL, napi_default, NULL},
      {"mergeContextBytes", NULL, merge_context_bytes_js, NULL, NULL, NULL, napi_default, NULL},
      {"mergeInit", NULL, merge_init_js, NULL, NULL, NULL, napi_default, NULL},
      {"mergeSetReader", NULL, merge_set_reader_js, NULL, NULL, NULL, napi_default, NULL},
      {"mergeSetOutput", NULL, merge_set_output_js, NULL, NULL, NULL, napi_default, NULL},
      {"mergeBlocks", NULL, merge_blocks_js, NULL, NULL, NULL, napi_default, NULL},
      {"xxph3", NULL, xxph3_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
  return exports;
}
