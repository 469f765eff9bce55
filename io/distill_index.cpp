#include "io/distill_index.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <set>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/distill_schema.h"
#include "io/h5.h"
#include "io/unit_files.h"

namespace vispec {

namespace {
constexpr const char* kRowDatasets[] = {"hidden", "tokens", "class_id", "sample_id"};

std::string unit_file_name(int64_t unit) {
  return std::filesystem::path(distill_unit_path("", unit)).filename().string();
}

// Copies every root attribute of `from` to `to` except those named in `skip`, bytes as stored.
void copy_root_attributes(hid_t from_file, hid_t to, const std::vector<std::string>& skip, const std::string& where) {
  h5::Handle root(h5::check(H5Gopen2(from_file, "/", H5P_DEFAULT), where, "root open"), H5Gclose);
  const hid_t from = root.get();
  const hsize_t n = hsize_t(std::max(0, H5Aget_num_attrs(from)));
  for (hsize_t i = 0; i < n; ++i) {
    h5::Handle attr(h5::check(H5Aopen_by_idx(from, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), where,
                              "attribute open"),
                    H5Aclose);
    char name[256];
    H5Aget_name(attr.get(), sizeof(name), name);
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
    h5::Handle type(H5Aget_type(attr.get()), H5Tclose), space(H5Aget_space(attr.get()), H5Sclose);
    // Scalar attributes only: a number, or a variable-length string read as one char* (freed below).
    std::vector<char> bytes(std::max<size_t>(H5Tget_size(type.get()), sizeof(char*)), 0);
    h5::check(H5Aread(attr.get(), type.get(), bytes.data()), where, "attribute read");
    const bool vlen_string = H5Tis_variable_str(type.get()) > 0;
    h5::Handle out(
        h5::check(H5Acreate2(to, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), where, "attribute create"),
        H5Aclose);
    h5::check(H5Awrite(out.get(), type.get(), bytes.data()), where, "attribute write");
    if (vlen_string) H5free_memory(*reinterpret_cast<char**>(bytes.data()));
  }
}

void write_table_column(hid_t group, const char* name, const std::vector<int64_t>& values, const std::string& where) {
  auto ds = h5::create_dataset(group, name, H5T_STD_I64LE, {hsize_t(values.size())}, {}, 0, where);
  if (!values.empty()) h5::write_rows(ds.get(), H5T_NATIVE_INT64, 0, values.size(), values.data(), where);
}
}  // namespace

namespace {
// What a row of the index reads as when its unit file is missing (moved, deleted): a value no row of data can
// hold, never zeros that look like data. Floats NaN, bf16 states stored as uint16 bf16's NaN (0x7FC0), signed
// integers (tokens, ids, classes) -1.
void set_missing_fill(hid_t dcpl, hid_t type, bool bf16, const std::string& path) {
  herr_t status = 0;
  if (H5Tget_class(type) == H5T_FLOAT) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    status = H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &nan);
  } else if (H5Tget_class(type) == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_NONE) {
    const uint16_t bf16_nan = 0x7FC0;
    const unsigned long long all_ones = ~0ull;
    status = bf16 ? H5Pset_fill_value(dcpl, H5T_NATIVE_UINT16, &bf16_nan)
                  : H5Pset_fill_value(dcpl, H5T_NATIVE_ULLONG, &all_ones);
  } else if (H5Tget_class(type) == H5T_INTEGER) {
    const long long minus_one = -1;
    status = H5Pset_fill_value(dcpl, H5T_NATIVE_LLONG, &minus_one);
  }
  VISPEC_CHECK(status >= 0, path, ": HDF5 fill value failed");
}
}  // namespace

std::string distill_unit_path(const std::string& out_dir, int64_t unit) {
  return out_dir + fmt::format("/distill/unit-{:06d}.h5", unit);
}
std::string distill_index_path(const std::string& out_dir) { return out_dir + "/distill/index.h5"; }

void check_distill_unit_files(const std::string& out_dir, const std::vector<DistillUnitRef>& units) {
  for (const auto& u : units) {
    if (!u.file) continue;
    const auto problem = check_unit_file(out_dir, {"distill/" + unit_file_name(u.unit), *u.file}, false);
    VISPEC_CHECK(problem.empty(), problem, " (changed after its unit was journaled): `vispec verify ", out_dir,
                 " --repair`, then rerun the job to recompute the broken units");
  }
}

