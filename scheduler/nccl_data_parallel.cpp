#include "scheduler/nccl_data_parallel.h"

#include "scheduler/mpi_data_parallel.h"

#ifdef VISPEC_NCCL
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <mpi.h>
#include <nccl.h>

#include "core/check.h"
#endif

namespace vispec {

#ifdef VISPEC_NCCL
namespace {
void check_nccl(ncclResult_t rc, const char* what) {
  VISPEC_CHECK(rc == ncclSuccess, "NCCL: ", what, ": ", ncclGetErrorString(rc));
}

class NcclDataParallel : public DataParallel {
 public:
  NcclDataParallel(const MpiSession& session, torch::Device device) : mpi_(session), device_(device) {
    ncclUniqueId id;
    if (session.rank() == 0) check_nccl(ncclGetUniqueId(&id), "unique id");
    if (session.uses_mpi())
      VISPEC_CHECK(MPI_Bcast(&id, int(sizeof id), MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
                   "MPI: broadcasting NCCL's unique id failed");
    c10::cuda::CUDAGuard guard(device_);
    check_nccl(ncclCommInitRank(&comm_, session.size(), id, session.rank()), "creating the communicator");
  }
  ~NcclDataParallel() override { ncclCommDestroy(comm_); }
  NcclDataParallel(const NcclDataParallel&) = delete;
  NcclDataParallel& operator=(const NcclDataParallel&) = delete;

  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  void barrier() override { mpi_.barrier(); }

  void sum(torch::Tensor& tensor) override {
    if (!tensor.is_cuda()) return mpi_.sum(tensor);
    VISPEC_ASSERT(tensor.scalar_type() == torch::kFloat32 && tensor.is_contiguous() && tensor.device() == device_,
                  "NCCL sum of a non-contiguous or non-float32 tensor, or one on another GPU");
    c10::cuda::CUDAGuard guard(device_);
    // Queued on the stream the trainer's kernels run on: what follows on that stream sees the sum.
    const auto stream = c10::cuda::getCurrentCUDAStream(device_.index()).stream();
    float* data = tensor.data_ptr<float>();
    const size_t n = size_t(tensor.numel());
    check_nccl(ncclReduce(data, data, n, ncclFloat, ncclSum, 0, comm_, stream), "gradient reduction");
    check_nccl(ncclBroadcast(data, data, n, ncclFloat, 0, comm_, stream), "gradient broadcast");
  }

 private:
  MpiDataParallel mpi_;
  torch::Device device_;
  ncclComm_t comm_ = nullptr;
};
}  // namespace

bool built_with_nccl() { return true; }

std::shared_ptr<DataParallel> make_data_parallel(const MpiSession& session, torch::Device device) {
  if (device.is_cuda()) return std::make_shared<NcclDataParallel>(session, device);
  return std::make_shared<MpiDataParallel>(session);
}
#else
bool built_with_nccl() { return false; }

std::shared_ptr<DataParallel> make_data_parallel(const MpiSession& session, torch::Device) {
  return std::make_shared<MpiDataParallel>(session);
}
#endif

}  // namespace vispec
