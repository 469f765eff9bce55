#include "core/device.h"

#include <torch/torch.h>

#include "core/check.h"

namespace vispec {

c10::Device pick_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  const bool have_cuda = torch::cuda::is_available();
  if (name == "auto") {
    if (!have_cuda) return torch::kCPU;
    return c10::Device(torch::kCUDA, c10::DeviceIndex(local_rank % int(torch::cuda::device_count())));
  }
  VISPEC_CHECK(name.rfind("cuda", 0) == 0, "device: unknown device '", name,
               "' (expected auto, cpu, cuda or cuda:N)");
  VISPEC_CHECK(have_cuda, "device: '", name, "' requested but no CUDA device is available");
  if (name == "cuda") return c10::Device(torch::kCUDA, c10::DeviceIndex(local_rank % int(torch::cuda::device_count())));
  return c10::Device(name);
}

void set_threads(int threads) {
  if (threads > 0) torch::set_num_threads(threads);
}

}  // namespace vispec
