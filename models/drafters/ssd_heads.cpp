#include "models/drafters/ssd_heads.h"

#include "core/check.h"
#include "models/checkpoints/head_file.h"
#include "models/checkpoints/load.h"

namespace vispec {

namespace {
torch::nn::Linear projection(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}
}  // namespace

SsdHeadImpl::SsdHeadImpl(int64_t dim, int64_t hidden, double eps) {
  w0 = register_module("w0", projection(2 * dim, dim));
  norm = register_module("norm", RMSNorm(dim, eps));
  w1 = register_module("w1", projection(dim, hidden));
  w3 = register_module("w3", projection(dim, hidden));
  w2 = register_module("w2", projection(hidden, dim));
}

torch::Tensor SsdHeadImpl::forward(const torch::Tensor& h_pre, const torch::Tensor& token_embedding) {
  auto u = w0(torch::cat({h_pre, token_embedding}, -1));
  auto n = norm(u);
  return u + w2(torch::silu(w1(n)) * w3(n));
}

SsdHeadsImpl::SsdHeadsImpl(const GptConfig& target, int64_t kh, int64_t kv)
    : kh_(kh), kv_(kv), grid_(target.grid_size) {
  VISPEC_CHECK(kh >= 0 && kv >= 0 && kh + kv > 0, "ssd heads: need at least one head (kh ", kh, ", kv ", kv, ")");
  VISPEC_CHECK(kh < grid_ && kv < grid_, "ssd heads: kh ", kh, " and kv ", kv, " must be below the grid size ", grid_);
  horizontal = register_module("horizontal", torch::nn::ModuleList());
  vertical = register_module("vertical", torch::nn::ModuleList());
  for (int64_t i = 0; i < kh; ++i) horizontal->push_back(SsdHead(target.dim, 2 * target.dim, target.norm_eps));
  for (int64_t i = 0; i < kv; ++i) vertical->push_back(SsdHead(target.dim, 2 * target.dim, target.norm_eps));
  for (auto& p : named_parameters()) {
    if (p.key().find("norm") == std::string::npos) torch::nn::init::normal_(p.value(), 0.0, 0.02);
  }
}

int64_t SsdHeadsImpl::raster_offset(int64_t i) const { return i < kh_ ? i + 1 : (i - kh_ + 1) * grid_; }

std::string SsdHeadsImpl::head_name(int64_t i) const {
  return (i < kh_ ? "h+" : "v+") + std::to_string(i < kh_ ? i + 1 : i - kh_ + 1);
}

SsdHead SsdHeadsImpl::head(int64_t i) const {
  return i < kh_ ? SsdHead(horizontal->ptr<SsdHeadImpl>(size_t(i)))
                 : SsdHead(vertical->ptr<SsdHeadImpl>(size_t(i - kh_)));
}

SsdHeads load_ssd_heads(const std::string& path, const ModelConfig& target) {
  Metadata metadata;
  const auto tensors = read_safetensors(path, &metadata);
  check_head_file(metadata, path, "ssd_heads", target);
  auto count = [&](const char* field) {
    auto it = metadata.find(field);
    VISPEC_CHECK(it != metadata.end(), path, ": metadata '", field, "' missing");
    return std::stoll(it->second);
  };
  SsdHeads heads(target.gpt, count("horizontal_heads"), count("vertical_heads"));
  load_state_dict(*heads, tensors, path);
  return heads;
}

}  // namespace vispec
