/**
 * The header an SST upload (POST /v1/imports/sst) names its values' encoding with: the JSON of
 * a VALUE-ENCODING record (src/ingest/valueEncodingFile.ts), as `ingest import --server` settled
 * it against the server's database (GET /v1/stats, server.valueEncoding). The server records it
 * before ingesting when its database records none, and refuses the upload (400) when the
 * database records another; an upload without the header (RocksDB's SSTs) is taken as it is.
 */
export const VALUE_ENCODING_HEADER = 'ingest-value-encoding';
