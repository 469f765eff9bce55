#include "io/h5.h"

#include "core/check.h"

namespace vispec::h5 {

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && close_) close_(id_);
  id_ = -1;
}

namespace {
// HDF5 1.10 closes every file still open at exit (H5_term_library, registered with atexit), and a file whose
// close failed (a full disk: the final flush cannot be written) makes that pass segfault. vispec closes its
// files itself (RAII handles), so the library is told before its first call not to register it; the
// process's exit releases what a failed close left behind.
[[maybe_unused]] const bool kNoAtExit = [] {
  H5dont_atexit();
  return true;
}();

herr_t keep_cause(unsigned n, const H5E_error2_t* e, void* data) {
  auto& cause = *static_cast<std::string*>(data);
  const std::string desc = e->desc ? e->desc : "";
  // The system's own words where a call failed ("... errno = 28, error message = 'No space left on
  // device', ..."); else the innermost entry's description up to its details.
  const std::string key = "error message = '";
  if (const auto p = desc.find(key); p != std::string::npos) {
    cause = desc.substr(p + key.size(), desc.find('\'', p + key.size()) - p - key.size());
    return 1;  // stop walking
  }
  if (n == 0) cause = desc.substr(0, desc.find(':'));
  return 0;
}
}  // namespace

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string error_cause() {
  std::string cause;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_cause, &cause);
  return cause;
}

hid_t check(hid_t id, const std::string& where, const char* what) {
  if (id < 0) {
    const auto cause = error_cause();
    VISPEC_FAIL(where, ": HDF5 ", what, " failed", cause.empty() ? "" : ": " + cause);
  }
  return id;
}

namespace {
// File access without HDF5's own file locks. vispec already keeps one writer per file (a unit's file is
// written by the worker that owns the unit, under a temporary name; index.h5 by the run that holds OUT's
// lock), and on a file system without locks (NFS without a lock manager) HDF5's lock fails every open.
Handle unlocked_access() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl.get(), /*use_file_locking=*/false, /*ignore_when_disabled=*/true);
#endif
  return fapl;
}
}  // namespace

Handle create_file(const std::string& path) {
  silence_errors();
  const auto fapl = unlocked_access();
  return {check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), path, "file create"), H5Fclose};
}

Handle open_file(const std::string& path) {
  silence_errors();
  const auto fapl = unlocked_access();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) {  // the cause says which: a read that failed, or bytes that are not HDF5's
    const auto cause = error_cause();
    VISPEC_FAIL(path, ": HDF5 open failed: ", cause.empty() ? "not an HDF5 file?" : cause);
  }
  return {id, H5Fclose};
}

Handle group(hid_t parent, const std::string& name, const std::string& where) {
  Handle props(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_obj_track_times(props.get(), false);
  return {check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, props.get(), H5P_DEFAULT), where, "group create"),
          H5Gclose};
}

hid_t float16_type() {
  static const hid_t type = [] {
    const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(t, 15, 10, 5, 0, 10);  // sign bit, exponent at 10 (5 bits), mantissa at 0 (10 bits)
    H5Tset_size(t, 2);
    H5Tset_ebias(t, 15);
    return t;
  }();
  return type;
}

namespace {
void write_attr(hid_t obj, const std::string& name, hid_t type, const void* value, const std::string& where) {
  Handle space(check(H5Screate(H5S_SCALAR), where, "dataspace"), H5Sclose);
  Handle attr(
      check(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), where, "attribute create"),
      H5Aclose);
  check(H5Awrite(attr.get(), type, value), where, "attribute write");
}
}  // namespace

void attr_string(hid_t obj, const std::string& name, const std::string& value, const std::string& where) {
  // Variable-length UTF-8: h5py returns it as str (a fixed-length string would come back as bytes).
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  const char* text = value.c_str();
  write_attr(obj, name, type.get(), &text, where);
}

void attr_int(hid_t obj, const std::string& name, int64_t value, const std::string& where) {
  write_attr(obj, name, H5T_NATIVE_INT64, &value, where);
}

void attr_double(hid_t obj, const std::string& name, double value, const std::string& where) {
  write_attr(obj, name, H5T_NATIVE_DOUBLE, &value, where);
}

Handle create_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                      const std::vector<hsize_t>& chunk, int gzip, const std::string& where) {
  Handle space(check(H5Screate_simple(int(dims.size()), dims.data(), nullptr), where, "dataspace"), H5Sclose);
  Handle props(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(props.get(), false);  // no timestamps: a recomputed unit file equals the first, byte for byte
  if (!chunk.empty()) {
    check(H5Pset_chunk(props.get(), int(chunk.size()), chunk.data()), where, "chunking");
    if (gzip > 0) {
      H5Pset_shuffle(props.get());
      check(H5Pset_deflate(props.get(), unsigned(gzip)), where, "gzip");
    }
  }
  return {check(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT, props.get(), H5P_DEFAULT), where,
                ("dataset create " + name).c_str()),
          H5Dclose};
}

void write_rows(hid_t dataset, hid_t type, hsize_t row, hsize_t count, const void* data, const std::string& where) {
  Handle file_space(check(H5Dget_space(dataset), where, "dataspace"), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(file_space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), start(static_cast<size_t>(rank), 0);
  H5Sget_simple_extent_dims(file_space.get(), dims.data(), nullptr);
  start[0] = row;
  dims[0] = count;
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, dims.data(), nullptr), where,
        "hyperslab");
  Handle mem_space(check(H5Screate_simple(rank, dims.data(), nullptr), where, "dataspace"), H5Sclose);
  check(H5Dwrite(dataset, type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), where, "write");
}

}  // namespace vispec::h5
