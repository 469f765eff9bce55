// One rank's life: bind the device, load the models once (prepare_worker), then loop — ask for a unit, decode
// its samples batch by batch, write their files, report the unit done and get the next — until told to stop.
//
// A unit's files: OUT/images/<id>.png and OUT/tokens/<id>.npy per sample, each written under a temporary name
// and renamed, then both directories fsynced once (with `output: shards`, one archive OUT/shards/unit-<unit>.tar
// holding them all, written under a temporary name and renamed), then OUT/metrics/unit-<unit>.jsonl (atomic). Only
// after that is the unit reported done, and only a reported unit enters the journal (scheduler/journal.h): a crash at
// any point leaves files that a rerun simply overwrites.
//
// The worker knows nothing of MPI: it talks to a UnitSource (scheduler/ implements one over MPI for ranks
// 1..N-1 and one in memory for rank 0's own worker thread).
#pragma once

#include <optional>
#include <string>

#include "decoding/common/decoder.h"
#include "io/unit_files.h"
#include "workers/job_plan.h"
#include "workers/loaded_models.h"
#include "workers/request_builder.h"

namespace vispec {

// Sample ids [first_id, end_id) of the job's plan (ids of skipped prompts in the range are simply absent),
// whose prompts the worker reads from `start` in the prompt file.
struct WorkUnit {
  int64_t id = -1;
  uint64_t first_id = 0, end_id = 0;
  UnitStart start;
};

struct UnitDone {
  int64_t unit = -1;
  int64_t images = 0;
  double seconds = 0;           // decode + write
  SampleStats stats;            // summed over the unit's samples
  std::vector<UnitFile> files;  // every file the unit wrote, for the journal to check later
};

// How a worker's models came to be: for summary.json's per-rank figures.
struct ModelLoad {
  double seconds = 0;
  int64_t read_bytes = 0;      // copied out of weight files by this process
  int64_t received_bytes = 0;  // handed over by the node's first process instead (models/checkpoints/node_weights.h)
  std::string device;          // what the rank decodes on: "cuda:1", "cpu"
  std::string device_model;    // its model: "NVIDIA H100 80GB HBM3", "cpu" (core/device.h)
};

// What a worker says each time it asks for work.
struct WorkerReport {
  int rank = 0;
  std::optional<ModelLoad> loaded;  // with the first report only
  std::optional<UnitDone> done;     // the unit just finished, if any
  bool stopping = false;            // a stop signal arrived: the unit in hand was abandoned
  std::string error;                // non-empty: this worker failed (one line) and stops
  int error_code = 0;               // exit code the error maps to
  double wait_seconds = 0;          // time spent in the previous next() call (scheduling overhead)
};

class UnitSource {
 public:
  virtual ~UnitSource() = default;
  // Reports and asks; nullopt means stop.
  virtual std::optional<WorkUnit> next(const WorkerReport& report) = 0;
  // A batch of the unit in hand is written: `images` more, for the progress line (no answer).
  virtual void progress(int64_t images) = 0;
};

struct WorkerOptions {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;  // ranks on this node: the default CPU threads are the node's cores / this
};

// A worker ready for its first unit: threads and device set, models and decoder loaded. Made on the thread
// that owns MPI (weights may be shared within the node: a collective, models/checkpoints/node_weights.h); throws on any
// failure. The worker itself may then run in another thread.
struct PreparedWorker {
  torch::Device device = torch::kCPU;
  int threads = 1;
  LoadedModels models;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<RequestBuilder> make_request;  // loads the text encoder, if the model has one
  ModelLoad load;
};
std::unique_ptr<PreparedWorker> prepare_worker(const JobPlan& plan, const WorkerOptions& options);

// Runs until the source says stop. Never throws: a failure is reported through the source.
void run_worker(const JobPlan& plan, const WorkerOptions& options, PreparedWorker& prepared, UnitSource& source);

}  // namespace vispec
