// sst_peer: the RocksDB 7.8 side of bench/sst-throughput.ts.
//
// Writes and scans SST files with RocksDB's own SstFileWriter / SstFileReader
// so the TypeScript writer and reader can be timed against the C++ library
// on identical input, in the same run, on the same machine.
//
//   sst_peer write OUT.sst ENTRIES VALUE_BYTES   time SstFileWriter Open..Finish
//   sst_peer scan FILE.sst                       time a full SstFileReader scan
//
// Each prints one JSON object on stdout. Table options match the bench:
// format_version 5, XXH3 checksums, LZ4, Bloom 10 bits/key, 4 KiB blocks.
//
// Input data (must stay identical to makeWorkload in bench/sst-throughput.ts): key i is the
// 8-byte big-endian counter i; its value is VALUE_BYTES long, the first half
// drawn from a mulberry32 stream (seed 0x5eed, 4 bytes per draw,
// little-endian, continuing across entries) and the second half a repeat of
// the first, so it compresses roughly 2:1 like db_bench's values. The data is
// generated before the clock starts, as the TypeScript side does.
#include <rocksdb/env.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(const std::string& what, const rocksdb::Status& s) {
  fprintf(stderr, "sst_peer: %s: %s\n", what.c_str(), s.ToString().c_str());
  exit(1);
}

rocksdb::Options BenchOptions() {
  rocksdb::Options o;
  o.compression = rocksdb::kLZ4Compression;
  o.db_host_id = "";
  rocksdb::BlockBasedTableOptions t;
  t.format_version = 5;
  t.checksum = rocksdb::kXXH3;
  t.block_size = 4096;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

class Mulberry32 {
 public:
  explicit Mulberry32(uint32_t seed) : state_(seed) {}
  uint32_t Next() {
    uint32_t t = state_ += 0x6d2b79f5u;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
  }

 private:
  uint32_t state_;
};

constexpr size_t kKeyBytes = 8;

// All keys back to back, then all values back to back.
void MakeWorkload(uint64_t entries, size_t value_bytes, std::string* keys, std::string* values) {
  keys->resize(entries * kKeyBytes);
  values->resize(entries * value_bytes);
  Mulberry32 rng(0x5eed);
  const size_t random_bytes = value_bytes - value_bytes / 2;
  for (uint64_t i = 0; i < entries; i++) {
    char* k = &(*keys)[i * kKeyBytes];
    for (size_t b = 0; b < kKeyBytes; b++) k[b] = static_cast<char>(i >> (8 * (kKeyBytes - 1 - b)));
    char* v = &(*values)[i * value_bytes];
    for (size_t b = 0; b < random_bytes; b += 4) {
      const uint32_t r = rng.Next();
      for (size_t j = 0; j < 4 && b + j < random_bytes; j++) v[b + j] = static_cast<char>(r >> (8 * j));
    }
    for (size_t b = random_bytes; b < value_bytes; b++) v[b] = v[b - random_bytes];
  }
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Write(const std::string& path, uint64_t entries, size_t value_bytes) {
  std::string keys, values;
  MakeWorkload(entries, value_bytes, &keys, &values);
  const rocksdb::Options options = BenchOptions();
  const auto start = Clock::now();
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
  rocksdb::Status s = writer.Open(path);
  if (!s.ok()) Fail("open " + path, s);
  for (uint64_t i = 0; i < entries; i++) {
    s = writer.Put(rocksdb::Slice(keys.data() + i * kKeyBytes, kKeyBytes),
                   rocksdb::Slice(values.data() + i * value_bytes, value_bytes));
    if (!s.ok()) Fail("put", s);
  }
  rocksdb::ExternalSstFileInfo info;
  s = writer.Finish(&info);
  if (!s.ok()) Fail("finish", s);
  const double seconds = SecondsSince(start);
  printf("{\"op\":\"write\",\"entries\":%llu,\"seconds\":%.6f,\"fileSizeBytes\":%llu}\n",
         static_cast<unsigned long long>(entries), seconds, static_cast<unsigned long long>(info.file_size));
  return 0;
}

int Scan(const std::string& path) {
  const auto start = Clock::now();
  rocksdb::SstFileReader reader(BenchOptions());
  rocksdb::Status s = reader.Open(path);
  if (!s.ok()) Fail("open " + path, s);
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(ro));
  uint64_t entries = 0, key_bytes = 0, value_bytes = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    entries++;
    key_bytes += it->key().size();
    value_bytes += it->value().size();
  }
  if (!it->status().ok()) Fail("scan " + path, it->status());
  const double seconds = SecondsSince(start);
  printf("{\"op\":\"scan\",\"entries\":%llu,\"keyBytes\":%llu,\"valueBytes\":%llu,\"seconds\":%.6f}\n",
         static_cast<unsigned long long>(entries), static_cast<unsigned long long>(key_bytes),
         static_cast<unsigned long long>(value_bytes), seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "write" && argc == 5) return Write(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoul(argv[4], nullptr, 10));
  if (cmd == "scan" && argc == 3) return Scan(argv[2]);
  fprintf(stderr, "usage: %s write OUT.sst ENTRIES VALUE_BYTES | scan FILE.sst\n", argv[0]);
  return 2;
}
