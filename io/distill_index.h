// OUT/distill/index.h5 (io/distill_schema.h): Virtual Datasets over the unit files of exactly the given units,
// plus the units table. Lengths come from the caller (the journal), so building it opens only the first unit
// file (for shapes and attributes), never all of them. Written under a temporary name and renamed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include <optional>

#include "io/file_digest.h"

namespace vispec {

struct DistillUnitRef {
  int64_t unit = 0;
  int64_t length = 0;              // samples (rows) in the unit file
  std::optional<FileDigest> file;  // its size and CRC-32 as journaled (absent: journaled by an older vispec)
};

// units ascending; those of length 0 have no rows and are listed in the table only. First checks every unit
// file's size against its journaled one (check_distill_unit_files).
void build_distill_index(const std::string& out_dir, const std::vector<DistillUnitRef>& units);

// Throws one line naming the first unit file that is missing or not its journaled size (deleted or truncated
// after its run), with the way out: `vispec verify OUT --repair`, then the rerun recomputes those units.
void check_distill_unit_files(const std::string& out_dir, const std::vector<DistillUnitRef>& units);

// Throws one line unless every virtual dataset of the index maps only the unit files of `units`, by their bare
// names (beside the index, in OUT/distill): an index whose mappings point anywhere else is not one vispec
// wrote for this run. (HDF5_VDS_PREFIX, which would move where HDF5 looks, is ignored: vispec's main unsets it.)
void check_index_mappings(const std::string& index_path, const std::vector<DistillUnitRef>& units);

// `vispec inspect`: the schema attributes, each dataset's shape, dtype, layout (chunked/virtual/contiguous)
// and filters, and the unit table's totals, as text.
std::string describe_h5(const std::string& path);

}  // namespace vispec
