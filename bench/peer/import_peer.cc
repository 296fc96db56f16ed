// import_peer: the C++ baseline for bench/import. Same job as `ingest import` on the trades CSV:
// parse a delimited file, key = column 1 as int64 (order-preserving: big-endian, sign bit
// flipped), value = the rest of the line (raw), sort, write SSTs with rocksdb::SstFileWriter
// (LZ4, 10-bit bloom, 4 KiB blocks, format_version 5, files cut at --target-file-size between
// distinct keys), then IngestExternalFile into a fresh database.
//
// It holds the whole input in memory (no external sort): a lower bound on the work, which is
// what a baseline should be. The input must be unquoted (the trades data is). Duplicate keys are
// an error, as in `ingest import`.
//
// Usage: import_peer --input FILE --db DIR --sst-dir DIR [--delimiter C] [--header]
//                    [--target-file-size BYTES] [--compression lz4|none]
// Prints one JSON object: rows, inputBytes, parseSeconds, sortSeconds, writeSeconds,
// ingestSeconds, totalSeconds, files, and the process's own accounting from getrusage
// (RUSAGE_SELF, RocksDB's background threads included): userCpuSeconds, systemCpuSeconds,
// maxRssKiB (peak resident set).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"

namespace {

struct Row {
  uint64_t key;         // order-preserving encoding of the int64 key
  const char* value;    // points into the mapped input
  uint32_t valueLength;
};

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "import_peer: %s\n", what.c_str());
  std::exit(1);
}

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

// Parses a decimal int64 from [p, end); returns false when it is not one.
bool ParseInt64(const char* p, const char* end, int64_t* out) {
  bool negative = false;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  if (p == end) return false;
  uint64_t v = 0;
  for (; p < end; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t next = v * 10 + static_cast<uint64_t>(*p - '0');
    if (next / 10 != v) return false;
    v = next;
  }
  if (negative ? v > (uint64_t{1} << 63) : v >= (uint64_t{1} << 63)) return false;
  *out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

void EncodeKey(uint64_t orderKey, char* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(orderKey & 0xff);
    orderKey >>= 8;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string input, dbPath, sstDir, compression = "lz4";
  char delimiter = ',';
  bool header = false;
  uint64_t targetFileSize = 64ull << 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--input") input = next();
    else if (a == "--db") dbPath = next();
    else if (a == "--sst-dir") sstDir = next();
    else if (a == "--delimiter") delimiter = next()[0];
    else if (a == "--header") header = true;
    else if (a == "--target-file-size") targetFileSize = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--compression") compression = next();
    else Die("unknown argument " + a);
  }
  if (input.empty() || dbPath.empty() || sstDir.empty()) Die("usage: import_peer --input FILE --db DIR --sst-dir DIR [--delimiter C] [--header]");

  const auto t0 = std::chrono::steady_clock::now();
  // Read: map the file and let the parse fault it in (reading counts toward parse time).
  int fd = open(input.c_str(), O_RDONLY);
  if (fd < 0) Die("cannot open " + input);
  struct stat st;
  if (fstat(fd, &st) != 0) Die("cannot stat " + input);
  const size_t size = static_cast<size_t>(st.st_size);
  const char* data = static_cast<const char*>(size > 0 ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : nullptr);
  if (size > 0 && data == MAP_FAILED) Die("cannot map " + input);

  // Parse: one row per line; key = field 1, value = the rest of the line after the delimiter.
  std::vector<Row> rows;
  rows.reserve(size / 64);
  const char* p = data;
  const char* end = data + size;
  uint64_t line = 0;
  if (header && p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    p = nl ? nl + 1 : end;
    ++line;
  }
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    const char* lineEnd = nl ? nl : end;
    ++line;
    const char* e = lineEnd;
    if (e > p && e[-1] == '\r') --e;
    if (e > p) {
      const char* d = static_cast<const char*>(std::memchr(p, delimiter, e - p));
      const char* keyEnd = d ? d : e;
      int64_t k;
      if (!ParseInt64(p, keyEnd, &k)) Die("line " + std::to_string(line) + ": key is not an int64");
      const char* v = d ? d + 1 : e;
      rows.push_back(Row{static_cast<uint64_t>(k) ^ (uint64_t{1} << 63), v, static_cast<uint32_t>(e - v)});
    }
    p = nl ? nl + 1 : end;
  }
  const auto t1 = std::chrono::steady_clock::now();

  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].key == rows[i - 1].key) Die("duplicate key");
  }
  const auto t2 = std::chrono::steady_clock::now();

  rocksdb::Options options;
  options.create_if_missing = true;
  options.compression = compression == "none" ? rocksdb::kNoCompression : rocksdb::kLZ4Compression;
  rocksdb::BlockBasedTableOptions table;
  table.block_size = 4096;
  table.format_version = 5;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  std::vector<std::string> files;
  {
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
    bool open = false;
    char key[8];
    for (size_t i = 0; i < rows.size(); ++i) {
      if (open && writer.FileSize() >= targetFileSize) {
        Check(writer.Finish(), "SstFileWriter::Finish");
        open = false;
      }
      if (!open) {
        char name[32];
        std::snprintf(name, sizeof(name), "/%06zu.sst", files.size() + 1);
        files.push_back(sstDir + name);
        Check(writer.Open(files.back()), "SstFileWriter::Open");
        open = true;
      }
      EncodeKey(rows[i].key, key);
      Check(writer.Put(rocksdb::Slice(key, 8), rocksdb::Slice(rows[i].value, rows[i].valueLength)), "SstFileWriter::Put");
    }
    if (open) Check(writer.Finish(), "SstFileWriter::Finish");
  }
  const auto t3 = std::chrono::steady_clock::now();

  rocksdb::DB* db = nullptr;
  Check(rocksdb::DB::Open(options, dbPath, &db), "DB::Open");
  if (!files.empty()) {
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    Check(db->IngestExternalFile(files, ingest), "IngestExternalFile");
  }
  delete db;
  const auto t4 = std::chrono::steady_clock::now();
  if (data != nullptr) munmap(const_cast<char*>(data), size);
  close(fd);

  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) Die("getrusage failed");
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  std::printf(
      "{\"rows\":%zu,\"inputBytes\":%zu,\"parseSeconds\":%.3f,\"sortSeconds\":%.3f,\"writeSeconds\":%.3f,"
      "\"ingestSeconds\":%.3f,\"totalSeconds\":%.3f,\"files\":%zu,\"userCpuSeconds\":%.3f,\"systemCpuSeconds\":%.3f,"
      "\"maxRssKiB\":%ld}\n",
      rows.size(), size, Seconds(t0, t1), Seconds(t1, t2), Seconds(t2, t3), Seconds(t3, t4), Seconds(t0, t4), files.size(),
      tv(usage.ru_utime), tv(usage.ru_stime), usage.ru_maxrss);
  return 0;
}
