#include "bench/bandwidth_floor.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/device.h"

namespace vispec {

double copy_bandwidth(const torch::Device& device) {
  using Clock = std::chrono::steady_clock;
  const int64_t bytes = device.is_cuda() ? (int64_t(1) << 30) : (int64_t(1) << 28);
  auto src = torch::ones({bytes / 4}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  auto dst = torch::empty_like(src);
  dst.copy_(src);
  synchronize_device(device);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    dst.copy_(src);
    synchronize_device(device);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * double(bytes) / best;
}

double weight_bytes(const Gpt& gpt) {
  double total = 0;
  for (const auto& p : gpt->named_parameters())
    if (p.key().find("embedding") == std::string::npos)
      total += double(p.value().numel()) * double(p.value().element_size());
  return total;
}

double kv_bytes_per_step(const GptConfig& config, int64_t rows, int64_t element_bytes) {
  const double mean_length = double(config.cls_token_num) + double(config.image_tokens() - 1) / 2.0;
  return 2.0 * double(config.n_layer * rows * config.kv_heads() * config.head_dim()) * mean_length *
         double(element_bytes);
}

}  // namespace vispec
