// What decides a job's outputs, as JSON (the "identity"), and its 64-bit FNV-1a fingerprint. Included: the
// model config's text, each weight file's size and CRC-32 over all of it (read once, then remembered by
// size and modification time: io/digest_cache.h), the prompt list's content (hashed by the planning scan), the
// decoder and its parameters, seed, images_per_prompt, unit_size and batch_size (a different batch can change
// a last bit of the logits and so, rarely, a sampled token: measured 1 of 40 demo images, batch 20 vs 3), the
// model dtype, and the hardware and software that compute it: rank 0's device model (the GPU's name, or the
// CPU's) and the LibTorch and CUDA versions. Kernels are deterministic run to run on one kind of device and
// software, not across them, so resuming elsewhere is refused (--new starts over). Not included: schedule
// and rank count (outputs do not depend on them), paths (a job may move) and threads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "workers/job_plan.h"

namespace vispec {

nlohmann::json job_identity(const JobPlan& plan);
std::string fingerprint(const nlohmann::json& identity);
std::string fnv1a_hex(const std::string& bytes);

}  // namespace vispec
