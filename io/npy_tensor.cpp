#include "io/npy_tensor.h"

#include <map>

#include "core/check.h"

namespace vispec {

torch::Tensor npy_to_tensor(NpyArray array, const std::string& path) {
  static const std::map<std::string, torch::Dtype> kDtypes = {
      {"<f2", torch::kFloat16}, {"<f4", torch::kFloat32}, {"<f8", torch::kFloat64}, {"<i4", torch::kInt32},
      {"<i8", torch::kInt64},   {"|u1", torch::kUInt8},   {"|b1", torch::kBool}};
  const auto it = kDtypes.find(array.descr);
  VISPEC_CHECK(it != kDtypes.end(), path, ": .npy dtype '", array.descr, "' is not supported");
  VISPEC_CHECK(array.data.size() == size_t(array.elements()) * array.item_size, path, ": .npy data size");
  return torch::from_blob(array.data.data(), array.shape, it->second).clone();
}

}  // namespace vispec
