// OUT/distill/index.h5 (io/distill_schema.h): Virtual Datasets over the unit files of exactly the given units,
// plus the units table. Lengths come from the caller (the journal), so building it opens only the first unit
// file (for shapes and attributes), never all of them. Written under a temporary name and renamed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vispec {

struct DistillUnitRef {
  int64_t unit = 0;
  int64_t length = 0;  // samples (rows) in the unit file
};

// units ascending; those of length 0 have no rows and are listed in the table only.
void build_distill_index(const std::string& out_dir, const std::vector<DistillUnitRef>& units);

// `vispec inspect`: the schema attributes, each dataset's shape, dtype, layout (chunked/virtual/contiguous)
// and filters, and the unit table's totals, as text.
std::string describe_h5(const std::string& path);

}  // namespace vispec
