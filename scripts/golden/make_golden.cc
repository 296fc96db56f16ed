// make_golden: writes the project's RocksDB-made golden SST fixtures.
//
// Usage: make_golden OUTDIR SCRATCHDIR
//
// For every fixture it writes OUTDIR/NAME.sst (made by RocksDB 7.8 itself:
// SstFileWriter, a DB flush, or a DB's copy of an ingested file) and
// OUTDIR/NAME.json describing exactly what the file holds, so tests can check
// our reader against RocksDB's bytes and rebuild SstFileWriter files with our
// writer byte for byte:
//
//   {
//     "file": "NAME.sst", "generator": "...", "fileSizeBytes": N,
//     "byteIdentityCandidate": true|false,    // SstFileWriter, uncompressed
//     "options": { formatVersion, checksum, compression, bloomBitsPerKey,
//                  blockSizeBytes, blockRestartInterval,
//                  indexBlockRestartInterval },
//     "entries": [[userKeyHex, seq, type, valueHex], ...],   // file order
//     "rangeTombstones": [{startHex, endHex, seq}, ...],     // stored order
//     "globalSeqno": N,                        // seqno readers must apply
//     "properties": { "numeric": {...}, "string": {...} }
//   }
//
// Entries are the operations we handed RocksDB: seq 0 for SstFileWriter;
// for the DB-flush file the seqnos the DB assigned, cross-checked against
// GetAllKeyVersions and the file's entry count. Every file is then re-opened
// with SstFileReader, its block checksums verified and its visible keys
// counted, so a fixture that RocksDB cannot read never gets written.
//
// Determinism: all bytes are reproducible for a given librocksdb/liblz4
// build except the random session id each SstFileWriter stamps (recorded in
// the JSON) and, for the DB-flush file, the DB id and wall-clock times.
// db_host_id is set to "" so no host name is embedded.

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/utilities/debug.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using ROCKSDB_NAMESPACE::BlockBasedTableOptions;
using ROCKSDB_NAMESPACE::ChecksumType;
using ROCKSDB_NAMESPACE::CompressionType;
using ROCKSDB_NAMESPACE::DB;
using ROCKSDB_NAMESPACE::Options;
using ROCKSDB_NAMESPACE::Slice;
using ROCKSDB_NAMESPACE::Status;
using ROCKSDB_NAMESPACE::TableProperties;

namespace {

// ---------------------------------------------------------------- output

std::string ToHex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

// JSON string literal; non-ASCII bytes become \u00XX (property strings here
// are ASCII, keys and values always go through ToHex).
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c > 0x7e) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

[[noreturn]] void Fail(const std::string& what, const Status& s) {
  fprintf(stderr, "make_golden: %s: %s\n", what.c_str(), s.ToString().c_str());
  exit(1);
}

void Check(const std::string& what, const Status& s) {
  if (!s.ok()) Fail(what, s);
}

// ---------------------------------------------------------------- content

// Value types as stored in internal keys (RocksDB's ValueType).
constexpr int kTypeDeletion = 0;
constexpr int kTypeValue = 1;
constexpr int kTypeMerge = 2;
constexpr int kTypeSingleDeletion = 7;

struct Entry {
  std::string user_key;
  uint64_t seq;
  int type;
  std::string value;
};

struct Tombstone {
  std::string start;
  std::string end;
  uint64_t seq;
};

struct Content {
  std::vector<Entry> entries;        // strictly increasing user keys
  std::vector<Tombstone> tombstones;  // in start-key order
};

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