void build_distill_index(const std::string& out_dir, const std::vector<DistillUnitRef>& units) {
  check_distill_unit_files(out_dir, units);
  const std::string path = distill_index_path(out_dir), tmp = path + ".tmp." + std::to_string(::getpid());
  int64_t total = 0;
  for (const auto& u : units) total += u.length;
  {
    h5::Handle index = h5::create_file(tmp);
    std::vector<int64_t> ids, offsets, lengths, bytes, crcs;
    for (const auto& u : units) {
      ids.push_back(u.unit);
      offsets.push_back(offsets.empty() ? 0 : offsets.back() + lengths.back());
      lengths.push_back(u.length);
      bytes.push_back(u.file ? u.file->bytes : -1);
      crcs.push_back(u.file ? int64_t(u.file->crc32) : -1);
    }
    auto table = h5::group(index.get(), "units", path);
    write_table_column(table.get(), "unit", ids, path);
    write_table_column(table.get(), "offset", offsets, path);
    write_table_column(table.get(), "length", lengths, path);
    write_table_column(table.get(), "bytes", bytes, path);
    write_table_column(table.get(), "crc32", crcs, path);
    {
      h5::Handle str(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(str.get(), H5T_VARIABLE);
      std::vector<std::string> names;
      std::vector<const char*> ptrs;
      for (const auto& u : units) names.push_back(unit_file_name(u.unit));
      for (const auto& n : names) ptrs.push_back(n.c_str());
      auto files = h5::create_dataset(table.get(), "file", str.get(), {hsize_t(units.size())}, {}, 0, path);
      if (!ptrs.empty()) h5::write_rows(files.get(), str.get(), 0, ptrs.size(), ptrs.data(), path);
    }
    h5::attr_int(index.get(), "units", int64_t(units.size()), path);
    h5::attr_int(index.get(), "samples", total, path);

    // Shapes, types and attributes from the first unit file with rows; the rest are mapped, not opened.
    const DistillUnitRef* first = nullptr;
    for (const auto& u : units)
      if (u.length > 0 && !first) first = &u;
    if (first) {
      const std::string first_path = distill_unit_path(out_dir, first->unit);
      h5::Handle src = h5::open_file(first_path);
      copy_root_attributes(src.get(), index.get(), {"unit", "samples"}, path);
      for (const char* name : kRowDatasets) {
        h5::Handle ds(h5::check(H5Dopen2(src.get(), name, H5P_DEFAULT), first_path, "dataset open"), H5Dclose);
        h5::Handle type(H5Dget_type(ds.get()), H5Tclose), space(H5Dget_space(ds.get()), H5Sclose);
        const int rank = H5Sget_simple_extent_ndims(space.get());
        std::vector<hsize_t> dims(static_cast<size_t>(rank));
        H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
        dims[0] = hsize_t(total);
        h5::Handle vspace(H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
        h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
        H5Pset_obj_track_times(dcpl.get(), false);  // a rebuilt index equals the first, byte for byte
        set_missing_fill(dcpl.get(), type.get(), H5Aexists(ds.get(), "dtype") > 0, path);
        for (size_t i = 0; i < units.size(); ++i) {
          if (lengths[i] == 0) continue;
          std::vector<hsize_t> start(static_cast<size_t>(rank), 0), count = dims;
          start[0] = hsize_t(offsets[i]);
          count[0] = hsize_t(lengths[i]);
          H5Sselect_hyperslab(vspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
          h5::Handle src_space(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
          // Relative to the index's directory: the output directory can move as a whole.
          h5::check(H5Pset_virtual(dcpl.get(), vspace.get(), unit_file_name(units[i].unit).c_str(),
                                   (std::string("/") + name).c_str(), src_space.get()),
                    path, "virtual mapping");
        }
        H5Sselect_all(vspace.get());
        h5::Handle vds(
            h5::check(H5Dcreate2(index.get(), name, type.get(), vspace.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                      path, "virtual dataset create"),
            H5Dclose);
        if (std::string(name) == "hidden") {  // carry the bf16 marker
          if (H5Aexists(ds.get(), "dtype") > 0) h5::attr_string(vds.get(), "dtype", "bfloat16", path);
        }
      }
    }
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  VISPEC_CHECK(fd >= 0 && ::fsync(fd) == 0, path, ": fsync failed");
  ::close(fd);
  VISPEC_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, path, ": rename failed");
  fsync_directory(out_dir + "/distill");
}

void check_index_mappings(const std::string& index_path, const std::vector<DistillUnitRef>& units) {
  std::set<std::string> allowed;
  for (const auto& u : units) allowed.insert(unit_file_name(u.unit));
  h5::Handle file = h5::open_file(index_path);
  for (const char* name : kRowDatasets) {
    if (H5Lexists(file.get(), name, H5P_DEFAULT) <= 0) continue;
    h5::Handle ds(h5::check(H5Dopen2(file.get(), name, H5P_DEFAULT), index_path, "dataset open"), H5Dclose);
    h5::Handle dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
    if (H5Pget_layout(dcpl.get()) != H5D_VIRTUAL) continue;
    size_t count = 0;
    h5::check(H5Pget_virtual_count(dcpl.get(), &count), index_path, "virtual mapping count");
    for (size_t i = 0; i < count; ++i) {
      const ssize_t n = H5Pget_virtual_filename(dcpl.get(), i, nullptr, 0);
      std::string source(size_t(std::max<ssize_t>(n, 0)) + 1, '\0');
      if (n > 0) H5Pget_virtual_filename(dcpl.get(), i, source.data(), source.size());
      source.resize(size_t(std::max<ssize_t>(n, 0)));
      VISPEC_CHECK(allowed.count(source) == 1, index_path, ": dataset '", name, "' maps '", source,
                   "', which is not a journaled unit file beside the index: not an index vispec wrote for this run");
    }
  }
}

std::string describe_h5(const std::string& path) {
  h5::Handle file = h5::open_file(path);
  std::string out = path + "\n";
  // Root attributes.
  h5::Handle root(h5::check(H5Gopen2(file.get(), "/", H5P_DEFAULT), path, "root open"), H5Gclose);
  const hsize_t n_attr = hsize_t(std::max(0, H5Aget_num_attrs(root.get())));
  for (hsize_t i = 0; i < n_attr; ++i) {
    h5::Handle attr(H5Aopen_by_idx(root.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    char name[256];
    H5Aget_name(attr.get(), sizeof(name), name);
    h5::Handle type(H5Aget_type(attr.get()), H5Tclose);
    std::string value;
    if (H5Tget_class(type.get()) == H5T_STRING) {
      char* s = nullptr;
      h5::Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      if (H5Aread(attr.get(), mem.get(), &s) >= 0 && s) {
        value = s;
        H5free_memory(s);
      }
    } else if (H5Tget_class(type.get()) == H5T_FLOAT) {
      double d = 0;
      H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &d);
      value = fmt::format("{}", d);
    } else {
      int64_t v = 0;
      H5Aread(attr.get(), H5T_NATIVE_INT64, &v);
      value = std::to_string(v);
    }
    out += fmt::format("  @{} = {}\n", name, value);
  }
  // Datasets, at the root and one group down (units/).
  auto describe_dataset = [&](hid_t parent, const std::string& name, const std::string& shown) {
    h5::Handle ds(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (ds.get() < 0) return;
    h5::Handle type(H5Dget_type(ds.get()), H5Tclose), space(H5Dget_space(ds.get()), H5Sclose),
        dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    std::string shape;
    for (auto d : dims) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    const auto cls = H5Tget_class(type.get());
    const size_t size = H5Tget_size(type.get());
    std::string dtype = cls == H5T_FLOAT ? fmt::format("float{}", 8 * size)
                        : cls == H5T_INTEGER
                            ? fmt::format("{}int{}", H5Tget_sign(type.get()) == H5T_SGN_NONE ? "u" : "", 8 * size)
                        : cls == H5T_STRING ? std::string("string")
                                            : std::string("other");
    if (H5Aexists(ds.get(), "dtype") > 0) dtype += " (holds bfloat16 bits)";
    std::string layout;
    switch (H5Pget_layout(dcpl.get())) {
      case H5D_CHUNKED: {
        std::vector<hsize_t> chunk(static_cast<size_t>(rank));
        H5Pget_chunk(dcpl.get(), rank, chunk.data());
        std::string c;
        size_t bytes = size;
        for (auto d : chunk) {
          c += (c.empty() ? "" : ", ") + std::to_string(d);
          bytes *= d;
        }
        layout = fmt::format("chunked [{}] ({:.1f} KiB)", c, double(bytes) / 1024);
        if (H5Pget_nfilters(dcpl.get()) > 0) layout += ", compressed";
        break;
      }
      case H5D_VIRTUAL: {
        size_t count = 0;
        H5Pget_virtual_count(dcpl.get(), &count);
        layout = fmt::format("virtual over {} unit files", count);
        break;
      }
      default: layout = "contiguous";
    }
    out += fmt::format("  {} [{}] {} {}\n", shown, shape, dtype, layout);
  };
  for (const char* name : kRowDatasets) describe_dataset(file.get(), name, name);
  if (H5Lexists(file.get(), "units", H5P_DEFAULT) > 0) {
    h5::Handle g(H5Gopen2(file.get(), "units", H5P_DEFAULT), H5Gclose);
    for (const char* name : {"unit", "offset", "length", "file"})
      describe_dataset(g.get(), name, std::string("units/") + name);
  }
  return out;
}

}  // namespace vispec
