#include "core/device.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#ifdef VISPEC_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

#include "core/check.h"
#include "core/fault_injection.h"

namespace vispec {

namespace {
c10::Device bind(c10::Device device) {
#ifdef VISPEC_CUDA
  if (device.is_cuda()) c10::cuda::set_device(device.index());
#endif
  return device;
}
}  // namespace

std::string cuda_unusable_reason() {
#ifdef VISPEC_CUDA
  if (torch::cuda::is_available()) return "";
  int driver = 0, count = 0;
  cudaDriverGetVersion(&driver);  // 0: no driver installed
  const cudaError_t err = cudaGetDeviceCount(&count);
  cudaGetLastError();  // not sticky, but leave nothing behind for LibTorch to find
  const int built = CUDA_VERSION;
  const auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  if (driver == 0) return "no NVIDIA driver found";
  if (err == cudaErrorInsufficientDriver || driver < built)
    return "the NVIDIA driver supports CUDA " + version(driver) + ", this build needs " + version(built);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (err == cudaErrorNoDevice || count == 0)
    return std::string("no CUDA device visible") +
           (visible ? " (CUDA_VISIBLE_DEVICES='" + std::string(visible) + "')" : "");
  return std::string("CUDA reports: ") + cudaGetErrorString(err);
#else
  return "this build has no CUDA";
#endif
}

namespace {
// Why this node's NVIDIA GPUs cannot be used; "" where it has none, none visible, or they can be used. A node
// with a driver and visible GPUs that CUDA refuses (a driver too old for this build), or with GPUs that a build
// without CUDA cannot reach, was meant to decode on its GPUs.
std::string gpus_unusable() {
  if (fault_at("driver-too-old", 0))
    return "this node's NVIDIA GPUs cannot be used: the NVIDIA driver supports CUDA 12.4, this build needs 13.0 "
           "(injected: VISPEC_FAULT)";
#ifdef VISPEC_CUDA
  int driver = 0, count = 0;
  cudaDriverGetVersion(&driver);
  if (driver == 0) return "";  // no driver: a CPU node
  const cudaError_t err = cudaGetDeviceCount(&count);
  cudaGetLastError();  // not sticky, but leave nothing behind for LibTorch to find
  if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
    static std::once_flag once;  // GPUs hidden (CUDA_VISIBLE_DEVICES): the user's choice, said once
    std::call_once(once, [] { spdlog::warn("device auto: decoding on the CPU: {}", cuda_unusable_reason()); });
    return "";
  }
  return "this node's NVIDIA GPUs cannot be used: " + cuda_unusable_reason();
#else
  std::error_code ec;
  int64_t gpus = 0;  // the kernel driver's own list: no CUDA needed to read it
  for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++gpus;
  if (gpus == 0) return "";
  return "this node has " + std::to_string(gpus) +
         " NVIDIA GPU(s), but this vispec was built without CUDA (README, \"Install\")";
#endif
}
}  // namespace

c10::Device pick_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::kCPU;
  const bool have_cuda = torch::cuda::is_available() && !fault_at("driver-too-old", 0);
  if (name == "auto") {
    if (!have_cuda) {
      // Decoding a cluster job on CPUs beside unusable GPUs would waste the allocation after a warning line:
      // stop instead, and say how to ask for the CPU. Without GPUs it is a CPU node.
      const auto unusable = gpus_unusable();
      VISPEC_CHECK(unusable.empty(), "device auto: ", unusable, "; set device: cpu to decode on the CPU");
      return torch::kCPU;
    }
    return bind(c10::Device(torch::kCUDA, c10::DeviceIndex(local_rank % int(torch::cuda::device_count()))));
  }
  VISPEC_CHECK(name.rfind("cuda", 0) == 0, "device: unknown device '", name, "' (expected auto, cpu, cuda or cuda:N)");
  VISPEC_CHECK(have_cuda, "device: '", name, "' requested but CUDA is not usable: ", cuda_unusable_reason());
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

int set_threads(int threads) {
  if (threads <= 0) return 0;
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  if (threads > cores) {
    spdlog::warn("threads: {} but this node has {} cores: using {}", threads, cores, cores);
    threads = cores;
  }
  torch::set_num_threads(threads);
  return threads;
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

int64_t free_device_memory(const c10::Device& device) {
#ifdef VISPEC_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(device.index());
    size_t free = 0, total = 0;
    VISPEC_CHECK(cudaMemGetInfo(&free, &total) == cudaSuccess, "cannot read the free memory of ", device.str());
    return int64_t(free);
  }
#endif
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::stoll(line.substr(13)) * 1024;  // "MemAvailable: N kB"
  VISPEC_FAIL("/proc/meminfo: no MemAvailable line: cannot tell how much memory is free");
}

std::string software_versions() {
  std::string cuda = "none";
#ifdef VISPEC_CUDA
  const int v = CUDA_VERSION;  // e.g. 13000
  cuda = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
#endif
  return std::string("libtorch ") + TORCH_VERSION + ", cuda " + cuda;
}

void synchronize_device(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

bool cuda_usable() { return torch::cuda::is_available(); }

}  // namespace vispec
