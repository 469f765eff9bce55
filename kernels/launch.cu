// kernels/launch.cuh's one host function: whether launches on the current device overlap (PDL).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/launch.cuh"

namespace vispec::kernels::cuda {

bool overlapped_launches() {
  static const bool allowed = [] {
    const char* v = std::getenv("VISPEC_PDL");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices] = {};  // per device: 0 not asked yet, 1 no, 2 yes
  int device = 0;
  if (!allowed || cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) return false;
  int k = known[device].load(std::memory_order_relaxed);
  if (k == 0) {
    int major = 0;
    k = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9 ? 2 : 1;
    known[device].store(k, std::memory_order_relaxed);
  }
  return k == 2;
}

}  // namespace vispec::kernels::cuda
