// Model configs (configs/*.yaml): one file per generation model, naming the target GPT, the VQ tokenizer,
// their weights and the class names of a class-conditional model. A relative weight path is relative to the
// config file's directory, or to `weights_root:` where the config sets one; a job may replace any weight path
// (io/job_config.h), and a weight file that is missing when a job is planned is one line naming the line that
// asked for it.
//
//   name: fmnist
//   weights_root: $VISPEC_MODELS/llamagen      # optional: relative to the config, absolute, or from the
//                                               # environment's VISPEC_MODELS (checkpoints outside the checkout)
//   dtype: fp32                                 # fp32 | bf16 | fp16: the GPTs, drafters and heads at inference
//   classes: [t-shirt/top, trouser, ...]
//   gpt: {weights: fmnist/gpt.safetensors, vocab_size: 512, dim: 128, n_layer: 6, n_head: 4, ...}
//        (and how the file's names map onto the model's: names, state_dict_key, strip_prefix, rename;
//        models/checkpoints/weight_keys.h; the LLM families' options: rope, qkv, qk_norm, text_vocab_size,
//        image_token_offset, image_input, image_output, ...: docs/model_families.md)
//   vq:  {weights: fmnist/vq.safetensors, codebook_size: 512, ch: 64, ch_mult: [1, 2], ...}
//   text_encoder: {dir: flan-t5-xl, max_length: 120, dtype: bf16}   # text-conditional models: captions in
//        (Hugging Face's T5 layout: config.json, spiece.model and model.safetensors[.index.json] or
//        pytorch_model.bin[.index.json]; `weights:` names another file)
//   prompt: {tokenizer: ..., template: "...{prompt}...", unconditional: ...}   # prompted models (Chameleon,
//        Janus-Pro, Emu3): a caption per prompt line, wrapped and tokenised (models/text/prompt_config.h)
//   classifier: {weights: fmnist/classifier.safetensors, width: 32, features: 128}   # optional: vispec eval
//   drafters:                                   # optional: what speculative decoders draft with
//     gpt: {weights: fmnist/draft_gpt.safetensors, dim: 64, n_layer: 2, n_head: 2}  # SD's small AR drafter
//          (or a smaller model of the target's family, with its names: like the target's)
//     eagle_head: fmnist/eagle_head.safetensors   # vispec train eagle-head
//     ssd_heads: fmnist/ssd_heads.safetensors     # vispec train ssd-heads
//     mulo:                                       # MuLo-SD: the target's GPT on an 8x8 grid + U_2 / D_2
//       gpt: {weights: fmnist/mulo_gpt.safetensors}                   # vispec train gpt --mulo (or the
//                                                                     # family at half size, names: like gpt's)
//       resamplers: {weights: fmnist/mulo_resamplers.safetensors, width: 64, blocks: 2}
//       prompt: {template: ..., unconditional: ...}   # a prompted drafter's own (its image size)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/weight_override.h"
#include "models/classifier_config.h"
#include "models/gpt/gpt_config.h"
#include "models/drafters/mulo_config.h"
#include "models/text/prompt_config.h"
#include "models/vq/vq_config.h"
#include "models/checkpoints/weight_keys.h"

namespace vispec {

// The sampling settings the model's paper samples with (LlamaGen: cfg_scale 4.0 and top_k 2000 for its class
// models, 7.5 and 1000 for its text models). A decoder spec that leaves a field out takes the model's; a field
// the model leaves unset keeps vispec's default (no guidance, temperature 1, top-k and top-p off).
struct SamplingDefaults {
  std::optional<double> cfg_scale, temperature, top_p;
  std::optional<int64_t> top_k;
};

struct ModelConfig {
  std::string file;  // where it was read from
  std::string name;
  // Inference precision of the target GPT and of every drafter and head (they follow the target). The VQ and
  // the classifier stay float32, and so do logits, sampling and acceptance. Trainers train in float32.
  std::string dtype = "fp32";
  std::vector<std::string> classes;
  SamplingDefaults sampling;  // the config's `sampling:` section
  GptConfig gpt;
  std::string gpt_weights;  // absolute or relative to the working directory
  VqConfig vq;
  std::string vq_weights;
  // Which dict of a torch.save checkpoint holds the weights (empty: the checkpoint itself or its "model",
  // "module" or "state_dict"; models/checkpoints/torch_checkpoint_index.h) and how the file's names map onto the
  // model's.
  WeightKeys gpt_keys, vq_keys;
  // The caption encoder of a text-conditional model (none: prompts give precomputed features). Its files are
  // found and read when a job is planned (models/text/text_encoder.h), not here: a config loads without them.
  bool has_text_encoder = false;
  std::string text_encoder_dir;         // Hugging Face's layout
  std::string text_encoder_weights;     // empty: the usual file names in the directory
  std::string text_encoder_dtype;       // fp32 | bf16 (T5 overflows in fp16)
  int64_t text_encoder_max_length = 0;  // tokens per caption, "</s>" included (<= gpt.cls_token_num)
  PromptConfig prompt;                  // prompted models: their tokenizer and template (read when a job is planned)
  // The evaluation classifier (vispec eval, vispec bench); in_channels, image_size and classes follow the model.
  bool has_classifier = false;
  ClassifierConfig classifier;
  std::string classifier_weights;
  // Drafters (empty weights = none configured). The draft GPT shares vocabulary, grid and conditioning.
  GptConfig draft_gpt;
  std::string draft_gpt_weights;
  WeightKeys draft_gpt_keys;  // a draft of the target's family: its checkpoint's names, as the target's
  std::string eagle_head;
  std::string ssd_heads;
  bool has_draft_gpt() const { return !draft_gpt_weights.empty(); }
  MuloDrafterConfig mulo;
  bool has_mulo() const { return !mulo.gpt_weights.empty(); }

  // Each weight path -> "file:line: field" of the line that named it (the config's, or a job's override), and
  // where the config's weights_root is ("" if it has none): for a missing file's error.
  std::map<std::string, std::string> weight_origins;
  std::string weights_root_where;

  int64_t image_size() const { return gpt.grid_size * vq.downsample(); }
  // A prompt names a class by name (case-insensitive) or by id; -1 if it names none.
  int64_t class_id(const std::string& prompt) const;
};

ModelConfig load_model_config(const std::string& path);
// A job's replacements of the config's weight paths (io/job_config.h); a section the config does not have
// (a draft GPT's architecture, say) cannot get weights from a job: one line naming the job's.
void apply_weight_overrides(ModelConfig& m, const std::vector<WeightOverride>& overrides);
// Every path in `paths` exists; else one line naming the line that asked for it (the config's or the job's).
void check_weight_files_exist(const ModelConfig& m, const std::vector<std::string>& paths);

}  // namespace vispec
