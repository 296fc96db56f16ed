/*
 * rowParse: the CSV fast path of the import's parse workers, natively (C11).
 *
 * Why: at 1M trade rows each parse worker spent about 175 ms finding fields (a JavaScript loop
 * over every byte), 135 ms copying each row's value into the sort buffer (one copyWithin per
 * row, whose call costs more than its 100 bytes), 40 ms parsing integer keys and 30 ms
 * committing entries. Here one call does all of it for a whole read window.
 *
 * What it does is exactly what CsvTokenizer's fast path, RowEncoder (raw or csv values, a one-column
 * key) and SortBuffer.reserve/commit do for the same records (src/ingest/csv/csvTokenizer.ts,
 * src/ingest/rows/rowEncoder.ts, keySpec.ts, src/ingest/sort/sortBuffer.ts); anything else —
 * a quote, an empty line, a comment, a field count or key the encoder would refuse, a full
 * buffer — stops the call at that record and JavaScript takes it, with its own errors. The
 * differential tests run both paths over the same inputs and compare every entry.
 *
 * csv values: a field here holds no delimiter (it ends at one), no LF (the record does), no quote
 * (refused); a CR inside a record is field data (only the one before the LF is the line end), so
 * with csv a record holding another CR is refused too. What is left needs no quoting, and csv
 * writes it exactly as raw does; only the bound differs (2 bytes per record byte, as in JavaScript).
 *
 * Integer keys: an optional sign (`-` for int64 only, `+` for both), then 1 or more ASCII
 * digits, at most 21 bytes in all, in range; written as 8 bytes big-endian (int64 with its sign
 * bit flipped, so bytewise order is numeric order).
 */
#include "rowParse.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define LF 0x0a
#define CR 0x0d
#define FIXED_INT_BYTES 8
#define MAX_INT_TEXT_BYTES 21

/* Parses src[s, e) as keySpec's parseIntInto does; writes 8 bytes at out. 0 when refused. */
static int parse_int_key(const uint8_t* src, size_t s, size_t e, int is_signed, uint8_t* out) {
  size_t i = s;
  int negative = 0;
  if (i < e && src[i] == '-') {
    if (!is_signed) return 0;
    negative = 1;
    i++;
  } else if (i < e && src[i] == '+') {
    i++;
  }
  if (i >= e || e - s > MAX_INT_TEXT_BYTES) return 0;
  uint64_t v = 0;
  for (; i < e; i++) {
    unsigned d = (unsigned)src[i] - '0';
    if (d > 9) return 0;
    if (v > (UINT64_MAX - d) / 10) return 0; /* at or past 2^64 */
    v = v * 10 + d;
  }
  if (is_signed) {
    if (negative) {
      if (v > ((uint64_t)1 << 63)) return 0;
      v = ~v + 1; /* two's complement of the magnitude (0 stays 0) */
    } else if (v >= ((uint64_t)1 << 63)) {
      return 0;
    }
    v ^= (uint64_t)1 << 63;
  }
  for (int b = 7; b >= 0; b--) {
    out[b] = (uint8_t)(v & 0xff);
    v >>= 8;
  }
  return 1;
}

/* The raw value: value fields joined by the delimiter, adjacent input fields copied as one span. */
static size_t encode_raw_value(const RowParseArgs* a, const uint8_t* src, const size_t* starts, const size_t* ends,
                               uint8_t* out) {
  size_t pos = 0;
  uint32_t n = a->valueFieldCount;
  uint32_t i = 0;
  while (i < n) {
    if (i > 0) out[pos++] = a->valueDelimiter;
    int32_t f = a->valueFields[i];
    size_t s = starts[f];
    size_t e = ends[f];
    uint32_t j = i + 1;
    while (j < n) {
      int32_t g = a->valueFields[j];
      if (g != a->valueFields[j - 1] + 1 || starts[g] != e + 1) break;
      e = ends[g];
      j++;
    }
    memmove(out + pos, src + s, e - s);
    pos += e - s;
    i = j;
  }
  return pos;
}

/* Records the field ending at `end` (a delimiter there); 0 when that makes ROW_PARSE_MAX_FIELDS fields before the last. */
static inline int end_field(int* fields, size_t* fieldStart, size_t end, size_t* starts, size_t* ends) {
  if (*fields == ROW_PARSE_MAX_FIELDS - 1) return 0;
  starts[*fields] = *fieldStart;
  ends[*fields] = end;
  (*fields)++;
  *fieldStart = end + 1;
  return 1;
}

/*
 * Splits src[pos, lf) into fields; -1 when it holds a quote or more than ROW_PARSE_MAX_FIELDS
 * fields, or with `refuseCr` a CR anywhere but right before lf. With SSE2 (every x86-64) it
 * compares 16 bytes at a time and walks the delimiters' bits: a byte at a time this loop was
 * most of the parse's time (about 650 MB/s on the 2-core VM for trade rows of ~107 bytes and 15
 * fields; see docs/import.md). Same result either way: a quote (or refused CR) anywhere, or one
 * field too many anywhere, refuses the record.
 */
