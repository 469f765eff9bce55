// Writes one unit's distillation file (io/distill_schema.h) from a background thread: the worker pushes each
// decoded batch and goes on decoding while the previous one is written; a bounded queue keeps memory flat.
// finish() waits for the last batch, closes, checksums, fsyncs and renames the file into place; destroyed without
// finish() (an abandoned unit, an exception) the temporary file is removed.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/distill_schema.h"
#include "io/file_digest.h"

namespace vispec {

struct DistillHeader {
  int64_t unit = 0;
  int64_t samples = 0;  // N, rows of every dataset
  int64_t grid_size = 0;
  int64_t hidden_dim = 0;
  std::string model, decoder;
  uint64_t seed = 0;
  double cfg_scale = 1, temperature = 1, top_k = 0, top_p = 1;
  DistillOptions options;
};

struct DistillBatch {
  int64_t count = 0;
  std::vector<uint8_t> hidden;  // [count, S, T, D] in the stored dtype's bytes
  std::vector<int32_t> tokens;  // [count, T]
  std::vector<int64_t> class_id, sample_id;
};

class DistillUnitWriter {
 public:
  DistillUnitWriter(std::string path, DistillHeader header, size_t queue_depth = 4);
  ~DistillUnitWriter();
  DistillUnitWriter(const DistillUnitWriter&) = delete;
  DistillUnitWriter& operator=(const DistillUnitWriter&) = delete;

  void push(DistillBatch batch);  // blocks while the queue is full; rethrows a write error
  // All rows written -> file closed, fsynced, renamed; rethrows a write error. Returns the file's digest, read
  // back once while it is still in the page cache (HDF5 writes it in pieces, out of order).
  FileDigest finish();

 private:
  void run();
  std::string path_, tmp_;
  DistillHeader header_;
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<DistillBatch> queue_;
  bool closing_ = false, abandon_ = false, done_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace vispec
