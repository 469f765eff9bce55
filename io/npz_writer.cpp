#include "io/npz_writer.h"

#include "core/check.h"
#include "io/npy.h"

namespace vispec {

namespace {

constexpr char kMember[] = "arr_0.npy";
constexpr uint16_t kVersion = 45;                    // 4.5: ZIP64
constexpr uint16_t kDataDescriptor = 0x0008;         // general purpose flag bit 3: CRC and sizes after the data
constexpr uint16_t kDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, the zip epoch: the same bytes every time
constexpr uint32_t kFar = 0xFFFFFFFFu;               // "see the ZIP64 extra field"

// Little-endian fields appended to a record.
struct Record {
  std::string bytes;
  Record& u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) bytes.push_back(char((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Record& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(char((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Record& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(char((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Record& text(const std::string& s) {
    bytes += s;
    return *this;
  }
};

// The ZIP64 extra field of a member: its uncompressed and compressed sizes (equal: stored).
std::string zip64_sizes(uint64_t size) { return Record().u16(0x0001).u16(16).u64(size).u64(size).bytes; }

}  // namespace

NpzWriter::NpzWriter(std::string path, const std::string& descr, int64_t item_size, const std::vector<int64_t>& shape)
    : path_(std::move(path)), file_(path_) {
  uint64_t elements = 1;
  for (const auto d : shape) {
    VISPEC_CHECK(d >= 0, path_, ": a negative dimension");
    elements *= uint64_t(d);
  }
  const auto header = encode_npy(descr, nullptr, 0, shape);
  expected_ = header.size() + elements * uint64_t(item_size);
  const std::string name = kMember;
  const auto local = Record()
                         .u32(0x04034b50)
                         .u16(kVersion)
                         .u16(kDataDescriptor)
                         .u16(0)  // stored
                         .u16(0)
                         .u16(kDate)
                         .u32(0)  // CRC-32: in the data descriptor
                         .u32(kFar)
                         .u32(kFar)
                         .u16(uint16_t(name.size()))
                         .u16(20)
                         .text(name)
                         .text(zip64_sizes(expected_));
  file_.write(local.bytes);
  file_.write(header);
  member_.update(header.data(), header.size());
  written_ = header.size();
}

void NpzWriter::write(const void* data, size_t size) {
  VISPEC_CHECK(written_ + size <= expected_, path_, ": more data than the array's shape holds");
  file_.write(data, size);
  member_.update(data, size);
  written_ += size;
}

FileDigest NpzWriter::commit() {
  VISPEC_CHECK(written_ == expected_, path_, ": ", expected_ - written_, " bytes of the array were not written");
  const uint32_t crc = member_.digest().crc32;
  const std::string name = kMember;
  const uint64_t local_size = 30 + name.size() + 20, descriptor_size = 24;
  file_.write(Record().u32(0x08074b50).u32(crc).u64(expected_).u64(expected_).bytes);
  const uint64_t directory_at = local_size + expected_ + descriptor_size;
  const auto central = Record()
                           .u32(0x02014b50)
                           .u16(kVersion)  // made by
                           .u16(kVersion)  // needed
                           .u16(kDataDescriptor)
                           .u16(0)
                           .u16(0)
                           .u16(kDate)
                           .u32(crc)
                           .u32(kFar)
                           .u32(kFar)
                           .u16(uint16_t(name.size()))
                           .u16(20)
                           .u16(0)  // comment
                           .u16(0)  // disk
                           .u16(0)  // internal attributes
                           .u32(0)  // external attributes
                           .u32(0)  // the member's local header: at offset 0
                           .text(name)
                           .text(zip64_sizes(expected_));
  const uint64_t directory_size = central.bytes.size(), end64_at = directory_at + directory_size;
  const auto end64 = Record()
                         .u32(0x06064b50)
                         .u64(44)  // the record's size after this field
                         .u16(kVersion)
                         .u16(kVersion)
                         .u32(0)
                         .u32(0)
                         .u64(1)
                         .u64(1)
                         .u64(directory_size)
                         .u64(directory_at);
  const auto locator = Record().u32(0x07064b50).u32(0).u64(end64_at).u32(1);
  const auto end = Record()
                       .u32(0x06054b50)
                       .u16(0)
                       .u16(0)
                       .u16(1)
                       .u16(1)
                       .u32(uint32_t(directory_size))
                       .u32(directory_at < kFar ? uint32_t(directory_at) : kFar)
                       .u16(0);  // comment
  file_.write(central.bytes + end64.bytes + locator.bytes + end.bytes);
  return file_.commit();
}

}  // namespace vispec
