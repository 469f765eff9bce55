// Thin RAII over the HDF5 C API (1.10): handles that close themselves, errors as one-line vispec::Error
// naming the file, and the few helpers the distillation files need. The C++ HDF5 wrapper is not used: it is
// not thread-safe either and hides the VDS calls we need.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vispec::h5 {

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  void reset();

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// Throws "<where>: HDF5 <what> failed: <cause>" when id < 0, the cause taken from HDF5's error stack (the
// system's message where a system call failed: "No space left on device"); HDF5's own printing of the stack
// is turned off.
hid_t check(hid_t id, const std::string& where, const char* what);
std::string error_cause();  // the current error stack's cause, as check() words it
void silence_errors();

Handle create_file(const std::string& path);  // truncates
Handle open_file(const std::string& path);    // read-only
Handle group(hid_t parent, const std::string& name, const std::string& where);

hid_t float16_type();  // IEEE half (little-endian), as h5py creates it; owned by this module

void attr_string(hid_t obj, const std::string& name, const std::string& value, const std::string& where);
void attr_int(hid_t obj, const std::string& name, int64_t value, const std::string& where);
void attr_double(hid_t obj, const std::string& name, double value, const std::string& where);

// A dataset of `type` and `dims`; chunk empty = contiguous; gzip > 0 adds shuffle + deflate (chunked only).
Handle create_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                      const std::vector<hsize_t>& chunk, int gzip, const std::string& where);
// Writes `data` (memory type = `type`) into rows [row, row + count) along the first dimension.
void write_rows(hid_t dataset, hid_t type, hsize_t row, hsize_t count, const void* data, const std::string& where);

}  // namespace vispec::h5
