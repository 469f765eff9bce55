// Draft heads written by the EAGLE and LANTERN repositories, read as vispec's EAGLE drafter
// (models/drafters/eagle_drafter.h). Their drafter (cnets' `Model`, one LLaMA decoder layer) is vispec's layer for
// layer: fc over [token embedding; feature] with a bias, no input norm, SwiGLU, no final norm, the target's
// head on its output, post-norm features; LANTERN's LlamaGen drafter also rotates q and k with LlamaGen's 2D
// table at each token's grid cell, as vispec's does. Only the names differ:
//   fc.weight, fc.bias                                  fc.weight, fc.bias
//   layers.0.self_attn.{q,k,v}_proj.weight              attention.wqkv.weight (rows q, k, v), or
//                                                       attention.w{q,k,v}.weight where the target keeps them apart
//   layers.0.self_attn.o_proj.weight                    attention.wo.weight
//   layers.0.post_attention_layernorm.weight            ffn_norm.weight
//   layers.0.mlp.{gate,up,down}_proj.weight             feed_forward.{w1,w3,w2}.weight
//   embed_tokens.weight (when the file has it)          embed_tokens.weight: the drafter's own input table
// The files: LANTERN's released pytorch_model.bin (torch.save, read without executing anything) or its
// trainer's model.safetensors (accelerate), names bare or under "module." (DDP) or "ea_layer." (EaModel).
// Text-to-image drafters of LANTERN also attend to the 119 caption positions, whose keys LlamaGen's table
// zeroes; vispec's drafter starts at the first image token, so those heads load and draft, with predictions
// that differ from LANTERN's by what those positions added.
#pragma once

#include <string>

#include "models/checkpoints/safetensors.h"

namespace vispec {

// Whether `tensors` are such a drafter's (they hold layers.0.self_attn.q_proj.weight, under any of the prefixes).
bool is_eagle_repo_drafter(const TensorMap& tensors);
// The same tensors under vispec's names; fused_qkv: the target's attention keeps q, k and v in one matrix. A
// drafter of more than one layer, or with the norms vispec's has not, is one line naming `path`.
TensorMap eagle_repo_tensors(const TensorMap& tensors, bool fused_qkv, const std::string& path);

}  // namespace vispec
