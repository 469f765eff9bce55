// The self-distillation data format, version 1 (what `distill:` in a job writes; EAGLE and SSD heads train
// on it). Readable with Debian's python3-h5py; `vispec inspect FILE.h5` prints it.
//
// OUT/distill/unit-000012.h5, one file per unit of the job, written by a background thread under a
// temporary name, fsynced and renamed before the unit is journaled. N = samples of the unit, S = streams
// (1: cond, 2: cond then uncond), T = grid^2 image tokens, D = model width.
//
//   hidden     [N, S, T, D]  the target's last-layer output before the final norm, teacher-forced over the
//                            sample's final tokens: hidden[n, s, t] sits at the sequence position whose
//                            logits predict image token t (t = 0 is the last condition position), so
//                            hidden[n, s, t] and tokens[n, t] form EAGLE's (feature, next token) pair.
//                            dtype fp32: float32; fp16: IEEE half (h5py reads numpy float16); bf16: uint16
//                            holding the bfloat16 bits, with attribute dtype = "bfloat16" (numpy has no
//                            bfloat16: widen with (x.astype(uint32) << 16).view(float32)). A custom HDF5
//                            float type for bf16 would be read by h5py as float16 and silently wrong.
//   tokens     [N, T]        int32, the sample's image tokens in raster order
//   class_id   [N]           int64, the class id; -1 for a caption or a prompted model's prompt (not stored)
//   sample_id  [N]           int64, the sample's id in the job (the key of its randomness with the seed)
//   Root attributes: schema = "vispec-distill", version = 1, unit, model, decoder, seed, cfg_scale,
//   temperature, top_k, top_p, streams ("cond" or "cond,uncond"), hidden_kind = "pre_norm", dtype,
//   grid_size, hidden_dim, samples (= N).
//   Chunks: hidden [1, 1, Tc, D] with Tc rows chosen so a chunk is at most 1 MiB (64 KiB for the embedded
//   model in bf16); the small datasets are contiguous. Optional gzip (+ shuffle) at the job's level.
//
// OUT/distill/index.h5, built by rank 0 at the end of a run (and by `vispec distill-index OUT`) over exactly
// the journaled units: the four datasets above as HDF5 Virtual Datasets spanning every unit file in unit
// order (source paths relative to the index), the same root attributes without `unit`, and a table
//   units/unit [U] int64, units/offset [U] int64, units/length [U] int64, units/file [U] string,
//   units/bytes [U] int64, units/crc32 [U] int64 (the unit file's journaled size and CRC-32; -1 if unknown)
// that tells a reader where every unit's rows are without opening the unit files. Readers check each unit
// file's size against units/bytes before reading: HDF5 reads a missing source of a virtual dataset as zeros.
#pragma once

#include <cstdint>
#include <string>

namespace vispec {

inline constexpr int kDistillSchemaVersion = 1;
inline constexpr const char* kDistillSchemaName = "vispec-distill";

enum class DistillDtype { kFloat32, kFloat16, kBFloat16 };

struct DistillOptions {
  bool enabled = false;
  int streams = 1;  // 1: cond; 2: cond and uncond
  DistillDtype dtype = DistillDtype::kBFloat16;
  int compression = 0;  // gzip level, 0 = none
};

inline const char* dtype_name(DistillDtype d) {
  return d == DistillDtype::kFloat32 ? "fp32" : d == DistillDtype::kFloat16 ? "fp16" : "bf16";
}
inline int dtype_bytes(DistillDtype d) { return d == DistillDtype::kFloat32 ? 4 : 2; }

std::string distill_unit_path(const std::string& out_dir, int64_t unit);  // OUT/distill/unit-000012.h5
std::string distill_index_path(const std::string& out_dir);               // OUT/distill/index.h5

}  // namespace vispec