// A fixed mixed key set: the empty key, binary keys made of 0x00 and 0xFF
// bytes, long keys (one long enough for the long-input paths of the filter
// hashes), a run of keys sharing a 200-byte prefix, counters with Deletes,
// Merges and empty values, and values holding 0x00 bytes. Sorted bytewise.
Content MixedContent() {
  std::vector<Entry> e;
  auto put = [&](const std::string& k, const std::string& v) { e.push_back({k, 0, kTypeValue, v}); };
  put("", "value-of-the-empty-key");
  put(Bytes({0x00}), "one-zero-byte-key");
  e.push_back({Bytes({0x00, 0x00}), 0, kTypeDeletion, ""});
  put(Bytes({0x00, 0xff}), Bytes({0xff, 0x00, 0xff}));
  put("a" + std::string(299, 'L'), "300-byte key");
  put("b" + std::string(1099, 'H'), "1100-byte key");
  for (int i = 0; i < 40; i++) {
    char k[16];
    snprintf(k, sizeof k, "k%04d", i);
    if (i % 11 == 3) {
      e.push_back({k, 0, kTypeDeletion, ""});
    } else if (i % 13 == 5) {
      e.push_back({k, 0, kTypeMerge, "operand-" + std::to_string(i)});
    } else if (i % 7 == 6) {
      put(k, "");  // empty value
    } else {
      std::string v = "value-" + std::to_string(i) + "-";
      for (int r = 0; r < i % 4; r++) v += "0123456789abcdef";
      put(k, v);
    }
  }
  const std::string shared_prefix = "p" + std::string(199, 'p');
  for (int i = 0; i < 6; i++) put(shared_prefix + std::to_string(i), "shared-prefix-" + std::to_string(i));
  put(Bytes({0xff}), Bytes({0x00, 0x00, 0x00}));
  put(Bytes({0xff, 0x00}), "ff-00");
  put(Bytes({0xff, 0xff, 0xff, 0xff}), "all-ff");

  std::vector<Tombstone> t = {
      {"k0010", "k0020", 0},
      {"k0030", "k00305", 0},
      {Bytes({0xff, 0xff}), Bytes({0xff, 0xff, 0xff, 0xff, 0xff}), 0},
  };
  return {e, t};
}

Content TombstonesOnly() {
  Content c;
  c.tombstones = {
      {"", Bytes({0x00, 0x01}), 0},
      {"delete-from", "delete-to", 0},
      {"x", Bytes({0xff, 0xff}), 0},
  };
  return c;
}

// ---------------------------------------------------------------- options

struct Spec {
  std::string name;
  int format_version;
  ChecksumType checksum;
  CompressionType compression;
  int bloom_bits_per_key;  // 0: no filter
  size_t block_size;
  int index_block_restart_interval;
  Content content;
};

const char* ChecksumName(ChecksumType c) {
  switch (c) {
    case ROCKSDB_NAMESPACE::kNoChecksum: return "none";
    case ROCKSDB_NAMESPACE::kCRC32c: return "crc32c";
    case ROCKSDB_NAMESPACE::kxxHash: return "xxhash";
    case ROCKSDB_NAMESPACE::kxxHash64: return "xxhash64";
    case ROCKSDB_NAMESPACE::kXXH3: return "xxh3";
  }
  return "unknown";
}

const char* CompressionOptionName(CompressionType c) {
  return c == ROCKSDB_NAMESPACE::kLZ4Compression ? "lz4" : "none";
}

constexpr int kBlockRestartInterval = 16;

Options MakeOptions(int format_version, ChecksumType checksum, CompressionType compression,
                    int bloom_bits_per_key, size_t block_size, int index_block_restart_interval) {
  Options o;
  o.compression = compression;
  o.db_host_id = "";  // keep the host name out of committed files
  BlockBasedTableOptions t;
  t.format_version = format_version;
  t.checksum = checksum;
  t.block_size = block_size;
  t.block_restart_interval = kBlockRestartInterval;
  t.index_block_restart_interval = index_block_restart_interval;
  if (bloom_bits_per_key > 0) t.filter_policy.reset(ROCKSDB_NAMESPACE::NewBloomFilterPolicy(bloom_bits_per_key));
  o.table_factory.reset(ROCKSDB_NAMESPACE::NewBlockBasedTableFactory(t));
  return o;
}

Options MakeOptions(const Spec& s) {
  return MakeOptions(s.format_version, s.checksum, s.compression, s.bloom_bits_per_key, s.block_size,
                     s.index_block_restart_interval);
}

