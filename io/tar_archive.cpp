#include "io/tar_archive.h"

#include <cstdio>
#include <cstring>

#include "core/check.h"

namespace vispec {

namespace {
constexpr size_t kBlock = 512;
constexpr int64_t kMaxMember = int64_t(1) << 33;  // 11 octal digits: 8 GiB

// Header fields (offset, width) of the ustar format.
constexpr size_t kName = 0, kNameWidth = 100, kMode = 100, kUid = 108, kGid = 116, kSize = 124, kMtime = 136,
                 kChecksum = 148, kType = 156, kMagic = 257, kVersion = 263;

void put_octal(char* field, size_t width, int64_t value) {
  // width - 1 digits and a NUL, as tar writes them.
  std::snprintf(field, width, "%0*llo", int(width - 1), static_cast<unsigned long long>(value));
}

uint32_t header_sum(const char* h) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i)
    sum += (i >= kChecksum && i < kChecksum + 8) ? uint32_t(' ') : uint32_t(static_cast<unsigned char>(h[i]));
  return sum;
}

// An octal field, spaces and NULs around the digits allowed; -1 if it is not one.
int64_t read_octal(const char* field, size_t width) {
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  int64_t value = 0;
  size_t digits = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) value = value * 8 + (field[i] - '0');
  for (; i < width; ++i)
    if (field[i] != ' ' && field[i] != '\0') return -1;
  return digits > 0 ? value : -1;
}
}  // namespace

TarWriter::TarWriter(std::string path) : path_(std::move(path)), file_(path_) {}

void TarWriter::add(const std::string& name, const std::string& contents) {
  VISPEC_ASSERT(!name.empty() && name.size() <= kNameWidth && name[0] != '/' && name.find("..") == std::string::npos,
                "tar member name '", name, "'");
  VISPEC_ASSERT(int64_t(contents.size()) < kMaxMember, path_, ": a tar member of ", contents.size(), " bytes");
  char h[kBlock] = {};
  std::memcpy(h + kName, name.data(), name.size());
  put_octal(h + kMode, 8, 0644);
  put_octal(h + kUid, 8, 0);
  put_octal(h + kGid, 8, 0);
  put_octal(h + kSize, 12, int64_t(contents.size()));
  put_octal(h + kMtime, 12, 0);
  h[kType] = '0';
  std::memcpy(h + kMagic, "ustar", 6);  // with its NUL
  std::memcpy(h + kVersion, "00", 2);
  std::snprintf(h + kChecksum, 8, "%06o", header_sum(h));  // six digits, a NUL, then the space left in place
  h[kChecksum + 7] = ' ';
  file_.write(h, kBlock);
  file_.write(contents);
  const char zeros[kBlock] = {};
  if (contents.size() % kBlock != 0) file_.write(zeros, kBlock - contents.size() % kBlock);
}

FileDigest TarWriter::commit(bool sync_directory) {
  const char zeros[2 * kBlock] = {};
  file_.write(zeros, sizeof zeros);
  return file_.commit(sync_directory);
}

std::vector<TarMember> read_tar(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<TarMember> members;
  size_t at = 0;
  while (at + kBlock <= bytes.size()) {
    const char* h = bytes.data() + at;
    bool zero = true;
    for (size_t i = 0; i < kBlock && zero; ++i) zero = h[i] == '\0';
    if (zero) return members;  // the end-of-archive blocks
    const auto where = [&] { return path + ": the tar member at byte " + std::to_string(at); };
    VISPEC_CHECK(read_octal(h + kChecksum, 8) == int64_t(header_sum(h)), where(), ": bad header checksum");
    const int64_t size = read_octal(h + kSize, 12);
    VISPEC_CHECK(size >= 0 && uint64_t(size) <= bytes.size() - at - kBlock, where(), ": size ", size,
                 " runs past the end of the file");
    const char type = h[kType];
    TarMember m;
    m.name.assign(h + kName, strnlen(h + kName, kNameWidth));
    if (type == '0' || type == '\0') {
      m.contents = bytes.substr(at + kBlock, size_t(size));
      members.push_back(std::move(m));
    }
    at += kBlock + (size_t(size) + kBlock - 1) / kBlock * kBlock;
  }
  VISPEC_FAIL(path, ": the archive ends without its end-of-archive blocks (truncated?)");
}

}  // namespace vispec
