#include "models/checkpoints/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/mapped_file.h"
#include "models/checkpoints/safetensors_header.h"

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

std::string name_from_dtype(torch::Dtype dtype) {
  for (const auto& d : kDtypes)
    if (dtype == d.dtype) return d.name;
  VISPEC_FAIL("safetensors: cannot store dtype ", c10::toString(dtype));
}

}  // namespace

torch::Dtype dtype_from_name(const std::string& path, const std::string& tensor, const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.dtype;
  VISPEC_FAIL(path, ": tensor '", tensor, "': unsupported dtype '", name, "'");
}

MappedSafetensors::MappedSafetensors(const std::string& path) {
  const MappedFile file(path);
  mapping_ = file.owner();
  const auto* bytes = file.data();
  const auto header = parse_safetensors_header(bytes, file.size(), path);
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