// ---------------------------------------------------------------- JSON

void WriteProperties(std::ostream& js, const TableProperties& p) {
  // TableProperties reports an absent numeric property as 0 and an absent
  // string property as "" (RocksDB writes host id and CF name only if set).
  const std::map<std::string, uint64_t> numeric = {
      {"rocksdb.column.family.id", p.column_family_id},
      {"rocksdb.creation.time", p.creation_time},
      {"rocksdb.data.size", p.data_size},
      {"rocksdb.deleted.keys", p.num_deletions},
      {"rocksdb.file.creation.time", p.file_creation_time},
      {"rocksdb.filter.size", p.filter_size},
      {"rocksdb.fixed.key.length", p.fixed_key_len},
      {"rocksdb.format.version", p.format_version},
      {"rocksdb.index.key.is.user.key", p.index_key_is_user_key},
      {"rocksdb.index.partitions", p.index_partitions},
      {"rocksdb.index.size", p.index_size},
      {"rocksdb.index.value.is.delta.encoded", p.index_value_is_delta_encoded},
      {"rocksdb.merge.operands", p.num_merge_operands},
      {"rocksdb.num.data.blocks", p.num_data_blocks},
      {"rocksdb.num.entries", p.num_entries},
      {"rocksdb.num.filter_entries", p.num_filter_entries},
      {"rocksdb.num.range-deletions", p.num_range_deletions},
      {"rocksdb.oldest.key.time", p.oldest_key_time},
      {"rocksdb.original.file.number", p.orig_file_number},
      {"rocksdb.raw.key.size", p.raw_key_size},
      {"rocksdb.raw.value.size", p.raw_value_size},
      {"rocksdb.top-level.index.size", p.top_level_index_size},
  };
  const std::map<std::string, std::string> strings = {
      {"rocksdb.column.family.name", p.column_family_name},
      {"rocksdb.comparator", p.comparator_name},
      {"rocksdb.compression", p.compression_name},
      {"rocksdb.compression_options", p.compression_options},
      {"rocksdb.creating.db.identity", p.db_id},
      {"rocksdb.creating.host.identity", p.db_host_id},
      {"rocksdb.creating.session.identity", p.db_session_id},
      {"rocksdb.filter.policy", p.filter_policy_name},
      {"rocksdb.merge.operator", p.merge_operator_name},
      {"rocksdb.prefix.extractor.name", p.prefix_extractor_name},
      {"rocksdb.property.collectors", p.property_collectors_names},
  };
  js << "  \"properties\": {\n    \"numeric\": {";
  const char* sep = "\n";
  for (const auto& kv : numeric) {
    js << sep << "      " << Quote(kv.first) << ": " << kv.second;
    sep = ",\n";
  }
  js << "\n    },\n    \"string\": {";
  sep = "\n";
  for (const auto& kv : strings) {
    js << sep << "      " << Quote(kv.first) << ": " << Quote(kv.second);
    sep = ",\n";
  }
  js << "\n    }\n  }\n";
}

struct JsonHeader {
  std::string file;
  std::string generator;
  uint64_t file_size_bytes;
  bool byte_identity_candidate;
  int format_version;
  ChecksumType checksum;
  CompressionType compression;
  int bloom_bits_per_key;
  size_t block_size;
  int index_block_restart_interval;
  uint64_t global_seqno;
  std::string note;
};

