// conflict_peer: the RocksDB 7.8 side of bench/conflict.ts's peer comparison.
//
//   conflict_peer ENGINE_DATA.sst NEW.sst DB_DIR RUNS
//
// Builds a RocksDB database in DB_DIR (which must not exist) holding exactly the entries of
// ENGINE_DATA.sst (ingested with IngestExternalFile, so it sits in the bottom level as one
// file), then RUNS times classifies every key of NEW.sst against it the straightforward way:
// read NEW.sst in order with SstFileReader and, for each key, one SeekGE (Iterator::Seek) on a
// database iterator at a snapshot, then compare key and value. A key is new when the seek
// lands elsewhere, unchanged when the values match, else a conflict.
//
// Prints one JSON object: {"keys", "new", "unchanged", "conflicts", "runSeconds": [...],
// "runCpuSeconds": [...]} (wall and process CPU time per run; the bench compares CPU time, which a
// busy machine does not inflate).
// Only the classification loop is timed (the SstFileReader open and the iterator creation are
// outside). Table options match bench/conflict.ts's engine: format_version 5, XXH3, LZ4, Bloom
// 10 bits/key, 4 KiB blocks, and a block cache large enough to hold the database after the first
// run. NEW.sst is read without a block cache, every run from the file (the OS page cache), as
// our side reads it: in an import the new files are read once, just after being written.
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

[[noreturn]] void Fail(const std::string& what, const rocksdb::Status& s) {
  fprintf(stderr, "conflict_peer: %s: %s\n", what.c_str(), s.ToString().c_str());
  exit(1);
}

rocksdb::Options PeerOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.error_if_exists = true;
  o.compression = rocksdb::kLZ4Compression;
  o.disable_auto_compactions = true;
  rocksdb::BlockBasedTableOptions t;
  t.format_version = 5;
  t.checksum = rocksdb::kXXH3;
  t.block_size = 4096;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.block_cache = rocksdb::NewLRUCache(1024ull << 20);
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: conflict_peer ENGINE_DATA.sst NEW.sst DB_DIR RUNS\n");
    return 2;
  }
  const std::string engine_data = argv[1];
  const std::string new_sst = argv[2];
  const std::string db_dir = argv[3];
  const int runs = atoi(argv[4]);

  rocksdb::Options options = PeerOptions();
  rocksdb::DB* raw_db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, db_dir, &raw_db);
  if (!s.ok()) Fail("open " + db_dir, s);
  std::unique_ptr<rocksdb::DB> db(raw_db);
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = false;
  s = db->IngestExternalFile({engine_data}, ingest);
  if (!s.ok()) Fail("ingest " + engine_data, s);

  uint64_t keys = 0, fresh = 0, unchanged = 0, conflicts = 0;
  std::vector<double> run_seconds;
  std::vector<double> run_cpu_seconds;
  for (int run = 0; run < runs; run++) {
    rocksdb::Options sst_options = options;
    rocksdb::BlockBasedTableOptions sst_table;
    sst_table.no_block_cache = true;
    sst_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(sst_table));
    rocksdb::SstFileReader reader(sst_options);
    s = reader.Open(new_sst);
    if (!s.ok()) Fail("open " + new_sst, s);
    rocksdb::ReadOptions sst_read;
    std::unique_ptr<rocksdb::Iterator> sst(reader.NewIterator(sst_read));
    const rocksdb::Snapshot* snapshot = db->GetSnapshot();
    rocksdb::ReadOptions db_read;
    db_read.snapshot = snapshot;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(db_read));

    keys = fresh = unchanged = conflicts = 0;
    const auto start = Clock::now();
    const double cpu_start = CpuSeconds();
    for (sst->SeekToFirst(); sst->Valid(); sst->Next()) {
      keys++;
      const rocksdb::Slice key = sst->key();
      it->Seek(key);
      if (!it->Valid() || it->key() != key) {
        fresh++;
      } else if (it->value() == sst->value()) {
        unchanged++;
      } else {
        conflicts++;
      }
    }
    run_cpu_seconds.push_back(CpuSeconds() - cpu_start);
    run_seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (!sst->status().ok()) Fail("scan " + new_sst, sst->status());
    if (!it->status().ok()) Fail("seek", it->status());
    it.reset();
    db->ReleaseSnapshot(snapshot);
  }

  printf("{\"keys\": %llu, \"new\": %llu, \"unchanged\": %llu, \"conflicts\": %llu, \"runSeconds\": [",
         static_cast<unsigned long long>(keys), static_cast<unsigned long long>(fresh),
         static_cast<unsigned long long>(unchanged), static_cast<unsigned long long>(conflicts));
  for (size_t i = 0; i < run_seconds.size(); i++) printf("%s%.6f", i == 0 ? "" : ", ", run_seconds[i]);
  printf("], \"runCpuSeconds\": [");
  for (size_t i = 0; i < run_cpu_seconds.size(); i++) printf("%s%.6f", i == 0 ? "" : ", ", run_cpu_seconds[i]);
  printf("]}\n");
  return 0;
}
