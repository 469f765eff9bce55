#include "core/device.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <fstream>

#ifdef VISPEC_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "core/check.h"

namespace vispec {

namespace {
c10::Device bind(c10::Device device) {
#ifdef VISPEC_CUDA
  if (device.is_cuda()) c10::cuda::set_device(device.index());
#endif
  return device;
}
}  // namespace

c10::Device pick_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  const bool have_cuda = torch::cuda::is_available();
  if (name == "auto") {
    if (!have_cuda) return torch::kCPU;
    return bind(c10::Device(torch::kCUDA, c10::DeviceIndex(local_rank % int(torch::cuda::device_count()))));
  }
  VISPEC_CHECK(name.rfind("cuda", 0) == 0, "device: unknown device '", name,
               "' (expected auto, cpu, cuda or cuda:N)");
  VISPEC_CHECK(have_cuda, "device: '", name, "' requested but no CUDA device is available");
  if (name == "cuda")
    return bind(c10::Device(torch::kCUDA, c10::DeviceIndex(local_rank % int(torch::cuda::device_count()))));
  c10::Device device(torch::kCPU);
  try {
    device = c10::Device(name);
  } catch (const std::exception&) {
    VISPEC_FAIL("device: unknown device '", name, "' (expected auto, cpu, cuda or cuda:N)");
  }
  VISPEC_CHECK(device.index() < int(torch::cuda::device_count()), "device: '", name, "' but only ",
               torch::cuda::device_count(), " CUDA device(s) are visible");
  return bind(device);
}

void set_threads(int threads) {
  if (threads > 0) torch::set_num_threads(threads);
}

std::string device_model(const c10::Device& device) {
#ifdef VISPEC_CUDA
  if (device.is_cuda()) return at::cuda::getDeviceProperties(device.index())->name;
#endif
  // CPU kernels differ by instruction set too (AVX2 / AVX-512 paths in oneDNN and MKL): name the processor.
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return "cpu: " + line.substr(line.find(':') + 2);
  return device.str();
}

std::string software_versions() {
  std::string cuda = "none";
#ifdef VISPEC_CUDA
  const int v = CUDA_VERSION;  // e.g. 13000
  cuda = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
#endif
  return std::string("libtorch ") + TORCH_VERSION + ", cuda " + cuda;
}

bool cuda_usable() { return torch::cuda::is_available(); }

}  // namespace vispec
