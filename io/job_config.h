// Job files (jobs/*.yaml): what to generate, with which model and decoder, where to write it.
//
//   model: ../configs/fmnist.yaml      # relative to the job file; or a map that may override the config's dtype:
//   model: {config: ../configs/fmnist.yaml, dtype: bf16}   (--set model.dtype=bf16 works on either form)
//   model: {config: ..., drafters: {eagle_head: my_head.safetensors}}   # any weight path of the config,
//        relative to the job file: gpt.weights, vq.weights, classifier.weights, text_encoder.{dir, weights},
//        drafters.{eagle_head, ssd_heads, gpt.weights, mulo.gpt.weights, mulo.resamplers.weights}
//   prompts: demo-prompts.txt          # relative to the job file; one class name or id per line
//   decoder: {name: ar, cfg_scale: 2.0, temperature: 1.0, top_k: 0, top_p: 1.0}
//   images_per_prompt: 4
//   seed: 0
//   batch_size: 20                     # rows decoded together; a decoder that refills rows gives a finished row
//                                      # the unit's next sample (decoding/common/decode_state.h). auto: the most
//                                      # that fit the device's free memory (workers/batch_memory.h)
//   out: out/demo                      # relative to the working directory
//   device: auto                       # auto | cpu | cuda | cuda:N
//   threads: 0                         # CPU threads per rank, 0 = LibTorch default, at most cores / ranks per node
//   cuda_graphs: auto                  # auto (static steps replayed as CUDA graphs on a GPU) | off (eager)
//   unit_size: 64                      # samples per unit of work (the journal's grain)
//   schedule: dynamic                  # dynamic (units on request) | static (unit i -> rank i mod N)
//   output: files                      # files (a PNG and a .npy per sample) | shards (a tar per unit)
//   distill: {streams: cond, dtype: bf16, compression: 0}   # optional: hidden states to HDF5 (io/distill_schema.h)
//
// Every field is checked here, before anything is written; errors name file, line and field.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/device.h"
#include "io/decoder_spec.h"
#include "io/distill_schema.h"
#include "io/weight_override.h"

namespace vispec {

// The bounds of a job's counts (a value past one is refused at planning, in one line).
inline constexpr int64_t kMaxSampleIds = 100'000'000'000;  // prompts x images_per_prompt: 11-digit ids
inline constexpr int64_t kMaxUnits = 10'000'000;           // sample ids / unit_size: the plan holds one entry each
inline constexpr int64_t kMaxBatchSize = 4096;
inline constexpr int64_t kAutoBatchSize = 0;  // `batch_size: auto`
inline constexpr int64_t kMaxUnitSize = 1'000'000;

struct JobConfig {
  std::string file;
  std::string model_config;                   // resolved path
  std::string model_dtype;                    // empty: the model config's
  std::vector<WeightOverride> model_weights;  // weight paths the job replaces, in the order it names them
  std::string prompts_file;                   // resolved path
  DecoderSpec decoder;
  int64_t images_per_prompt = 1;
  uint64_t seed = 0;
  int64_t batch_size = 16;  // kAutoBatchSize: `batch_size: auto`, until planning resolves it (workers/batch_memory.h)
  std::string out_dir;
  std::string device = "auto";
  int64_t threads = 0;
  // auto: on a GPU, static decode steps are replayed as CUDA graphs (models/gpt/step_graph.h), each checked against
  // the eager step at its first use; off: every step eager. The same images either way, so not in the
  // fingerprint.
  std::string cuda_graphs = "auto";
  int64_t unit_size = 64;
  std::string schedule = "dynamic";
  // files: OUT/images/<id>.png and OUT/tokens/<id>.npy per sample; shards: one tar per unit, OUT/shards/
  // unit-<id>.tar (io/run_layout.h), for jobs whose two files per sample would be too many inodes.
  std::string output = "files";
  // every_rank: each rank reads the weight files itself (a node's ranks share its page cache, so a file is
  // read from disk once per node anyway); once_per_node: a node's first rank reads them and hands the tensors
  // to the node's other ranks (models/checkpoints/node_weights.h), for filesystems where every process's read costs.
  // The outputs are the same.
  std::string read_weights = "every_rank";
  DistillOptions distill;
};

// overrides: "key.path=value" applied before validation (--set); out_override replaces `out` when non-empty.
JobConfig load_job_config(const std::string& path, const std::vector<std::string>& overrides = {},
                          const std::string& out_override = "");

// The job as a job file that load_job_config reads back to the same job: every field written, paths absolute,
// the decoder section as the decoder resolved it (every field it reads, the model's sampling defaults and the
// decoder's own filled in: decoder_numbers and decoder_words), numbers in their shortest exact form. What a
// run keeps as OUT/job.yaml.
std::string resolved_job_yaml(const JobConfig& job, const std::map<std::string, double>& decoder_numbers,
                              const std::map<std::string, std::string>& decoder_words);

}  // namespace vispec