static int split_fields(const RowParseArgs* a, size_t pos, size_t lf, int refuseCr, size_t* starts, size_t* ends) {
  const uint8_t* src = a->src;
  const uint8_t delimiter = (uint8_t)a->delimiter;
  const int quote = a->quote;
  int fields = 0;
  size_t fieldStart = pos;
  size_t j = pos;
#ifdef __SSE2__
  const __m128i delimiters = _mm_set1_epi8((char)delimiter);
  const __m128i quotes = _mm_set1_epi8((char)(quote >= 0 ? quote : delimiter));
  const __m128i crs = _mm_set1_epi8((char)CR);
  for (; j + 16 <= lf; j += 16) {
    const __m128i bytes = _mm_loadu_si128((const __m128i*)(src + j));
    if (quote >= 0 && _mm_movemask_epi8(_mm_cmpeq_epi8(bytes, quotes)) != 0) return -1;
    if (refuseCr) {
      unsigned cr = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, crs));
      /* The only CR allowed is the last byte before lf, alone. */
      if (cr != 0 && ((cr & (cr - 1)) != 0 || j + (size_t)__builtin_ctz(cr) != lf - 1)) return -1;
    }
    unsigned hits = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, delimiters));
    while (hits != 0) {
      if (!end_field(&fields, &fieldStart, j + (size_t)__builtin_ctz(hits), starts, ends)) return -1;
      hits &= hits - 1;
    }
  }
#endif
  for (; j < lf; j++) {
    uint8_t b = src[j];
    if ((int)b == quote) return -1;
    if (refuseCr && b == CR && j != lf - 1) return -1;
    if (b == delimiter && !end_field(&fields, &fieldStart, j, starts, ends)) return -1;
  }
  starts[fields] = fieldStart;
  ends[fields] = lf > fieldStart && src[lf - 1] == CR ? lf - 1 : lf;
  return fields + 1;
}

/* Encodes and commits one split record at state->used; 0 when JavaScript must take it. */
static int commit_record(const RowParseArgs* a, RowParseState* st, size_t recordStart, const size_t* starts,
                         const size_t* ends) {
  size_t recordBytes = ends[a->fieldCount - 1] - recordStart;
  size_t valueBound = a->valueFormat == ROW_PARSE_VALUE_CSV ? 2 * recordBytes : recordBytes;
  size_t bound = (recordBytes > FIXED_INT_BYTES ? recordBytes : FIXED_INT_BYTES) + a->fixedBytes + valueBound;
  size_t held = st->used - a->arenaStart + (size_t)st->count * a->bytesPerEntry;
  if (st->count >= a->slots || st->used + bound > a->arenaBytes || held + bound + a->bytesPerEntry > a->memoryLimitBytes)
    return 0;
  uint8_t* out = a->arena + st->used;
  size_t ks = starts[a->keyField], ke = ends[a->keyField];
  size_t keyBytes;
  if (a->keyType == ROW_PARSE_KEY_BYTES) {
    keyBytes = ke - ks;
    memmove(out, a->src + ks, keyBytes);
  } else {
    if (!parse_int_key(a->src, ks, ke, a->keyType == ROW_PARSE_KEY_INT64, out)) return 0;
    keyBytes = FIXED_INT_BYTES;
  }
  size_t valueBytes = encode_raw_value(a, a->src, starts, ends, out + keyBytes);
  uint32_t e = st->count++;
  a->offset[e] = (uint32_t)st->used;
  a->keyLength[e] = (uint32_t)keyBytes;
  a->valueLength[e] = (uint32_t)valueBytes;
  a->source[e] = a->sourceId;
  a->line[e] = st->line;
  st->used += keyBytes + valueBytes;
  return 1;
}

uint32_t row_parse(const RowParseArgs* a, RowParseState* st) {
  size_t starts[ROW_PARSE_MAX_FIELDS];
  size_t ends[ROW_PARSE_MAX_FIELDS];
  const uint8_t* src = a->src;
  uint32_t taken = 0;
  size_t pos = st->pos;
  while (pos < a->stopAt && pos < a->end) {
    uint8_t first = src[pos];
    if (first == LF || first == CR || (int)first == a->comment) break;
    const uint8_t* lfp = memchr(src + pos, LF, a->end - pos);
    if (lfp == NULL) break;
    size_t lf = (size_t)(lfp - src);
    int fields = split_fields(a, pos, lf, a->valueFormat == ROW_PARSE_VALUE_CSV, starts, ends);
    if (fields < 0 || (uint32_t)fields != a->fieldCount) break;
    if (!commit_record(a, st, pos, starts, ends)) break;
    taken++;
    st->line += 1;
    pos = lf + 1;
  }
  st->pos = pos;
  return taken;
}
