#include "io/distill_reader.h"

#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "io/h5.h"

namespace vispec {

namespace {
std::string read_string_attr(hid_t obj, const char* name, const std::string& where) {
  VISPEC_CHECK(H5Aexists(obj, name) > 0, where, ": attribute '", name, "' missing (not a vispec distillation file?)");
  h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  h5::Handle type(H5Aget_type(attr.get()), H5Tclose);
  h5::Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), H5T_VARIABLE);
  H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
  char* s = nullptr;
  h5::check(H5Aread(attr.get(), mem.get(), &s), where, "attribute read");
  std::string value = s ? s : "";
  H5free_memory(s);
  return value;
}

int64_t read_int_attr(hid_t obj, const char* name, const std::string& where) {
  VISPEC_CHECK(H5Aexists(obj, name) > 0, where, ": attribute '", name, "' missing (not a vispec distillation file?)");
  h5::Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  int64_t v = 0;
  h5::check(H5Aread(attr.get(), H5T_NATIVE_INT64, &v), where, "attribute read");
  return v;
}

std::vector<int64_t> read_column(hid_t file, const char* name, const std::string& where) {
  h5::Handle ds(h5::check(H5Dopen2(file, name, H5P_DEFAULT), where, name), H5Dclose);
  h5::Handle space(H5Dget_space(ds.get()), H5Sclose);
  std::vector<int64_t> v(size_t(H5Sget_simple_extent_npoints(space.get())));
  if (!v.empty()) h5::check(H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), where, name);
  return v;
}