void WriteJson(const std::string& path, const JsonHeader& h, const Content& c, const TableProperties& p) {
  std::ofstream js(path);
  js << "{\n";
  js << "  \"file\": " << Quote(h.file) << ",\n";
  js << "  \"generator\": " << Quote(h.generator) << ",\n";
  if (!h.note.empty()) js << "  \"note\": " << Quote(h.note) << ",\n";
  js << "  \"fileSizeBytes\": " << h.file_size_bytes << ",\n";
  js << "  \"byteIdentityCandidate\": " << (h.byte_identity_candidate ? "true" : "false") << ",\n";
  js << "  \"options\": {\"formatVersion\": " << h.format_version << ", \"checksum\": " << Quote(ChecksumName(h.checksum))
     << ", \"compression\": " << Quote(CompressionOptionName(h.compression))
     << ", \"bloomBitsPerKey\": " << h.bloom_bits_per_key << ", \"blockSizeBytes\": " << h.block_size
     << ", \"blockRestartInterval\": " << kBlockRestartInterval
     << ", \"indexBlockRestartInterval\": " << h.index_block_restart_interval << "},\n";
  js << "  \"globalSeqno\": " << h.global_seqno << ",\n";
  js << "  \"entryFields\": [\"userKeyHex\", \"seq\", \"type\", \"valueHex\"],\n";
  js << "  \"entries\": [";
  const char* sep = "\n";
  for (const Entry& e : c.entries) {
    js << sep << "    [\"" << ToHex(e.user_key) << "\", " << e.seq << ", " << e.type << ", \"" << ToHex(e.value)
       << "\"]";
    sep = ",\n";
  }
  js << (c.entries.empty() ? "],\n" : "\n  ],\n");
  js << "  \"rangeTombstones\": [";
  sep = "\n";
  for (const Tombstone& t : c.tombstones) {
    js << sep << "    {\"startHex\": \"" << ToHex(t.start) << "\", \"endHex\": \"" << ToHex(t.end)
       << "\", \"seq\": " << t.seq << "}";
    sep = ",\n";
  }
  js << (c.tombstones.empty() ? "],\n" : "\n  ],\n");
  WriteProperties(js, p);
  js << "}\n";
  if (!js) Fail("write " + path, Status::IOError());
}

// ---------------------------------------------------------------- checks

// RocksDB's built-in string-append merge operator (joins operands with ',').
std::shared_ptr<ROCKSDB_NAMESPACE::MergeOperator> StringAppendMergeOperator() {
  std::shared_ptr<ROCKSDB_NAMESPACE::MergeOperator> merge;
  Check("string-append merge operator",
        ROCKSDB_NAMESPACE::MergeOperator::CreateFromString(ROCKSDB_NAMESPACE::ConfigOptions(), "stringappend", &merge));
  return merge;
}

// Opens `path` with RocksDB's standalone reader, verifies every block
// checksum and counts the visible keys. Returns the table properties.
// Reading needs a merge operator once a Merge entry is seen; writing does
// not, and the SstFileWriter fixtures are written without one so their
// rocksdb.merge.operator property is "nullptr".
std::shared_ptr<const TableProperties> VerifyWithRocksDB(const std::string& path, const Options& write_options,
                                                         size_t* visible_keys) {
  Options options = write_options;
  if (!options.merge_operator) options.merge_operator = StringAppendMergeOperator();
  ROCKSDB_NAMESPACE::SstFileReader reader(options);
  Check("open " + path, reader.Open(path));
  Check("verify " + path, reader.VerifyChecksum());
  std::unique_ptr<ROCKSDB_NAMESPACE::Iterator> it(reader.NewIterator(ROCKSDB_NAMESPACE::ReadOptions()));
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
  Check("scan " + path, it->status());
  *visible_keys = n;
  return reader.GetTableProperties();
}

uint64_t FileSize(const std::string& path) {
  uint64_t size = 0;
  Check("size of " + path, ROCKSDB_NAMESPACE::Env::Default()->GetFileSize(path, &size));
  return size;
}

void CopyFile(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  if (!in || !out) Fail("copy " + from + " -> " + to, Status::IOError());
}

std::string Version() {
  return std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." + std::to_string(ROCKSDB_PATCH);
}

// ---------------------------------------------------------------- fixtures

