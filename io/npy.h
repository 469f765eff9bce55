// NumPy .npy files (format 1.0), written atomically; readable by numpy.load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/file_digest.h"

namespace vispec {

FileDigest write_npy_int32(const std::string& path, const std::vector<int32_t>& data, const std::vector<int64_t>& shape,
                     bool sync_directory = true);
std::vector<int32_t> read_npy_int32(const std::string& path, std::vector<int64_t>* shape = nullptr);

}  // namespace vispec
