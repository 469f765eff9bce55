#include "io/distill_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/h5.h"

namespace vispec {

namespace {
hid_t stored_type(DistillDtype d) {
  switch (d) {
    case DistillDtype::kFloat32: return H5T_IEEE_F32LE;
    case DistillDtype::kFloat16: return h5::float16_type();
    case DistillDtype::kBFloat16: return H5T_STD_U16LE;
  }
  return H5T_STD_U16LE;
}

// The open unit file and its four datasets.
struct UnitFile {
  h5::Handle file, hidden, tokens, class_id, sample_id;
};

UnitFile create_unit_file(const std::string& tmp, const std::string& where, const DistillHeader& h) {
  const auto& o = h.options;
  const hsize_t N = hsize_t(h.samples), S = hsize_t(o.streams), T = hsize_t(h.grid_size * h.grid_size),
                D = hsize_t(h.hidden_dim);
  UnitFile f;
  f.file = h5::create_file(tmp);
  const hid_t root = f.file.get();
  h5::attr_string(root, "schema", kDistillSchemaName, where);
  h5::attr_int(root, "version", kDistillSchemaVersion, where);
  h5::attr_int(root, "unit", h.unit, where);
  h5::attr_string(root, "model", h.model, where);
  h5::attr_string(root, "decoder", h.decoder, where);
  h5::attr_int(root, "seed", int64_t(h.seed), where);
  h5::attr_double(root, "cfg_scale", h.cfg_scale, where);
  h5::attr_double(root, "temperature", h.temperature, where);
  h5::attr_double(root, "top_k", h.top_k, where);
  h5::attr_double(root, "top_p", h.top_p, where);
  h5::attr_string(root, "streams", o.streams == 2 ? "cond,uncond" : "cond", where);
  h5::attr_string(root, "hidden_kind", "pre_norm", where);
  h5::attr_string(root, "dtype", dtype_name(o.dtype), where);
  h5::attr_int(root, "grid_size", h.grid_size, where);
  h5::attr_int(root, "hidden_dim", h.hidden_dim, where);
  h5::attr_int(root, "samples", h.samples, where);
  // Chunk rows: as many positions as fit in 1 MiB (h5py's advice: 10 KiB to 1 MiB per chunk).
  const hsize_t rows = std::clamp<hsize_t>((1u << 20) / (D * hsize_t(dtype_bytes(o.dtype))), 1, T);
  std::vector<hsize_t> chunk = {1, 1, rows, D};
  if (N == 0) chunk.clear();  // a unit whose prompts were all skipped: chunks may not exceed an empty extent
  f.hidden = h5::create_dataset(root, "hidden", stored_type(o.dtype), {N, S, T, D}, chunk, o.compression, where);
  if (o.dtype == DistillDtype::kBFloat16) h5::attr_string(f.hidden.get(), "dtype", "bfloat16", where);
  f.tokens = h5::create_dataset(root, "tokens", H5T_STD_I32LE, {N, T}, {}, 0, where);
  f.class_id = h5::create_dataset(root, "class_id", H5T_STD_I64LE, {N}, {}, 0, where);
  f.sample_id = h5::create_dataset(root, "sample_id", H5T_STD_I64LE, {N}, {}, 0, where);
  return f;
}
}  // namespace

DistillUnitWriter::DistillUnitWriter(std::string path, DistillHeader header, size_t queue_depth)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())), header_(std::move(header)),
      depth_(std::max<size_t>(1, queue_depth)), thread_([this] { run(); }) {}

DistillUnitWriter::~DistillUnitWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) abandon_ = true;
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!done_) std::remove(tmp_.c_str());
}

void DistillUnitWriter::push(DistillBatch batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return queue_.size() < depth_ || error_; });
  if (error_) std::rethrow_exception(error_);
  queue_.push_back(std::move(batch));
  cv_.notify_all();
}

FileDigest DistillUnitWriter::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (error_) std::rethrow_exception(error_);
  const FileDigest digest = digest_file(tmp_);
  // Durable before visible: fsync the closed file, rename it into place, fsync the directory.
  const int fd = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
  VISPEC_CHECK(fd >= 0 && ::fsync(fd) == 0, path_, ": fsync failed");
  ::close(fd);
  VISPEC_CHECK(std::rename(tmp_.c_str(), path_.c_str()) == 0, path_, ": rename failed");
  fsync_directory(path_.substr(0, path_.find_last_of('/')));
  done_ = true;
  return digest;
}

void DistillUnitWriter::run() {
  try {
    UnitFile f = create_unit_file(tmp_, path_, header_);
    const int64_t T = header_.grid_size * header_.grid_size;
    int64_t row = 0;
    for (;;) {
      DistillBatch b;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return !queue_.empty() || closing_; });
        if (abandon_) return;
        if (queue_.empty()) break;  // closing and drained
        b = std::move(queue_.front());
        queue_.pop_front();
      }
      cv_.notify_all();
      VISPEC_ASSERT(row + b.count <= header_.samples, "more distillation rows than the unit has samples");
      VISPEC_ASSERT(int64_t(b.tokens.size()) == b.count * T, "distillation batch: tokens of the wrong size");
      h5::write_rows(f.hidden.get(), stored_type(header_.options.dtype), hsize_t(row), hsize_t(b.count),
                     b.hidden.data(), path_);
      h5::write_rows(f.tokens.get(), H5T_NATIVE_INT32, hsize_t(row), hsize_t(b.count), b.tokens.data(), path_);
      h5::write_rows(f.class_id.get(), H5T_NATIVE_INT64, hsize_t(row), hsize_t(b.count), b.class_id.data(), path_);
      h5::write_rows(f.sample_id.get(), H5T_NATIVE_INT64, hsize_t(row), hsize_t(b.count), b.sample_id.data(), path_);
      row += b.count;
    }
    VISPEC_ASSERT(row == header_.samples, "distillation file closed with missing rows");
    h5::check(H5Fflush(f.file.get(), H5F_SCOPE_LOCAL), path_, "flush");
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  cv_.notify_all();
}

}  // namespace vispec
