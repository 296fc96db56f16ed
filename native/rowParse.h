/* The import's CSV fast path natively: simple records tokenized, encoded and committed to the sort buffer. See rowParse.c. */
#ifndef SST_INGEST_ROW_PARSE_H
#define SST_INGEST_ROW_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Key column types, as KeySpec's type codes (src/ingest/rows/keySpec.ts). */
#define ROW_PARSE_KEY_BYTES 0
#define ROW_PARSE_KEY_INT64 1
#define ROW_PARSE_KEY_UINT64 2

/* Value formats (RowEncoder's, src/ingest/rows/rowEncoder.ts): csv writes a record with no quote, no
 * CR inside and so no field to quote exactly as raw does, and may take twice its bytes in a bound. */
#define ROW_PARSE_VALUE_RAW 0
#define ROW_PARSE_VALUE_CSV 1

/* Fields a record may have on this path; a wider record is left to JavaScript. */
#define ROW_PARSE_MAX_FIELDS 256

/* The input, the row layout and the sort buffer's columns, borrowed for one call. */
typedef struct {
  /* Records are taken from src[pos, end), each starting before stopAt. */
  const uint8_t* src;
  size_t end;
  size_t stopAt;
  int delimiter;
  int quote;   /* -1: none */
  int comment; /* -1: none */
  /* Layout: every record has fieldCount fields; the key is field keyField of type keyType; the value is
   * the raw join of valueFields (valueFieldCount of them) by valueDelimiter, for raw and csv alike
   * (csv: records holding a CR before their line end are left to JavaScript, which quotes it). */
  uint32_t fieldCount;
  uint32_t keyField;
  int keyType;
  const int32_t* valueFields;
  uint32_t valueFieldCount;
  uint8_t valueDelimiter;
  /* RowEncoder.boundBytes(n) = max(n, 8) + fixedBytes + n (csv: + 2n) for a one-column key. */
  uint32_t fixedBytes;
  int valueFormat; /* ROW_PARSE_VALUE_* */
  /* SortBuffer: rows go to arena[used..]; reserve() is checked as SortBuffer.reserve does. */
  uint8_t* arena;
  size_t arenaBytes;
  size_t arenaStart;
  size_t memoryLimitBytes;
  uint32_t bytesPerEntry;
  uint32_t slots;
  uint32_t* offset;
  uint32_t* keyLength;
  uint32_t* valueLength;
  uint32_t* source;
  double* line;
  uint32_t sourceId;
} RowParseArgs;

/* Where a call starts, and where it left off. */
typedef struct {
  size_t pos;
  double line;
  uint32_t count;
  size_t used;
} RowParseState;

/*
 * Takes records from state->pos for as long as each is simple: it starts before stopAt with a
 * byte other than LF, CR and the comment byte, ends with an LF before `end`, holds no quote byte
 * (csv: and no CR but one right before that LF) and at most ROW_PARSE_MAX_FIELDS fields, has fieldCount fields, a key that parses, and fits in
 * the sort buffer. Each is encoded at arena[used] (key, then value) and committed as entry
 * `count` (one line each; a CR before the LF belongs to the line end). Stops at the first record
 * that is not simple, leaving it to the JavaScript path; returns the records taken.
 */
uint32_t row_parse(const RowParseArgs* a, RowParseState* state);

#endif
