#include "io/npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

std::string encode_npy(const std::string& descr, const void* data, size_t bytes, const std::vector<int64_t>& shape) {
  std::string dims;
  for (auto d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n' must be a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(char(header.size() & 0xFF));
  out.push_back(char(header.size() >> 8));
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

FileDigest write_npy(const std::string& path, const std::string& descr, const void* data, size_t bytes,
                     const std::vector<int64_t>& shape, bool sync_directory) {
  return write_file_atomic(path, encode_npy(descr, data, bytes, shape), sync_directory);
}

FileDigest write_npy_int32(const std::string& path, const std::vector<int32_t>& data, const std::vector<int64_t>& shape,
                           bool sync_directory) {
  return write_npy(path, "<i4", data.data(), data.size() * sizeof(int32_t), shape, sync_directory);
}

std::vector<int32_t> read_npy_int32(const std::string& path, std::vector<int64_t>* shape) {
  const NpyArray a = read_npy(path);
  VISPEC_CHECK(a.descr == "<i4", path, ": expected int32 data, found '", a.descr, "'");
  if (shape) *shape = a.shape;
  std::vector<int32_t> out(size_t(a.elements()));
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

namespace {

// The value of `key` in a .npy header dict ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }).
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
  const auto at = header.find("'" + key + "'");
  VISPEC_CHECK(at != std::string::npos, path, ": .npy header has no '", key, "'");
  auto v = header.find(':', at);
  VISPEC_CHECK(v != std::string::npos, path, ": .npy header: malformed '", key, "'");
  v = header.find_first_not_of(' ', v + 1);
  VISPEC_CHECK(v != std::string::npos, path, ": .npy header: malformed '", key, "'");
  const char open = header[v];
  const auto end = open == '('    ? header.find(')', v + 1)
                   : open == '\'' ? header.find('\'', v + 1)
                                  : header.find_first_of(",}", v + 1);
  VISPEC_CHECK(end != std::string::npos, path, ": .npy header: malformed '", key, "'");
  return open == '(' || open == '\'' ? header.substr(v + 1, end - v - 1) : header.substr(v, end - v);
}

// Parses magic, version, header length and header; `bytes` holds at least the file's first bytes.
NpyArray parse_header(const std::string& bytes, const std::string& path, size_t* data_offset) {
  VISPEC_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, path, ": not a .npy file");
  const int major = uint8_t(bytes[6]);
  VISPEC_CHECK(major >= 1 && major <= 3, path, ": .npy format version ", major, " is not supported");
  size_t hlen = 0, start = 10;
  if (major == 1) {
    hlen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
  } else {
    VISPEC_CHECK(bytes.size() >= 12, path, ": truncated .npy header");
    for (int i = 0; i < 4; ++i) hlen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    start = 12;
  }
  VISPEC_CHECK(bytes.size() >= start + hlen, path, ": truncated .npy header");
  const std::string header = bytes.substr(start, hlen);
  NpyArray a;
  a.descr = header_value(header, "descr", path);
  VISPEC_CHECK(a.descr.size() >= 3 && (a.descr[0] == '<' || a.descr[0] == '|'), path, ": .npy dtype '", a.descr,
               "' is not little-endian");
  try {
    a.item_size = size_t(std::stoul(a.descr.substr(2)));
  } catch (const std::exception&) {
    VISPEC_FAIL(path, ": .npy dtype '", a.descr, "' is not supported");
  }
  VISPEC_CHECK(a.item_size >= 1 && a.item_size <= 16, path, ": .npy dtype '", a.descr, "' is not supported");
  VISPEC_CHECK(header_value(header, "fortran_order", path) == "False", path, ": .npy array is Fortran-ordered");
  const std::string dims = header_value(header, "shape", path);
  size_t pos = 0;
  while (pos < dims.size()) {
    const auto comma = dims.find(',', pos);
    const auto tok = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (tok.find_first_not_of(' ') != std::string::npos) {
      size_t used = 0;
      int64_t d = -1;
      try {
        d = std::stoll(tok, &used);
      } catch (const std::exception&) {
      }
      VISPEC_CHECK(d >= 0 && d < (int64_t(1) << 40), path, ": .npy shape (", dims, ") is not a shape");
      a.shape.push_back(d);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  VISPEC_CHECK(a.elements() >= 0 && size_t(a.elements()) <= (size_t(1) << 40) / a.item_size, path, ": .npy shape (",
               dims, ") is too large");
  *data_offset = start + hlen;
  return a;
}
}  // namespace

int64_t NpyArray::elements() const {
  int64_t n = 1;
  for (auto d : shape) {
    if (d != 0 && n > (int64_t(1) << 40) / d) return -1;
    n *= d;
  }
  return n;
}

NpyArray read_npy_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VISPEC_CHECK(in, path, ": cannot open");
  std::string head(65536 + 12, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  VISPEC_CHECK(!in.bad(), path, ": read failed: ", std::strerror(errno));  // not a "short header"
  head.resize(size_t(in.gcount()));
  size_t offset = 0;
  return parse_header(head, path, &offset);
}

NpyArray read_npy(const std::string& path) {
  std::string bytes = read_file(path);
  size_t offset = 0;
  NpyArray a = parse_header(bytes, path, &offset);
  const size_t want = size_t(a.elements()) * a.item_size;
  VISPEC_CHECK(bytes.size() - offset == want, path, ": .npy data is ", bytes.size() - offset, " bytes, its header (",
               a.descr, ", ", a.shape.size(), " dims) needs ", want);
  a.data = bytes.substr(offset);
  return a;
}

}  // namespace vispec
