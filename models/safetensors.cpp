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
#include "models/safetensors_header.h"

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
  const auto header = parse_safetensors_header(bytes, file_size, path);
  metadata_ = header.metadata;
  const uint8_t* data = bytes + header.data_offset;
  for (const auto& e : header.tensors)
    tensors_[e.name] = torch::from_blob(const_cast<uint8_t*>(data + e.begin), e.shape,
                                        torch::TensorOptions().dtype(dtype_from_name(path, e.name, e.dtype)));
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
