#include "scheduler/mpi_session.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "core/check.h"
#include "core/exit_codes.h"

namespace vispec {

namespace {
// Any of these means a launcher started us as one rank of a world (OpenMPI's mpirun, PMI/PMIx under srun).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  VISPEC_FAIL("MPI: ", what, ": ", std::string(msg, len));
}

// Under srun, the tasks Slurm started for this step and the MPI world must agree: an MPI library that got no
// PMI from srun makes every task a world of its own, each running the whole job as rank 0 (and then fighting
// over OUT's lock). Refused in one line naming the fix, before anything is planned or written.
void check_slurm_world(int world) {
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");  // set by srun for its step's tasks only
  if (!tasks) return;
  char* end = nullptr;
  const long n = std::strtol(tasks, &end, 10);
  if (end == tasks || *end != '\0' || n <= 1 || n == world) return;
  VISPEC_FAIL("srun started ", n, " tasks (SLURM_STEP_NUM_TASKS) but this process is in an MPI world of ", world,
              ": the MPI library got no PMI from srun, so every task would run the job as its own rank 0; launch "
              "with srun --mpi=pmix (srun --mpi=list shows what Slurm offers; pick one your MPI was built with), "
              "or with mpirun inside the allocation");
}
}  // namespace

MpiSession::MpiSession() {
  if (!launched_by_mpi()) {
    check_slurm_world(1);
    return;
  }
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
  VISPEC_CHECK(provided >= MPI_THREAD_FUNNELED, "MPI: the library does not provide MPI_THREAD_FUNNELED");
  uses_mpi_ = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  check_slurm_world(size_);
  auto* node = new MPI_Comm;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, node), "split by node");
  MPI_Comm_rank(*node, &local_rank_);
  MPI_Comm_size(*node, &local_size_);
  node_comm_ = node;
}

MpiSession::~MpiSession() {
  if (!uses_mpi_) return;
  auto* node = static_cast<MPI_Comm*>(node_comm_);
  MPI_Comm_free(node);
  delete node;
  MPI_Finalize();
}

void MpiSession::send(int dest, int tag, const std::string& text) const {
  VISPEC_ASSERT(uses_mpi_, "send without MPI");
  check_mpi(MPI_Send(text.data(), int(text.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD), "send");
}

std::string MpiSession::recv(int source, int tag) const {
  VISPEC_ASSERT(uses_mpi_, "recv without MPI");
  MPI_Status status;
  check_mpi(MPI_Probe(source, tag, MPI_COMM_WORLD, &status), "probe");
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(size_t(count), '\0');
  check_mpi(MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "recv");
  return text;
}

std::optional<MpiSession::Message> MpiSession::poll() const {
  if (!uses_mpi_) return std::nullopt;
  int flag = 0;
  MPI_Status status;
  check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status), "iprobe");
  if (!flag) return std::nullopt;
  return Message{status.MPI_SOURCE, status.MPI_TAG, recv(status.MPI_SOURCE, status.MPI_TAG)};
}

int MpiSession::broadcast_int(int value, int root) const {
  if (uses_mpi_) check_mpi(MPI_Bcast(&value, 1, MPI_INT, root, MPI_COMM_WORLD), "broadcast");
  return value;
}

int MpiSession::min_int(int value) const {
  int least = value;
  if (uses_mpi_) check_mpi(MPI_Allreduce(&value, &least, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "all-reduce");
  return least;
}

void MpiSession::node_broadcast(void* data, size_t bytes) const {
  if (!uses_mpi_ || local_size_ == 1) return;
  constexpr size_t kChunk = size_t(1) << 30;  // MPI counts are ints
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes; done += kChunk)
    check_mpi(
        MPI_Bcast(p + done, int(std::min(kChunk, bytes - done)), MPI_BYTE, 0, *static_cast<MPI_Comm*>(node_comm_)),
        "node broadcast");
}

void MpiSession::abort(int code) const {
  if (uses_mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void fail_all_ranks(const MpiSession& session, const std::exception& e) {
  const bool bad_input = dynamic_cast<const Error*>(&e) != nullptr;
  const std::string what = e.what();
  // One write: under mpirun each write is forwarded on its own, and mpirun's abort banner may land between two.
  std::cerr << ("vispec: error: " + (session.size() > 1 ? "rank " + std::to_string(session.rank()) + ": " : "") +
                (bad_input ? "" : "internal error: ") + what.substr(0, what.find('\n')) + "\n")
            << std::flush;
  session.abort(bad_input ? kExitUserError : kExitInternalError);
}

void MpiSession::barrier() const {
  if (uses_mpi_) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "barrier");
}

}  // namespace vispec