void WriteSstFileWriterFixture(const std::string& outdir, const Spec& s) {
  const Options options = MakeOptions(s);
  const std::string path = outdir + "/" + s.name + ".sst";
  ROCKSDB_NAMESPACE::SstFileWriter writer(ROCKSDB_NAMESPACE::EnvOptions(), options);
  Check("open writer " + path, writer.Open(path));
  // SstFileWriter accepts range deletions at any point; give them first.
  for (const Tombstone& t : s.content.tombstones) Check("delete range", writer.DeleteRange(t.start, t.end));
  for (const Entry& e : s.content.entries) {
    switch (e.type) {
      case kTypeValue: Check("put", writer.Put(e.user_key, e.value)); break;
      case kTypeDeletion: Check("delete", writer.Delete(e.user_key)); break;
      case kTypeMerge: Check("merge", writer.Merge(e.user_key, e.value)); break;
      default: Fail("unsupported entry type", Status::InvalidArgument());
    }
  }
  ROCKSDB_NAMESPACE::ExternalSstFileInfo info;
  Check("finish " + path, writer.Finish(&info));

  size_t visible = 0;
  auto props = VerifyWithRocksDB(path, options, &visible);
  JsonHeader h{s.name + ".sst", "RocksDB " + Version() + " SstFileWriter", info.file_size,
               s.compression == ROCKSDB_NAMESPACE::kNoCompression, s.format_version, s.checksum,
               s.compression, s.bloom_bits_per_key, s.block_size, s.index_block_restart_interval, 0, ""};
  WriteJson(outdir + "/" + s.name + ".json", h, s.content, *props);
  fprintf(stderr, "wrote %s: %llu bytes, %zu entries, %zu tombstones, %zu visible keys\n", path.c_str(),
          static_cast<unsigned long long>(info.file_size), s.content.entries.size(), s.content.tombstones.size(),
          visible);
}

// Ingests `spec`'s file into a scratch DB that already holds an overlapping
// key, so RocksDB assigns a non-zero global seqno and (write_global_seqno,
// the 7.8 default) rewrites the 8 value bytes of
// rocksdb.external_sst_file.global_seqno in the DB's copy. Saves that copy.
void WriteIngestedCopy(const std::string& outdir, const std::string& scratch, const Spec& s) {
  const std::string src = outdir + "/" + s.name + ".sst";
  const std::string name = s.name + ".ingested";
  Options options = MakeOptions(s);
  options.create_if_missing = true;
  Check("destroy scratch", ROCKSDB_NAMESPACE::DestroyDB(scratch, options));
  DB* raw = nullptr;
  Check("open scratch db", DB::Open(options, scratch, &raw));
  std::unique_ptr<DB> db(raw);
  const std::string first_key = s.content.entries.front().user_key;
  Check("put", db->Put(ROCKSDB_NAMESPACE::WriteOptions(), first_key, "older-memtable-value"));
  ROCKSDB_NAMESPACE::IngestExternalFileOptions io;
  io.write_global_seqno = true;
  io.verify_checksums_before_ingest = true;
  Check("ingest " + src, db->IngestExternalFile({src}, io));
  std::string got;
  Check("get after ingest", db->Get(ROCKSDB_NAMESPACE::ReadOptions(), first_key, &got));
  if (got != s.content.entries.front().value) Fail("ingested value does not shadow the older one", Status::Corruption());

  std::vector<ROCKSDB_NAMESPACE::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  std::string ingested;
  uint64_t seqno = 0;
  // Ingesting over the memtable first flushes it (a file holding only
  // seqno 1); the ingested file is the one with the highest seqno.
  for (const auto& f : files) {
    if (f.largest_seqno > seqno) {
      ingested = f.db_path + f.name;
      seqno = f.largest_seqno;
    }
  }
  if (ingested.empty()) Fail("no ingested file with a global seqno", Status::NotFound());
  const std::string dst = outdir + "/" + name + ".sst";
  CopyFile(ingested, dst);
  db.reset();
  Check("destroy scratch", ROCKSDB_NAMESPACE::DestroyDB(scratch, options));

  size_t visible = 0;
  auto props = VerifyWithRocksDB(dst, options, &visible);
  Content c = s.content;
  for (Entry& e : c.entries) e.seq = seqno;
  for (Tombstone& t : c.tombstones) t.seq = seqno;
  JsonHeader h{name + ".sst",
               "RocksDB " + Version() + " IngestExternalFile (DB copy)",
               FileSize(dst),
               false,
               s.format_version,
               s.checksum,
               s.compression,
               s.bloom_bits_per_key,
               s.block_size,
               s.index_block_restart_interval,
               seqno,
               "The DB's copy of " + s.name + ".sst after ingestion: identical except the 8 value bytes of "
                   "rocksdb.external_sst_file.global_seqno, rewritten in place without updating the properties "
                   "block checksum. Entry seqs are the global seqno readers must apply."};
  WriteJson(outdir + "/" + name + ".json", h, c, *props);
  fprintf(stderr, "wrote %s: global seqno %llu\n", dst.c_str(), static_cast<unsigned long long>(seqno));
}

