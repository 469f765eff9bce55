#include "decoding/common/codebook_neighbours.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <filesystem>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/file_digest.h"
#include "io/npy.h"

namespace vispec {

CodebookNeighbours CodebookNeighbours::build(const torch::Tensor& codebook, int64_t columns) {
  torch::NoGradGuard no_grad;
  const auto e = codebook.to(torch::kCPU, torch::kFloat64);
  const int64_t n = e.size(0);
  VISPEC_CHECK(columns > 0 && columns < n, "codebook neighbours: ", columns, " columns for ", n, " codes");
  CodebookNeighbours t;
  t.codes_ = n;
  t.columns_ = columns;
  t.table_.resize(size_t(n * columns));
  for (int64_t start = 0; start < n; start += 1024) {  // blocks of rows bound the [rows, N] distance matrix
    const int64_t rows = std::min<int64_t>(1024, n - start);
    auto d = torch::cdist(e.narrow(0, start, rows), e);
    d.narrow(1, start, rows).fill_diagonal_(std::numeric_limits<double>::infinity());
    // Stable sort: equal distances keep code order, so the table does not depend on the topk algorithm.
    const auto idx =
        std::get<1>(d.sort(/*stable=*/true, 1, false)).narrow(1, 0, columns).to(torch::kInt32).contiguous();
    std::memcpy(t.table_.data() + start * columns, idx.data_ptr<int32_t>(), size_t(rows * columns) * sizeof(int32_t));
  }
  return t;
}

std::string CodebookNeighbours::default_cache_dir() {
  if (const char* v = std::getenv("VISPEC_CACHE")) return v;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::string(x) + "/vispec";
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.cache/vispec";
  return "";
}

CodebookNeighbours CodebookNeighbours::cached(const torch::Tensor& codebook, int64_t columns,
                                              const std::string& cache_dir) {
  if (cache_dir.empty()) return build(codebook, columns);
  const auto e = codebook.to(torch::kCPU, torch::kFloat32).contiguous();
  const uint64_t key = fnv1a(e.data_ptr<float>(), size_t(e.numel()) * sizeof(float));
  const std::string path = cache_dir + "/codebook-neighbours-" + fmt::format("{:016x}", key) + "-" +
                           std::to_string(e.size(0)) + "x" + std::to_string(columns) + ".npy";
  if (file_exists(path)) {
    std::vector<int64_t> shape;
    auto data = read_npy_int32(path, &shape);
    VISPEC_CHECK(shape == (std::vector<int64_t>{e.size(0), columns}), path, ": shape does not match its name");
    CodebookNeighbours t;
    t.codes_ = shape[0];
    t.columns_ = shape[1];
    t.table_ = std::move(data);
    const auto problem = t.disagrees_with(codebook);
    if (problem.empty()) return t;
    spdlog::warn("{}: not this codebook's neighbours ({}): built again", path, problem);
  }
  auto t = build(codebook, columns);
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  try {
    write_npy_int32(path, t.table_, {t.codes_, t.columns_});
    spdlog::info("cached the codebook neighbour table in {}", path);
  } catch (const std::exception& ex) {  // a read-only cache costs time, never a run
    spdlog::warn("could not cache the codebook neighbour table: {}", ex.what());
  }
  return t;
}

std::string CodebookNeighbours::disagrees_with(const torch::Tensor& codebook) const {
  const auto e = codebook.to(torch::kCPU, torch::kFloat64);
  if (e.size(0) != codes_) return std::to_string(codes_) + " codes, the codebook has " + std::to_string(e.size(0));
  for (const int32_t c : table_)
    if (c < 0 || c >= codes_) return "a code " + std::to_string(c) + " out of range";
  // Sixteen rows spread over the table: each row's codes are other codes than its own, distinct, in
  // ascending distance, and the first is at the nearest distance any other code has (within rounding: the
  // build's distances come from a block of rows, these from one).
  constexpr int64_t kRows = 16;
  for (int64_t i = 0; i < kRows; ++i) {
    const int64_t c = i * (codes_ - 1) / (kRows - 1);
    const auto d = (e - e[c]).pow(2).sum(1).sqrt();
    const auto dist = d.accessor<double, 1>();
    double nearest = std::numeric_limits<double>::infinity();
    for (int64_t o = 0; o < codes_; ++o)
      if (o != c) nearest = std::min(nearest, dist[o]);
    const int32_t* r = row(c);
    std::vector<int32_t> seen(r, r + columns_);
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())
      return "row " + std::to_string(c) + " repeats a code";
    const double tolerance = 1e-9 * std::max(1.0, nearest);
    for (int64_t j = 0; j < columns_; ++j) {
      if (r[j] == c) return "row " + std::to_string(c) + " holds its own code";
      if (j > 0 && dist[r[j]] < dist[r[j - 1]] - tolerance)
        return "row " + std::to_string(c) + " is not in ascending distance";
    }
    if (std::abs(dist[r[0]] - nearest) > tolerance)
      return "row " + std::to_string(c) + " does not start at the nearest code";
  }
  return "";
}

torch::Tensor CodebookNeighbours::tensor(torch::Device device) const {
  auto t = torch::from_blob(const_cast<int32_t*>(table_.data()), {codes_, columns_}, torch::kInt32);
  return t.to(device, torch::kInt64);
}

}  // namespace vispec