// The stored type of /hidden must be what @dtype says: HDF5 would otherwise convert silently (float32 data
// read as bf16 bits would become garbage, not an error).
void check_stored_type(hid_t file, DistillDtype dtype, const std::string& where) {
  h5::Handle ds(h5::check(H5Dopen2(file, "hidden", H5P_DEFAULT), where, "hidden"), H5Dclose);
  h5::Handle type(H5Dget_type(ds.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t size = H5Tget_size(type.get());
  const bool ok = dtype == DistillDtype::kBFloat16 ? cls == H5T_INTEGER && size == 2
                                                   : cls == H5T_FLOAT && size == size_t(dtype_bytes(dtype));
  VISPEC_CHECK(ok, where, ": /hidden is stored as ",
               cls == H5T_FLOAT     ? "float"
               : cls == H5T_INTEGER ? "integer"
                                    : "other",
               size * 8, " but @dtype says ", dtype_name(dtype),
               dtype == DistillDtype::kBFloat16 ? " (bf16 is stored as uint16 bits)" : "");
}

// Reads rows [row, row + count) of a dataset into `out` (memory type `type`).
// Rows of `runs` ([first, first + count) each, ascending, disjoint) of one dataset, one read into `out`.
void read_rows(hid_t file, const char* name, hid_t type, const std::vector<RowRun>& runs, int64_t total, void* out,
               const std::string& where) {
  h5::Handle ds(h5::check(H5Dopen2(file, name, H5P_DEFAULT), where, name), H5Dclose);
  h5::Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), start(static_cast<size_t>(rank), 0);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  H5Sselect_none(space.get());
  for (const auto& run : runs) {
    start[0] = hsize_t(run.first);
    dims[0] = hsize_t(run.count);
    h5::check(H5Sselect_hyperslab(space.get(), H5S_SELECT_OR, start.data(), nullptr, dims.data(), nullptr), where,
              "hyperslab");
  }
  dims[0] = hsize_t(total);
  h5::Handle mem(H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
  if (total > 0) h5::check(H5Dread(ds.get(), type, mem.get(), space.get(), H5P_DEFAULT, out), where, name);
}
}  // namespace

DistillReader::DistillReader(const std::string& path) : path_(path) {
  h5::Handle file = h5::open_file(path);
  h5::Handle root(h5::check(H5Gopen2(file.get(), "/", H5P_DEFAULT), path, "root open"), H5Gclose);
  VISPEC_CHECK(read_string_attr(root.get(), "schema", path) == kDistillSchemaName, path,
               ": @schema is not 'vispec-distill'");
  const int64_t version = read_int_attr(root.get(), "version", path);
  VISPEC_CHECK(version == kDistillSchemaVersion, path, ": @version ", version, " (this vispec reads version ",
               kDistillSchemaVersion, ")");
  VISPEC_CHECK(H5Lexists(file.get(), "units", H5P_DEFAULT) > 0, path,
               ": no units table: pass an index.h5 (vispec distill-index OUT builds one), not a unit file");
  model_ = read_string_attr(root.get(), "model", path);
  grid_ = read_int_attr(root.get(), "grid_size", path);
  dim_ = read_int_attr(root.get(), "hidden_dim", path);
  rows_ = read_int_attr(root.get(), "samples", path);
  streams_ = read_string_attr(root.get(), "streams", path) == "cond,uncond" ? 2 : 1;
  const auto dtype = read_string_attr(root.get(), "dtype", path);
  VISPEC_CHECK(dtype == "fp32" || dtype == "fp16" || dtype == "bf16", path, ": @dtype '", dtype,
               "' is none of fp32, fp16, bf16");
  dtype_ = dtype == "fp32"   ? DistillDtype::kFloat32
           : dtype == "fp16" ? DistillDtype::kFloat16
                             : DistillDtype::kBFloat16;
  check_stored_type(file.get(), dtype_, path);
  const auto ids = read_column(file.get(), "units/unit", path), lengths = read_column(file.get(), "units/length", path);
  VISPEC_CHECK(lengths.size() == ids.size(), path, ": units/length and units/unit differ in length");
  // Indexes built before the table had sizes and CRC-32s lack these columns; their unit files go unchecked.
  std::vector<int64_t> bytes(ids.size(), -1), crcs(ids.size(), -1);
  if (H5Lexists(file.get(), "units/bytes", H5P_DEFAULT) > 0) {
    bytes = read_column(file.get(), "units/bytes", path);
    crcs = read_column(file.get(), "units/crc32", path);
    VISPEC_CHECK(bytes.size() == ids.size() && crcs.size() == ids.size(), path,
                 ": units/bytes or units/crc32 differ in length from units/unit");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    DistillUnitRef u{ids[i], lengths[i]};
    if (bytes[i] >= 0) u.file = FileDigest{bytes[i], uint32_t(crcs[i])};
    units_.push_back(u);
  }
  // A unit file deleted or truncated since the index was built would read as rows of zeros (HDF5 fills
  // unmapped virtual data): refuse it here, before any training step. The index sits in OUT/distill/.
  check_distill_unit_files(std::filesystem::absolute(path).parent_path().parent_path().string(), units_);
  check_index_mappings(path, units_);
}

DistillRows DistillReader::read(int64_t row, int64_t count) const {
  VISPEC_CHECK(row >= 0 && count >= 0 && row + count <= rows_, path_, ": rows [", row, ", ", row + count,
               ") outside [0, ", rows_, ")");
  return read_runs({{row, count}}, count);
}

DistillRows DistillReader::read(const std::vector<int64_t>& rows) const {
  std::vector<RowRun> runs;
  for (size_t i = 0; i < rows.size(); ++i) {
    VISPEC_CHECK(rows[i] >= 0 && rows[i] < rows_ && (i == 0 || rows[i] > rows[i - 1]), path_, ": row ", rows[i],
                 " outside [0, ", rows_, ") or out of order");
    if (!runs.empty() && runs.back().first + runs.back().count == rows[i]) ++runs.back().count;
    else runs.push_back({rows[i], 1});
  }
  return read_runs(runs, int64_t(rows.size()));
}

DistillRows DistillReader::read_runs(const std::vector<RowRun>& runs, int64_t count) const {
  h5::Handle file = h5::open_file(path_);
  DistillRows r;
  r.count = count;
  const size_t n_hidden = size_t(count * streams_ * positions() * dim_);
  r.hidden.resize(n_hidden);
  if (dtype_ == DistillDtype::kBFloat16) {  // widen the stored bits: bf16 is the top half of a float32
    std::vector<uint16_t> bits(n_hidden);
    read_rows(file.get(), "hidden", H5T_NATIVE_UINT16, runs, count, bits.data(), path_);
    for (size_t i = 0; i < n_hidden; ++i) {
      const uint32_t wide = uint32_t(bits[i]) << 16;
      std::memcpy(&r.hidden[i], &wide, sizeof(float));
    }
  } else {
    read_rows(file.get(), "hidden", H5T_NATIVE_FLOAT, runs, count, r.hidden.data(), path_);
  }
  r.tokens.resize(size_t(count * positions()));
  r.class_id.resize(size_t(count));
  r.sample_id.resize(size_t(count));
  read_rows(file.get(), "tokens", H5T_NATIVE_INT32, runs, count, r.tokens.data(), path_);
  read_rows(file.get(), "class_id", H5T_NATIVE_INT64, runs, count, r.class_id.data(), path_);
  read_rows(file.get(), "sample_id", H5T_NATIVE_INT64, runs, count, r.sample_id.data(), path_);
  return r;
}

}  // namespace vispec
