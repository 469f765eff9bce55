// Reading distillation data for training (io/distill_schema.h): everything through OUT/distill/index.h5, whose
// virtual datasets span the unit files, so a reader learns every length from the unit table without opening
// the unit files and reads any row range with one call. Hidden states come back as float32 whatever the
// stored dtype (bf16 bits widened, fp16 converted by HDF5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/distill_index.h"
#include "io/distill_schema.h"

namespace vispec {

struct DistillRows {
  int64_t count = 0;
  std::vector<float> hidden;       // [count, S, T, D]
  std::vector<int32_t> tokens;     // [count, T]
  std::vector<int64_t> class_id;   // [count]
  std::vector<int64_t> sample_id;  // [count]
};

struct RowRun {  // rows [first, first + count)
  int64_t first = 0, count = 0;
};

class DistillReader {
 public:
  explicit DistillReader(const std::string& index_path);  // throws one line naming the file on a bad index

  const std::string& path() const { return path_; }
  int64_t rows() const { return rows_; }
  int streams() const { return streams_; }
  int64_t grid_size() const { return grid_; }
  int64_t positions() const { return grid_ * grid_; }
  int64_t hidden_dim() const { return dim_; }
  DistillDtype dtype() const { return dtype_; }
  const std::string& model() const { return model_; }
  const std::vector<DistillUnitRef>& units() const { return units_; }

  DistillRows read(int64_t row, int64_t count) const;  // rows [row, row + count)
  // The given rows (ascending, no repeats), in that order: one read per dataset, runs of adjacent rows merged.
  DistillRows read(const std::vector<int64_t>& rows) const;

 private:
  DistillRows read_runs(const std::vector<RowRun>& runs, int64_t count) const;

  std::string path_, model_;
  int64_t rows_ = 0, grid_ = 0, dim_ = 0;
  int streams_ = 1;
  DistillDtype dtype_ = DistillDtype::kBFloat16;
  std::vector<DistillUnitRef> units_;
};

}  // namespace vispec
