/*
 * napiHelpers: argument checks and coded errors shared by the three layers' Node-API glue
 * (C11; declared in napiHelpers.h).
 *
 * Errors: every error the addon throws is a JavaScript Error with a string `code` (and, for some
 * codes, numeric details), created in the calling context, so that the TypeScript faces can tell
 * them apart without `instanceof` (src/sstable/nativeBlockCodec.ts, isNativeCodecError). The
 * codes are SHORT_READ, IO, CHECKSUM_MISMATCH, LZ4_MALFORMED, SNAPPY_MALFORMED,
 * UNSUPPORTED_COMPRESSION (sstableExports.c) and INVALID_ARGUMENT (all layers).
 */
#include "napiHelpers.h"

void throw_coded(napi_env env, const char* code, const char* message, const char* detailName, double detail,
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

void throw_invalid(napi_env env, const char* message) { throw_coded(env, "INVALID_ARGUMENT", message, NULL, 0, NULL, 0); }

int get_bytes(napi_env env, napi_value value, uint8_t** data, size_t* length) {
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

int get_index(napi_env env, napi_value value, size_t length, size_t* index) {
  uint32_t v;
  if (napi_get_value_uint32(env, value, &v) != napi_ok || v > length) {
    throw_invalid(env, "index out of range");
    return 0;
  }
  *index = v;
  return 1;
}

int get_typed(napi_env env, napi_value value, napi_typedarray_type type, void** data, size_t* elements) {
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
