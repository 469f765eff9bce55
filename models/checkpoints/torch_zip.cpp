#include "models/checkpoints/torch_zip.h"

#include "core/check.h"
#include "io/file_digest.h"

namespace vispec {

namespace {
constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64End = 0x06064b50, kZip64Locator = 0x07064b50;

// Little-endian fields read only after a bounds check against the whole file.
class Bytes {
 public:
  Bytes(const uint8_t* data, uint64_t size, const std::string& path) : data_(data), size_(size), path_(path) {}
  void need(uint64_t at, uint64_t n, const char* what) const {
    VISPEC_CHECK(at <= size_ && n <= size_ - at, path_, ": corrupt zip: ", what, " at byte ", at,
                 " runs past the end (", size_, " bytes)");
  }
  uint64_t uint(uint64_t at, int n, const char* what) const {
    need(at, uint64_t(n), what);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | data_[at + uint64_t(i)];
    return v;
  }
  const uint8_t* at(uint64_t offset) const { return data_ + offset; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  const std::string& path_;
};
}  // namespace

std::map<std::string, ZipSpan> read_stored_zip(const uint8_t* bytes, uint64_t size, const std::string& path) {
  const Bytes b(bytes, size, path);
  // The end-of-central-directory record: 22 bytes plus a comment of up to 65535, found from the end.
  VISPEC_CHECK(size >= 22, path, ": not a zip file (", size, " bytes)");
  uint64_t end = size - 22;
  for (;; --end) {
    if (b.uint(end, 4, "end record") == kEndOfDirectory) break;
    VISPEC_CHECK(end > 0 && size - end < 22 + 65536, path, ": not a zip file (no end of central directory)");
  }
  uint64_t entries = b.uint(end + 10, 2, "end record"), dir_size = b.uint(end + 12, 4, "end record"),
           dir_offset = b.uint(end + 16, 4, "end record");
  if (end >= 20 && b.uint(end - 20, 4, "zip64 locator") == kZip64Locator) {
    const uint64_t end64 = b.uint(end - 12, 8, "zip64 locator");
    VISPEC_CHECK(b.uint(end64, 4, "zip64 end record") == kZip64End, path, ": corrupt zip: no zip64 end record");
    entries = b.uint(end64 + 32, 8, "zip64 end record");
    dir_size = b.uint(end64 + 40, 8, "zip64 end record");
    dir_offset = b.uint(end64 + 48, 8, "zip64 end record");
  }
  b.need(dir_offset, dir_size, "central directory");
  std::map<std::string, ZipSpan> out;
  uint64_t at = dir_offset;
  for (uint64_t i = 0; i < entries; ++i) {
    VISPEC_CHECK(b.uint(at, 4, "central directory") == kCentralHeader, path, ": corrupt zip: entry ", i,
                 " of the central directory has no signature");
    const uint64_t flags = b.uint(at + 8, 2, "entry"), method = b.uint(at + 10, 2, "entry");
    const uint32_t crc = uint32_t(b.uint(at + 16, 4, "entry"));
    uint64_t packed = b.uint(at + 20, 4, "entry"), unpacked = b.uint(at + 24, 4, "entry");
    const uint64_t name_len = b.uint(at + 28, 2, "entry"), extra_len = b.uint(at + 30, 2, "entry"),
                   comment_len = b.uint(at + 32, 2, "entry");
    uint64_t local = b.uint(at + 42, 4, "entry");
    b.need(at + 46, name_len + extra_len + comment_len, "entry name");
    const std::string name(reinterpret_cast<const char*>(b.at(at + 46)), name_len);
    // ZIP64: the 64-bit values of the fields saturated at 0xFFFFFFFF follow in extra field 0x0001, in order.
    for (uint64_t e = at + 46 + name_len; e + 4 <= at + 46 + name_len + extra_len;) {
      const uint64_t id = b.uint(e, 2, "extra field"), len = b.uint(e + 2, 2, "extra field");
      if (id == 0x0001) {
        uint64_t f = e + 4;
        for (uint64_t* field : {&unpacked, &packed, &local})
          if (*field == 0xFFFFFFFF && f + 8 <= e + 4 + len) {
            *field = b.uint(f, 8, "zip64 field");
            f += 8;
          }
      }
      e += 4 + len;
    }
    VISPEC_CHECK(method == 0 && packed == unpacked, path, ": entry '", name, "' is compressed (method ", method,
                 "); torch.save stores entries uncompressed");
    VISPEC_CHECK((flags & 1) == 0, path, ": entry '", name, "' is encrypted");
    VISPEC_CHECK(b.uint(local, 4, "local header") == kLocalHeader, path, ": corrupt zip: entry '", name,
                 "' has no local header");
    const uint64_t data = local + 30 + b.uint(local + 26, 2, "local header") + b.uint(local + 28, 2, "local header");
    b.need(data, packed, ("entry '" + name + "'").c_str());
    VISPEC_CHECK(out.emplace(name, ZipSpan{b.at(data), packed, crc}).second, path, ": entry '", name,
                 "' appears twice");
    at += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

void check_zip_crc(const ZipSpan& span, const std::string& path, const std::string& name) {
  DigestBuilder digest;
  digest.update(span.data, span.size);
  VISPEC_CHECK(digest.digest().crc32 == span.crc32, path, ": entry '", name, "' is damaged (CRC-32 ",
               crc32_hex(digest.digest().crc32), ", recorded ", crc32_hex(span.crc32), ")");
}

}  // namespace vispec
