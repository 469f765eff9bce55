#include "io/npy.h"

#include <cstring>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

FileDigest write_npy_int32(const std::string& path, const std::vector<int32_t>& data, const std::vector<int64_t>& shape,
                     bool sync_directory) {
  std::string dims;
  for (auto d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n' must be a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(char(header.size() & 0xFF));
  out.push_back(char(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(int32_t));
  return write_file_atomic(path, out, sync_directory);
}

std::vector<int32_t> read_npy_int32(const std::string& path, std::vector<int64_t>* shape) {
  const std::string bytes = read_file(path);
  VISPEC_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, path, ": not a .npy file");
  const size_t hlen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
  const std::string header = bytes.substr(10, hlen);
  VISPEC_CHECK(header.find("'<i4'") != std::string::npos, path, ": expected int32 data");
  if (shape) {
    shape->clear();
    const auto open = header.find('('), close = header.find(')');
    std::string dims = header.substr(open + 1, close - open - 1);
    size_t start = 0;
    while (start < dims.size()) {
      auto comma = dims.find(',', start);
      auto tok = dims.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (tok.find_first_not_of(' ') != std::string::npos) shape->push_back(std::stoll(tok));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::vector<int32_t> out((bytes.size() - 10 - hlen) / sizeof(int32_t));
  std::memcpy(out.data(), bytes.data() + 10 + hlen, out.size() * sizeof(int32_t));
  return out;
}

}  // namespace vispec
