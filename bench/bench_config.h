// Bench files (bench/*.yaml): several decoders on the same prompts and seeds, judged side by side.
//
//   name: ar-baseline                 # results: RESULTS/<name>.json, .md, .png (RESULTS: bench/results/ by default)
//   model: ../configs/fmnist.yaml     # relative to the bench file
//   prompts: ../jobs/demo-prompts.txt # relative to the bench file
//   images_per_prompt: 100            # every decoder makes every image: quality is judged on all of them
//   seed: 0
//   batch_size: 50                    # rows decoded together
//   unit_size: 50                     # samples per timed chunk (default batch_size), decoded on batch_size
//                                     # rows as a job's unit is; chunks interleave the decoders
//   device: auto
//   threads: 0
//   baseline: ar                      # the label speedups are relative to (default: the first decoder)
//   decoders:
//     - label: ar                     # default: the decoder's name
//       decoder: {name: ar, cfg_scale: 2.0}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decoding/common/decoder_config.h"

namespace vispec {

struct BenchEntry {
  std::string label;
  std::string where;  // "file:line: decoders[2]" for errors
  DecoderConfig decoder;
};

struct BenchConfig {
  std::string file;
  std::string name;
  std::string model_config;
  std::string prompts_file;
  int64_t images_per_prompt = 1;
  uint64_t seed = 0;
  int64_t batch_size = 16;
  int64_t unit_size = 0;  // 0: batch_size
  std::string device = "auto";
  int threads = 0;
  std::string baseline;  // a label of `decoders`
  std::vector<BenchEntry> decoders;
};

// Reads and checks a bench file (decoder names and parameters included); overrides as `vispec run --set`.
BenchConfig load_bench_config(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace vispec
