/* XXH3-64 with seed 0 and the default secret: see xxh3.c. */
#ifndef SST_INGEST_XXH3_H
#define SST_INGEST_XXH3_H

#include <stddef.h>
#include <stdint.h>

uint64_t xxh3_64(const uint8_t* data, size_t length);

#endif
