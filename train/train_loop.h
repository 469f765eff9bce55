// What every trainer shares: options, the learning-rate schedule, resumable checkpoints and the log.
//
// A run directory holds
//   checkpoints/step-N/      the last checkpoint: weights, optimizer state and state.json, one set
//                            (train/checkpoint.h)
//   log.jsonl                one line per logged step (also printed through spdlog)
// Re-running the same command resumes from the checkpoint; batches are drawn from a generator keyed by
// (seed, step), so a resumed run sees the same data as an uninterrupted one. Under mpirun or srun the loop is
// data-parallel (train/data_parallel.h): each rank trains on its share of every batch, rank 0 writes.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <memory>
#include <string>

#include "models/checkpoints/node_weights.h"
#include "train/data_parallel.h"

namespace vispec {

struct TrainOptions {
  std::string config;       // model config (architecture)
  std::string out_dir;      // run directory
  std::string export_path;  // where the final weights go (safetensors); empty = out_dir/model.safetensors
  std::string device = "auto";
  int threads = 0;
  int64_t steps = 1000;
  int64_t batch_size = 64;
  double lr = 1e-3;
  double min_lr_ratio = 0.1;  // cosine decay ends at lr * this
  int64_t warmup = 100;
  double weight_decay = 0.05;
  double grad_clip = 1.0;
  int64_t log_every = 20;
  int64_t checkpoint_every = 200;
  uint64_t seed = 0;
  int64_t max_images = 0;      // mulo-resamplers: the first N training images only (0 = all), for quick runs
  int64_t eval_images = 2000;  // train vq: test images reconstructed at each checkpoint (1 .. 10,000)
  bool eval_at_start = false;  // also evaluate (and log) before the first step of a fresh run
  bool resume_with_other_options = false;  // resume a checkpoint trained with another batch size, lr or seed
  bool drafter = false;                    // train gpt: the config's drafters.gpt instead of its target
  bool mulo = false;                       // train gpt: drafters.mulo.gpt on half-resolution images instead
  std::string images;  // train gpt, mulo-resamplers: an image folder in ImageNet's layout (train/image_folder.h)
  std::string codes;   // train gpt: LlamaGen's extracted code files (train/token_data.h)
  std::shared_ptr<DataParallel> parallel;  // the ranks (none: a single process)
  int local_rank = 0;                      // on this node: picks the GPU (device auto or cuda)
  // every_rank | once_per_node: whether the frozen models a trainer loads (a head trainer's target, the
  // resamplers' VQ) are read by each node's first rank and handed to the others (node_weights, then set by
  // the launcher; models/checkpoints/node_weights.h). As a job's read_weights.
  std::string read_weights = "every_rank";
  std::shared_ptr<NodeWeights> node_weights;

  DataParallel& ranks() const;
  // This rank's rows of every batch: a trainer draws the global batch of (seed, step) and keeps these rows.
  BatchShard shard() const { return ranks().shard(batch_size); }
  bool writes() const { return ranks().rank() == 0; }  // logs, evaluations, checkpoints, exports
};

// Threads, device, run directory and torch's seed, as the options say. Returns the device to train on.
torch::Device prepare_training(const TrainOptions& o);

struct StepResult {
  torch::Tensor loss;                          // scalar, to minimise
  std::map<std::string, torch::Tensor> extra;  // scalars to log beside it (read only on log steps)
};

// The loop every trainer shares: from the resumed step to o.steps, set the learning rate, call step_fn(step)
// for the loss of this rank's shard (a mean over its rows), back-propagate, sum the gradients over the ranks,
// clip, step; log every o.log_every; at every checkpoint call eval_fn() and save (rank 0). Finally exports the
// weights (safetensors, with `metadata`) to o.export_path or OUT/model.safetensors.
// clip_groups: parameter sets whose gradient norms are clipped separately (models trained as independent
// heads); empty = one global norm over model.parameters().
void run_training(const TrainOptions& o, torch::nn::Module& model, torch::optim::Optimizer& opt,
                  const std::function<StepResult(int64_t step)>& step_fn,
                  const std::function<nlohmann::json()>& eval_fn, std::map<std::string, std::string> metadata,
                  const std::vector<std::vector<torch::Tensor>>& clip_groups = {});

// Linear warm-up, then cosine decay to lr * min_lr_ratio at `steps`.
double learning_rate(const TrainOptions& o, int64_t step);
void set_learning_rate(torch::optim::Optimizer& opt, double lr);

// Indices of the batch for `step`: a deterministic function of (seed, step).
torch::Tensor batch_indices(uint64_t seed, int64_t step, int64_t dataset_size, int64_t batch_size);

// Appends to out_dir/log.jsonl and logs one line.
void log_train_step(const std::string& out_dir, const nlohmann::json& record);

}  // namespace vispec
