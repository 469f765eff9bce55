#include "models/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/atomic_file.h"

namespace vispec {

namespace {

struct DtypeName {
  const char* name;
  torch::Dtype dtype;
};
const DtypeName kDtypes[] = {
    {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16}, {"F64", torch::kFloat64},
    {"I64", torch::kInt64},   {"I32", torch::kInt32},   {"I16", torch::kInt16},     {"I8", torch::kInt8},
    {"U8", torch::kUInt8},    {"BOOL", torch::kBool},
};

torch::Dtype dtype_from_name(const std::string& path, const std::string& tensor, const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.dtype;
  VISPEC_FAIL(path, ": tensor '", tensor, "': unsupported dtype '", name, "'");
}

std::string name_from_dtype(torch::Dtype dtype) {
  for (const auto& d : kDtypes)
    if (dtype == d.dtype) return d.name;
  VISPEC_FAIL("safetensors: cannot store dtype ", c10::toString(dtype));
}

// Read-only memory map, unmapped when the last owner lets go.
std::shared_ptr<void> map_file(const std::string& path, size_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  VISPEC_CHECK(fd >= 0, path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  *size = size_t(st.st_size);
  void* data = nullptr;
  if (*size > 0) data = ::mmap(nullptr, *size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  VISPEC_CHECK(data != MAP_FAILED, path, ": mmap failed: ", std::strerror(err));
  const size_t n = *size;
  return std::shared_ptr<void>(data, [n](void* p) {
    if (p) ::munmap(p, n);
  });
}

}  // namespace

MappedSafetensors::MappedSafetensors(const std::string& path) {
  size_t file_size = 0;
  mapping_ = map_file(path, &file_size);
  const auto* bytes = static_cast<const uint8_t*>(mapping_.get());
  VISPEC_CHECK(file_size >= 8, path, ": not a safetensors file: ", file_size, " bytes, shorter than its header");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  VISPEC_CHECK(n <= 100000000, path, ": not a safetensors file: header length ", n, " is implausible");
  VISPEC_CHECK(8 + n <= file_size, path, ": truncated: header claims ", n, " bytes but the file has ", file_size);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + n);
  } catch (const std::exception& e) {
    VISPEC_FAIL(path, ": corrupt header: ", e.what());
  }
  VISPEC_CHECK(header.is_object(), path, ": corrupt header: not a JSON object");
  const uint64_t data_size = file_size - 8 - n;
  const uint8_t* data = bytes + 8 + n;

  struct Entry {
    std::string name;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      for (auto m = it->begin(); m != it->end(); ++m) metadata_[m.key()] = m->get<std::string>();
      continue;
    }
    const auto& name = it.key();
    const auto& info = it.value();
    VISPEC_CHECK(info.is_object() && info.contains("dtype") && info.contains("shape") && info.contains("data_offsets"),
                 path, ": tensor '", name, "': header entry lacks dtype, shape or data_offsets");
    const auto dtype = dtype_from_name(path, name, info["dtype"].get<std::string>());
    std::vector<int64_t> shape = info["shape"].get<std::vector<int64_t>>();
    const auto offsets = info["data_offsets"].get<std::vector<uint64_t>>();
    VISPEC_CHECK(offsets.size() == 2 && offsets[0] <= offsets[1], path, ": tensor '", name, "': bad data_offsets");
    int64_t numel = 1;
    for (auto d : shape) {
      VISPEC_CHECK(d >= 0, path, ": tensor '", name, "': negative dimension");
      numel *= d;
    }
    const uint64_t expect = uint64_t(numel) * c10::elementSize(dtype);
    VISPEC_CHECK(offsets[1] - offsets[0] == expect, path, ": tensor '", name, "': ", offsets[1] - offsets[0],
                 " bytes stored but shape and dtype need ", expect);
    VISPEC_CHECK(offsets[1] <= data_size, path, ": truncated: tensor '", name, "' ends at byte ", offsets[1],
                 " of a ", data_size, "-byte data section");
    entries.push_back({name, offsets[0], offsets[1]});
    tensors_[name] = torch::from_blob(const_cast<uint8_t*>(data + offsets[0]), shape, torch::TensorOptions().dtype(dtype));
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t at = 0;
  for (const auto& e : entries) {
    VISPEC_CHECK(e.begin == at, path, ": corrupt: tensor '", e.name, "' starts at byte ", e.begin,
                 " but the previous tensor ends at ", at, " (holes or overlaps)");
    at = e.end;
  }
  VISPEC_CHECK(at == data_size, path, ": corrupt: tensors cover ", at, " bytes of a ", data_size,
               "-byte data section");
}

TensorMap read_safetensors(const std::string& path, Metadata* metadata) {
  const MappedSafetensors file(path);
  if (metadata) *metadata = file.metadata();
  TensorMap out;
  for (const auto& [name, view] : file.tensors()) out[name] = view.clone();  // own the bytes: the map goes
  return out;
}

void write_safetensors(const std::string& path, const TensorMap& tensors, const Metadata& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> contiguous;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    auto c = t.detach().to(torch::kCPU).contiguous();
    const uint64_t nbytes = uint64_t(c.numel()) * c.element_size();
    header[name] = {{"dtype", name_from_dtype(c.scalar_type())},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    contiguous.push_back(c);
  }
  std::string json = header.dump();
  while ((8 + json.size()) % 8 != 0) json.push_back(' ');
  AtomicFile out(path);
  uint64_t n = json.size();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
  out.write(len, 8);
  out.write(json.data(), json.size());
  for (const auto& c : contiguous) out.write(c.data_ptr(), size_t(c.numel()) * c.element_size());
  out.commit();
}

}  // namespace vispec
