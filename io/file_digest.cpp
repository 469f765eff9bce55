#include "io/file_digest.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/check.h"

namespace vispec {

void DigestBuilder::update(const void* data, size_t size) {
  const auto* p = static_cast<const Bytef*>(data);
  digest_.bytes += int64_t(size);
  uLong crc = digest_.crc32;
  while (size > 0) {  // zlib takes a uInt length
    const uInt n = uInt(std::min<size_t>(size, UINT_MAX));
    crc = ::crc32(crc, p, n);
    p += n;
    size -= n;
  }
  digest_.crc32 = uint32_t(crc);
}

void read_chunks(const std::string& path, const std::function<void(const char* data, size_t size)>& chunk) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VISPEC_CHECK(fd >= 0, path, ": cannot read: ", std::strerror(errno));
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      VISPEC_FAIL(path, ": read failed: ", std::strerror(err));
    }
    if (n == 0) break;
    try {
      chunk(buffer.data(), size_t(n));
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  ::close(fd);
}

FileDigest digest_file(const std::string& path) {
  DigestBuilder builder;
  read_chunks(path, [&](const char* data, size_t size) { builder.update(data, size); });
  return builder.digest();
}

uint64_t file_fnv(const std::string& path) {
  uint64_t h = kFnv1aBasis;
  read_chunks(path, [&](const char* data, size_t size) { h = fnv1a(data, size, h); });
  return h;
}

std::string crc32_hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", unsigned(crc));
  return buf;
}

bool parse_crc32_hex(const std::string& text, uint32_t& crc) {
  if (text.size() != 8) return false;
  uint32_t value = 0;
  for (const char c : text) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    value = value << 4 | uint32_t(d);
  }
  crc = value;
  return true;
}

}  // namespace vispec
