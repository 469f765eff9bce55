// NumPy .npy files (format 1.0), written atomically; readable by numpy.load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/file_digest.h"

namespace vispec {

// `bytes` of C-ordered data of numpy dtype `descr` ("<i4", "<f4", ...) and the given shape: the file's bytes,
// or the file.
std::string encode_npy(const std::string& descr, const void* data, size_t bytes, const std::vector<int64_t>& shape);
FileDigest write_npy(const std::string& path, const std::string& descr, const void* data, size_t bytes,
                     const std::vector<int64_t>& shape, bool sync_directory = true);
FileDigest write_npy_int32(const std::string& path, const std::vector<int32_t>& data, const std::vector<int64_t>& shape,
                           bool sync_directory = true);
std::vector<int32_t> read_npy_int32(const std::string& path, std::vector<int64_t>* shape = nullptr);

// Any C-ordered little-endian array ('<f4', '<f2', '<i8', '|u1', ...): its header, and the raw data after it.
struct NpyArray {
  std::string descr;  // numpy's dtype string, e.g. "<f4"
  std::vector<int64_t> shape;
  size_t item_size = 0;  // bytes per element, from descr
  std::string data;      // item_size * prod(shape) bytes (read_npy only)
  int64_t elements() const;
};
// The header alone (reads the first bytes of the file). Throws an Error naming the file on anything that is
// not a well-formed version 1-3 .npy header of a C-ordered little-endian or single-byte array.
NpyArray read_npy_header(const std::string& path);
// Header and data; the data's size must match the header.
NpyArray read_npy(const std::string& path);

}  // namespace vispec
