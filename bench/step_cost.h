// vispec step-cost: what one AR token costs against what it must cost. For each model (the embedded one with
// its weights, and LlamaGen GPT-XL's shape with random weights), dtype and batch, the AR decoder's wall time
// per generated token (CFG on: batch B runs 2B rows), and beside it the memory-bandwidth floor of that step:
// the bytes it must read (every weight matrix once, and the KV cache at the step's length, averaged over the
// image) divided by this device's copy bandwidth, measured in the same run. Their ratio says how far eager
// decoding is from the hardware (1.0 = bandwidth-bound at full speed). Written as RESULTS/<name>.json and .md.
// With decoders named (`--decoders`), the break-even table instead (bench/break_even.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vispec {

struct StepCostOptions {
  std::string model_config = "configs/fmnist.yaml";  // the embedded model
  std::string device = "auto";
  std::vector<std::string> dtypes = {"fp32", "bf16"};
  std::vector<int64_t> batches = {1, 32};  // with --decoders, 0 (`auto`) too: see auto_batch_limit
  // eager: every operator launched by the host; graphs: each static step replayed as a CUDA graph
  // (models/gpt/step_graph.h; a CPU runs both eagerly, and the report says whether graphs were replayed). Empty:
  // both on a GPU, eager on a CPU.
  std::vector<std::string> modes;
  // Steps timed after the prefill: 0 = the whole image; N = the first N steps only (the report says so), for
  // a whole image that would take too long (GPT-XL's 576 tokens eagerly on a GPU).
  int64_t max_steps = 0;
  // > 0: after timing each row, profile the kernels of this many steps (bench/kernel_profile.h) and list each
  // row's device time per step by kernel; at most 48 (the steps after the first 8 of the smallest grid).
  int64_t profile_steps = 0;
  double cfg_scale = 2.0;
  int threads = 0;  // CPU threads, 0 = LibTorch's default
  // GPT-XL's depth and grid: 0 = the real ones (36 layers, 24 x 24 = 576 tokens) on a GPU, and 4 layers on an
  // 8 x 8 grid (64 tokens) on a CPU, where the real shape would take hours; the report says which ran.
  int64_t xl_layers = 0;
  int64_t xl_grid = 0;
  std::string xl_preset = "GPT-XL";  // the shape's widths (models/gpt/gpt_presets): a smaller one for CPU tests
  int64_t xl_vocab = 16384;
  // The break-even table (bench/break_even.h): these decoders ("all": every registered one), AR first; their
  // mean accepted lengths on the embedded model over this many samples.
  std::vector<std::string> decoders;
  int64_t mal_samples = 32;
  // The break-even table's `auto` batch: the largest that AR's KV caches and activations at the shape fit in
  // (workers/batch_memory.h, the share `batch_size: auto` plans with) of the device's free memory, at most this.
  int64_t auto_batch_limit = 1024;
  std::string results_dir = "bench/results";
  std::string name;  // default: step-cost-cpu or step-cost-cuda
};

// Returns the path of the JSON written.
std::string run_step_cost(const StepCostOptions& options);

}  // namespace vispec
