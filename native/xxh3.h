/* XXH3-64 with seed 0 and the default secret: see xxh3.c. */
#ifndef SST_INGEST_XXH3_H
#define SST_INGEST_XXH3_H

#include <stddef.h>
#include <stdint.h>

#define XXH3_SECRET_BYTES 192

/* XXH3's 192-byte default secret, shared with XXPH3 (xxph3.c). */
extern const uint8_t kXxh3Secret[XXH3_SECRET_BYTES];

uint64_t xxh3_64(const uint8_t* data, size_t length);

#endif
