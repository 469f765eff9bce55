// A job, planned: the checked job file, its model config, and where the samples its prompt list asks for are.
// Sample i * images_per_prompt + j is image j of prompt i: the sample's identity in every file name, every
// random draw and every unit of work, whatever rank or batch decodes it.
//
// A prompt line is, for a class-conditional model, a class name or id; for a text-conditional one,
// "npy:FILE" naming caption features ([L, caption_dim] or [1, L, caption_dim] float, L <= cls_token_num: the
// encoder's outputs at the caption's tokens, as LlamaGen's feature extraction saves them; FILE relative to the
// prompt file's directory); with a text encoder in the model config, a caption; for a prompted model (Chameleon,
// Janus-Pro, Emu3), a caption that the config's prompt template wraps and tokenises. A bad line does not stop the
// job: it is recorded in `errors` (file, line, message) and its sample ids are left unused, so every other
// sample keeps its id.
//
// Memory is per unit, not per sample: planning streams the prompt list once and keeps, for each unit, where
// in the file its first prompt is (UnitStart); a worker reads its unit's prompts from there when it gets the
// unit. A job of 10^8 samples in units of 64 keeps 1.6 M starts (37 MB) on rank 0 and nothing on the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decoding/common/decoder_config.h"
#include "io/job_config.h"
#include "models/model_config.h"

namespace vispec {

struct PlannedSample {
  uint64_t sample_id = 0;
  int64_t class_id = -1;  // class-conditional models
  std::string prompt;
  std::string features;  // text-conditional models given "npy:FILE": the caption features file's path
  std::vector<int64_t> prompt_ids, null_prompt_ids;  // prompted models: both streams' templated, tokenised prompts
  // MuLo-SD's drafter's own prompts (drafters.mulo.prompt: its image size); empty where it reads the target's
  std::vector<int64_t> drafter_prompt_ids, drafter_null_prompt_ids;
};

struct PromptError {
  std::string file;
  int64_t line = 0;
  std::string message;  // "file:line: prompt: unknown class name 'sock' (known: ...)"
};

// Where a unit's first sample's prompt is: its line's byte offset and number, and its index among the prompts;
// and what its prompts were when planned: how many, and the FNV-1a of their texts (each followed by a newline),
// which the worker that reads them checks (0 prompts: nothing to check, as for a bench's whole-list read).
struct UnitStart {
  uint64_t offset = 0;
  int64_t line = 1;
  uint64_t prompt = 0;
  uint64_t prompts = 0;
  uint64_t fnv = 0;
};

struct SamplePlan {
  uint64_t id_count = 0;         // prompts * images_per_prompt: ids [0, id_count), some possibly unused
  int64_t samples = 0;           // ids of prompts without errors
  std::vector<UnitStart> units;  // unit u holds ids [u * unit_size, (u + 1) * unit_size)
  std::vector<PromptError> errors;
  uint64_t prompts_fnv = 0;  // FNV-1a of the prompt file's bytes
};

// Streams the prompt list once; an unreadable or empty list is an error (thrown), a bad line is recorded.
SamplePlan plan_samples(const ModelConfig& model, const std::string& prompts_file, int64_t images_per_prompt,
                        int64_t unit_size);
// The samples of ids [first_id, end_id) (those of bad lines left out), read from `source` at `start`, which
// must hold id first_id's prompt: the prompt file itself or the run's snapshot of it (io/run_layout.h), whose
// lines are the file's; messages name the prompt file, and npy:FILE prompts are relative to its directory.
// Prompts other than the planned ones (start.prompts and start.fnv) are an error naming `source`.
std::vector<PlannedSample> read_samples(const ModelConfig& model, const std::string& source,
                                        const std::string& prompts_file, int64_t images_per_prompt,
                                        const UnitStart& start, uint64_t first_id, uint64_t end_id);

// The prompt file's snapshot in the run's directory (io/run_layout.h's prompts_snapshot_path), which the
// workers read: a copy whose bytes are the planned ones (`fnv`, the plan's prompts_fnv), kept if already
// there (a resume), else copied from the prompt file and checked. Rank 0, after the output lock is held.
void snapshot_prompts(const std::string& prompts_file, const std::string& out, uint64_t fnv);

struct JobPlan {
  JobConfig job;
  ModelConfig model;
  DecoderConfig decoder;  // job.decoder parsed and checked against the model config
  SamplePlan plan;        // filled on rank 0 only (workers get each unit's UnitStart with the unit)
};

// Reads and checks the job file, its model config and its decoder; with first_rank also the weight files
// (names, shapes and a torch.save file's checksums: a whole read of a large checkpoint, made once per job,
// not once per rank) and the prompts. Writes nothing.
JobPlan plan_job(const std::string& job_file, const std::vector<std::string>& overrides = {},
                 const std::string& out_override = "", bool first_rank = true);

}  // namespace vispec
