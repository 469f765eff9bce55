// The MPI world as the scheduler sees it. Launched by mpirun or srun (detected from the launcher's environment)
// it initialises MPI; launched alone it runs as a world of one without touching MPI, so `vispec run` needs no
// launcher on a workstation. Only the scheduler calls MPI, and on rank 0 only its main thread does
// (MPI_THREAD_FUNNELED): rank 0's own decoding runs in a second thread that talks to the coordinator in memory.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <string>

namespace vispec {

class MpiSession {
 public:
  MpiSession();   // MPI_Init_thread when launched by mpirun/srun
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the ranks of this node
  int local_size() const { return local_size_; }
  bool uses_mpi() const { return uses_mpi_; }

  // Point-to-point text messages (JSON), tagged. recv blocks; poll returns a message of any tag from any rank
  // if one is waiting: a rank's messages come in the order it sent them, whatever their tags.
  struct Message {
    int source = 0, tag = 0;
    std::string text;
  };
  void send(int dest, int tag, const std::string& text) const;
  std::string recv(int source, int tag) const;
  std::optional<Message> poll() const;
  int broadcast_int(int value, int root = 0) const;
  int min_int(int value) const;  // the least value over all ranks
  // `bytes` bytes from this node's first rank (local rank 0) to the node's other ranks (any size).
  void node_broadcast(void* data, size_t bytes) const;
  void barrier() const;
  // Ends every rank of the job at once with `code` (MPI_Abort; a world of one just exits): for a failure the
  // message protocol cannot carry, when other ranks may be waiting in a receive or a collective that would
  // never complete. Runs no destructors: files are written atomically, so nothing is left half-written.
  [[noreturn]] void abort(int code) const;

 private:
  bool uses_mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  void* node_comm_ = nullptr;  // MPI_Comm of this node's ranks (opaque here: no mpi.h in this header)
};

// A failure outside any protocol (an exception that escaped planning, a coordinator, a trainer, the output
// files; std::bad_alloc, a filesystem error): the other ranks may be waiting for a message or a collective from
// this one, so one line names the rank and the cause (vispec::Error is bad input, exit 2; anything else an
// internal error, exit 3) and every rank is ended at once. Never a hang.
[[noreturn]] void fail_all_ranks(const MpiSession& session, const std::exception& e);

}  // namespace vispec
