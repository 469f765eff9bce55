// How the tensor names of a weights file map onto a module's parameter names, as a model config's gpt or vq
// section declares it: which dict of a torch.save checkpoint holds the weights, a prefix to strip (a
// DistributedDataParallel "module.", a wrapper's "model.") and prefix renames (another codebase's names for the
// same tensors). Plain data: no torch.
//   gpt: {weights: last.pt, state_dict_key: ema, strip_prefix: module., rename: {lm_head.: output.}}
// A model family's checkpoints are described once, by name (`names: hf_llama`, weight_names_preset): prefix
// and part renames (Hugging Face's "self_attn.q_proj" inside every layer is our "attention.wq"), the tensors
// image generation does not use (a vision encoder, the VQ inside the checkpoint), the rows of the LM head that
// are the image tokens' logits, Lumina-mGPT's qk-norm stored as one row for every head, and 1x1 convolutions
// stored as linear layers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vispec {

struct WeightKeys {
  std::string state_dict_key;  // torch.save files: the dotted key of the state dict ("ema", "model.sd")
  std::string within;          // non-empty: the module's tensors are the file's under this prefix (removed), the
                               // rest another model's (a VQ inside a whole Janus-Pro checkpoint)
  std::string strip_prefix;    // removed from every file name that starts with it
  std::vector<std::pair<std::string, std::string>> renames;  // then: the first `from` prefix that matches -> `to`
  // then: every dotted run of parts `from` (bounded by dots or the name's ends) -> `to`, in order
  std::vector<std::pair<std::string, std::string>> part_renames;
  std::vector<std::string> ignore;  // file names starting with one of these are not the model's: skipped
  // A module tensor that holds only these rows (dim 0) of the file's tensor (the image tokens' rows of an LM
  // head over the whole text vocabulary), taken once at load.
  std::map<std::string, std::vector<int64_t>> take_rows;
  // Module tensors ending with one of these may come as a single row that every row takes.
  std::vector<std::string> one_row_for_all;
  // Module tensors ending with one of these are 1x1 convolutions the file stores as linear layers ([out, in]
  // for [out, in, 1, 1]: transformers' MoVQ attention).
  std::vector<std::string> linear_as_conv1x1;

  bool renaming() const {
    return !within.empty() || !strip_prefix.empty() || !renames.empty() || !part_renames.empty() ||
           !linear_as_conv1x1.empty();
  }
  bool ignored(const std::string& file_name) const;
  // The module name of file tensor `name`.
  std::string map(const std::string& name) const;
  bool may_be_one_row(const std::string& module_name) const;
  bool is_conv1x1_from_linear(const std::string& module_name) const;
};

// The names of a family's checkpoints: "llamagen" (none to map), "hf_llama" (Hugging Face's Chameleon and
// Emu3: model.layers.N.self_attn.q_proj ...), "hf_janus" (Hugging Face's Janus-Pro) or "janus" (DeepSeek's
// own Janus-Pro files); false if the name is none of these.
bool weight_names_preset(const std::string& name, WeightKeys& keys);
// The same for a VQ tokenizer of `levels` resolutions: "llamagen", "hf_janus" (the VQ inside Hugging Face's
// Janus-Pro checkpoint, with taming's names: decoder.up.N.block.M, mid.block_1, ...), "janus" (inside
// DeepSeek's, LlamaGen's names) or "chameleon" (Meta's vqgan.ckpt for Chameleon, Lumina-mGPT and Anole:
// taming's names, the decoder's levels numbered from the highest resolution, the training loss's networks),
// "emu3" (BAAI's Emu3-VisionTokenizer model.safetensors, for vq kind movq; its encoder skipped) or "hf_emu3"
// (the MoVQ inside transformers' Emu3-Gen-hf checkpoint: vqmodel.*, its attention as linear layers).
bool vq_weight_names_preset(const std::string& name, int64_t levels, WeightKeys& keys);

}  // namespace vispec