// A file written by a DB flush: several versions of one key pinned by
// snapshots (so they survive the flush and straddle data blocks), a
// SingleDelete, Merges, a Delete and a range deletion, all with distinct
// non-zero sequence numbers. The index then stores full internal keys.
void WriteDbFlushFixture(const std::string& outdir, const std::string& scratch) {
  const std::string name = "fv5_xxh3_dbflush_multiversion";
  Options options = MakeOptions(5, ROCKSDB_NAMESPACE::kXXH3, ROCKSDB_NAMESPACE::kNoCompression, 10, 128, 1);
  options.create_if_missing = true;
  options.disable_auto_compactions = true;
  options.merge_operator = StringAppendMergeOperator();
  Check("destroy scratch", ROCKSDB_NAMESPACE::DestroyDB(scratch, options));
  DB* raw = nullptr;
  Check("open flush db", DB::Open(options, scratch, &raw));
  std::unique_ptr<DB> db(raw);
  std::vector<const ROCKSDB_NAMESPACE::Snapshot*> snapshots;
  const ROCKSDB_NAMESPACE::WriteOptions wo;
  Content c;
  // Logs the write just made with the seqno the DB gave it, then pins it
  // with a snapshot so the flush keeps every version.
  auto logged = [&](const std::string& what, const Status& s, const std::string& key, int type,
                    const std::string& value) {
    Check(what, s);
    c.entries.push_back({key, db->GetLatestSequenceNumber(), type, value});
    snapshots.push_back(db->GetSnapshot());
  };
  for (int v = 0; v < 10; v++) {
    const std::string value = "version-" + std::to_string(v) + "-of-key-a-padding-padding";
    logged("put", db->Put(wo, "a", value), "a", kTypeValue, value);
  }
  logged("put", db->Put(wo, "b", "b-value"), "b", kTypeValue, "b-value");
  logged("single delete", db->SingleDelete(wo, "b"), "b", kTypeSingleDeletion, "");
  logged("merge", db->Merge(wo, "c", "operand-1"), "c", kTypeMerge, "operand-1");
  logged("merge", db->Merge(wo, "c", "operand-2"), "c", kTypeMerge, "operand-2");
  logged("delete", db->Delete(wo, "d"), "d", kTypeDeletion, "");
  logged("put", db->Put(wo, "e1", "under-the-tombstone"), "e1", kTypeValue, "under-the-tombstone");
  Check("delete range", db->DeleteRange(wo, db->DefaultColumnFamily(), "e", "f"));
  c.tombstones.push_back({"e", "f", db->GetLatestSequenceNumber()});
  snapshots.push_back(db->GetSnapshot());
  logged("put", db->Put(wo, "g", "last"), "g", kTypeValue, "last");
  Check("flush", db->Flush(ROCKSDB_NAMESPACE::FlushOptions()));

  // File order: user key ascending, then seqno descending.
  std::stable_sort(c.entries.begin(), c.entries.end(), [](const Entry& x, const Entry& y) {
    return x.user_key != y.user_key ? x.user_key < y.user_key : x.seq > y.seq;
  });
  // Cross-check the log against what the DB holds. GetAllKeyVersions omits
  // point entries covered by a range tombstone, so it must list a subset.
  std::vector<ROCKSDB_NAMESPACE::KeyVersion> versions;
  Check("all key versions", ROCKSDB_NAMESPACE::GetAllKeyVersions(db.get(), Slice(), Slice(), 1000, &versions));
  for (const auto& kv : versions) {
    const bool logged_entry = std::any_of(c.entries.begin(), c.entries.end(), [&](const Entry& e) {
      return e.user_key == kv.user_key && e.seq == kv.sequence && e.type == kv.type && e.value == kv.value;
    });
    if (!logged_entry) Fail("DB holds an entry the log lacks: " + kv.user_key, Status::Corruption());
  }

  std::vector<ROCKSDB_NAMESPACE::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  if (files.size() != 1) Fail("expected exactly one flushed file", Status::Corruption());
  const std::string dst = outdir + "/" + name + ".sst";
  CopyFile(files[0].db_path + files[0].name, dst);
  for (const auto* snap : snapshots) db->ReleaseSnapshot(snap);
  db.reset();
  Check("destroy scratch", ROCKSDB_NAMESPACE::DestroyDB(scratch, options));

  size_t visible = 0;
  auto props = VerifyWithRocksDB(dst, options, &visible);
  if (props->num_entries != c.entries.size() + c.tombstones.size()) {
    Fail("flushed file holds " + std::to_string(props->num_entries) + " entries, the log " +
             std::to_string(c.entries.size() + c.tombstones.size()),
         Status::Corruption());
  }
  JsonHeader h{name + ".sst",
               "RocksDB " + Version() + " DB flush",
               FileSize(dst),
               false,
               5,
               ROCKSDB_NAMESPACE::kXXH3,
               ROCKSDB_NAMESPACE::kNoCompression,
               10,
               128,
               1,
               0,
               "Written by a DB flush (column family default, merge operator stringappend); not an external "
               "file, so no global seqno applies and entry seqs are the stored ones."};
  WriteJson(outdir + "/" + name + ".json", h, c, *props);
  fprintf(stderr, "wrote %s: %zu entries, %zu visible keys\n", dst.c_str(), c.entries.size(), visible);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s OUTDIR SCRATCHDIR\n", argv[0]);
    return 2;
  }
  const std::string outdir = argv[1];
  const std::string scratch = argv[2];
  using namespace ROCKSDB_NAMESPACE;

  const std::vector<Spec> specs = {
      // name, fv, checksum, compression, bloom bits, block size, index restart interval, content
      {"fv2_crc32c_none_bloom", 2, kCRC32c, kNoCompression, 10, 256, 1, MixedContent()},
      {"fv2_crc32c_lz4", 2, kCRC32c, kLZ4Compression, 0, 256, 1, MixedContent()},
      {"fv3_xxhash_none_bloom", 3, kxxHash, kNoCompression, 10, 256, 1, MixedContent()},
      {"fv4_xxhash64_none_bloom_idxri4", 4, kxxHash64, kNoCompression, 10, 256, 4, MixedContent()},
      {"fv5_xxh3_none_bloom", 5, kXXH3, kNoCompression, 10, 256, 1, MixedContent()},
      {"fv5_xxh3_lz4_bloom", 5, kXXH3, kLZ4Compression, 10, 256, 1, MixedContent()},
      {"fv5_crc32c_none_nofilter", 5, kCRC32c, kNoCompression, 0, 512, 1, MixedContent()},
      {"fv5_xxh3_tombstones_only", 5, kXXH3, kNoCompression, 10, 256, 1, TombstonesOnly()},
  };
  for (const Spec& s : specs) WriteSstFileWriterFixture(outdir, s);
  WriteIngestedCopy(outdir, scratch, specs[4]);
  WriteDbFlushFixture(outdir, scratch);
  return 0;
}
