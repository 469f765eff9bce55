// vispec's own torch.save reader (models/checkpoints/torch_checkpoint.h) on files torch.save itself writes: LlamaGen's
// reference checkpoints (../shared/fixtures/llamagen, made by LlamaGen's training layouts) equal their
// safetensors twins, tensor for tensor; files written at test time by the virtual environment's torch cover
// every dtype, views with offsets and strides, shared storages, parameters, argparse args and nested layouts;
// and untrusted or damaged files are refused in one line without running anything they name.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli.h"
#include "core/check.h"
#include "error_of.h"
#include "io/atomic_file.h"
#include "io/npy.h"
#include "llamagen_fixtures.h"
#include "temp_dir_test.h"
#include "models/checkpoints/load.h"
#include "models/checkpoints/safetensors.h"
#include "models/checkpoints/torch_checkpoint.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
using test::kLlamaGenFixtures;

using test::error_of;
}  // namespace

class TorchSaveFiles : public test::TempDirTest {
 protected:
  TorchSaveFiles() : TempDirTest("pt") {}
  // Runs a Python script with the virtual environment's torch, in `dir`.
  void python(const std::string& script) {
    std::ofstream(dir / "make.py") << script;
    const std::string cmd = "cd " + dir.string() + " && " + VISPEC_TORCH_PYTHON + " make.py";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
};

TEST(TorchCheckpoint, LlamaGenFixturesReadAsTheirSafetensorsTwins) {
  VISPEC_SKIP_WITHOUT_LLAMAGEN_FIXTURES();
  const std::pair<const char*, const char*> pairs[] = {{"c2i_gpt_state_dict.pt", "c2i_gpt.safetensors"},
                                                       {"c2i_gpt_train_layout.pt", "c2i_gpt.safetensors"},
                                                       {"t2i_gpt_train_layout.pt", "t2i_gpt.safetensors"},
                                                       {"vq_train_layout.pt", "vq.safetensors"}};
  for (const auto& [pt, st] : pairs) {
    const auto from_pt = read_torch_checkpoint(kLlamaGenFixtures + pt);
    const auto from_st = read_safetensors(kLlamaGenFixtures + st);
    ASSERT_EQ(from_pt.size(), from_st.size()) << pt;
    for (const auto& [name, t] : from_st) {
      ASSERT_TRUE(from_pt.count(name)) << pt << " lacks " << name;
      EXPECT_TRUE(torch::equal(from_pt.at(name), t)) << pt << ": " << name;
    }
  }
}

TEST_F(TorchSaveFiles, EveryDtypeViewAndLayoutReadsAsTorchWroteIt) {
  python(R"(
import argparse, collections, torch
base = torch.arange(8.)
sd = collections.OrderedDict(
    f32=torch.arange(6.).view(2, 3), bf16=torch.arange(4.).bfloat16(), f16=torch.arange(3.).half(),
    f64=torch.arange(3.).double(), i64=torch.arange(5), i32=torch.arange(5).int(), i16=torch.arange(5).short(),
    i8=torch.arange(-3, 3).to(torch.int8), u8=torch.arange(250, 256).to(torch.uint8),
    b=torch.tensor([True, False, True]), scalar=torch.tensor(2.5),
    transposed=torch.arange(12.).view(3, 4).t(), sliced=torch.arange(10.)[2:7],
    low=base[:4], high=base[4:], param=torch.nn.Parameter(torch.arange(2.)))
torch.save(sd, "bare.pt")
torch.save({"model": sd, "optimizer": None, "steps": 7, "args": argparse.Namespace(lr=1e-4, name="x")}, "train.pt")
torch.save({"model": {"sd": sd}, "note": [1.5, "s", (1, 2)]}, "nested.pt")
torch.save({"ema": sd, "model": {"other": torch.zeros(1)}}, "ema.pt")
)");
  const auto expect_all = [](const TensorMap& m, const std::string& what) {
    const auto f = torch::kFloat32;
    ASSERT_EQ(m.size(), 16u) << what;
    EXPECT_TRUE(torch::equal(m.at("f32"), torch::arange(6, f).view({2, 3}))) << what;
    EXPECT_TRUE(torch::equal(m.at("bf16"), torch::arange(4, f).to(torch::kBFloat16))) << what;
    EXPECT_TRUE(torch::equal(m.at("f16"), torch::arange(3, f).to(torch::kFloat16))) << what;
    EXPECT_TRUE(torch::equal(m.at("f64"), torch::arange(3, torch::kFloat64))) << what;
    EXPECT_TRUE(torch::equal(m.at("i64"), torch::arange(5, torch::kInt64))) << what;
    EXPECT_TRUE(torch::equal(m.at("i32"), torch::arange(5, torch::kInt32))) << what;
    EXPECT_TRUE(torch::equal(m.at("i16"), torch::arange(5, torch::kInt16))) << what;
    EXPECT_TRUE(torch::equal(m.at("i8"), torch::arange(-3, 3, torch::kInt8))) << what;
    EXPECT_TRUE(torch::equal(m.at("u8"), torch::arange(250, 256, torch::kInt32).to(torch::kUInt8))) << what;
    EXPECT_TRUE(torch::equal(m.at("b"), torch::tensor({true, false, true}))) << what;
    EXPECT_TRUE(torch::equal(m.at("scalar"), torch::tensor(2.5f))) << what;
    EXPECT_EQ(m.at("scalar").dim(), 0) << what;
    EXPECT_TRUE(torch::equal(m.at("transposed"), torch::arange(12, f).view({3, 4}).t())) << what;
    EXPECT_TRUE(torch::equal(m.at("sliced"), torch::arange(2, 7, f))) << what;
    EXPECT_TRUE(torch::equal(m.at("low"), torch::arange(4, f))) << what;
    EXPECT_TRUE(torch::equal(m.at("high"), torch::arange(4, 8, f))) << what;
    EXPECT_TRUE(torch::equal(m.at("param"), torch::arange(2, f))) << what;
  };
  expect_all(read_torch_checkpoint(path("bare.pt")), "bare state dict");
  expect_all(read_torch_checkpoint(path("train.pt")), "LlamaGen's training layout with argparse args");
  expect_all(read_torch_checkpoint(path("nested.pt"), "model.sd"), "model.sd");
  expect_all(read_torch_checkpoint(path("ema.pt"), "ema"), "ema");
  const auto err = error_of([&] { read_torch_checkpoint(path("nested.pt"), "model.ema"); });
  EXPECT_NE(err.find("no 'model.ema' in the checkpoint"), std::string::npos) << err;
}

TEST_F(TorchSaveFiles, UntrustedFilesAreRefusedInOneLineAndNothingRuns) {
  python(R"(
import collections, os, torch
class Payload:
    def __reduce__(self):
        return (os.system, ("touch ran",))
torch.save({"model": collections.OrderedDict(w=torch.zeros(2)), "x": Payload()}, "payload.pt")
torch.save({"w": torch.zeros(2)}, "legacy.pt", _use_new_zipfile_serialization=False)
torch.save({"w": torch.zeros(2)}, "good.pt")
data = open("good.pt", "rb").read()
open("truncated.pt", "wb").write(data[: len(data) // 2])
torch.save({"steps": 3}, "no_tensors.pt")
import struct
torch.save({"w": torch.tensor([1234.5678])}, "to_damage.pt")
data = open("to_damage.pt", "rb").read()
pattern = struct.pack("<f", 1234.5678)
assert data.count(pattern) == 1
open("damaged.pt", "wb").write(data.replace(pattern, struct.pack("<f", 1.0)))
)");
  auto err = error_of([&] { read_torch_checkpoint(path("payload.pt")); });
  EXPECT_NE(err.find("global 'posix system' refused"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "ran")) << "the checkpoint ran a command";
  err = error_of([&] { read_torch_checkpoint(path("legacy.pt")); });
  EXPECT_NE(err.find("legacy format"), std::string::npos) << err;
  err = error_of([&] { read_torch_checkpoint(path("truncated.pt")); });
  EXPECT_NE(err.find("truncated.pt: "), std::string::npos) << err;
  err = error_of([&] { read_torch_checkpoint(path("no_tensors.pt")); });
  EXPECT_NE(err.find("holds no tensors"), std::string::npos) << err;
  err = error_of([&] { read_torch_checkpoint(path("damaged.pt")); });  // a weight changed on disk
  EXPECT_NE(err.find("data/0' is damaged (CRC-32"), std::string::npos) << err;
  // Loading checks names and shapes without the data, then the data's CRC-32s before copying any of it.
  torch::nn::Module module;
  auto w = module.register_parameter("w", torch::zeros({1}));
  err = error_of([&] { load_weights(module, path("damaged.pt")); });
  EXPECT_NE(err.find("data/0' is damaged (CRC-32"), std::string::npos) << err;
  EXPECT_EQ(w.item<float>(), 0.0f) << "a damaged checkpoint was copied";
  load_weights(module, path("to_damage.pt"));
  EXPECT_EQ(w.item<float>(), 1234.5678f);
  for (const char* f : {"payload.pt", "legacy.pt", "truncated.pt", "no_tensors.pt", "damaged.pt"}) {
    err = error_of([&] { read_torch_checkpoint(path(f)); });
    EXPECT_FALSE(err.empty()) << f;
    EXPECT_EQ(err.find('\n'), std::string::npos) << f << ": " << err;
  }
}

namespace {
const std::string kConfigs = std::string(VISPEC_SOURCE_DIR) + "/configs/";

// Python that reads the embedded model's weights from their safetensors files by the format's definition (a
// JSON header, then raw little-endian data) into torch tensors: `sd(name)` is an OrderedDict.
const char* const kReadSafetensors = R"(
import collections, json, struct, torch
def sd(name):
    raw = open(CONFIGS + "fmnist/" + name + ".safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = collections.OrderedDict()
    for key, info in sorted(json.loads(raw[8:8 + n]).items()):
        if key != "__metadata__":
            b, e = info["data_offsets"]
            dtype = {"F32": torch.float32, "I64": torch.int64}[info["dtype"]]
            out[key] = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]), dtype=dtype).view(info["shape"])
    return out
)";

// Greedy tokens of a small job on `model_config`, by sample.
std::vector<std::vector<int32_t>> greedy_tokens(const std::string& dir, const std::string& model_config) {
  const std::string out = dir + "/out_" + std::to_string(std::hash<std::string>{}(model_config));
  std::ofstream(dir + "/prompts.txt") << "bag\ncoat\n";
  std::ofstream(dir + "/job.yaml") << "model: " << model_config << "\nprompts: prompts.txt\n"
                                   << "decoder: {name: ar, temperature: 0}\nimages_per_prompt: 2\nout: " << out << "\n";
  const auto r = test::run_vispec("run " + dir + "/job.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.text;
  std::vector<std::vector<int32_t>> tokens;
  for (int id = 0; id < 4 && r.exit_code == 0; ++id)
    tokens.push_back(read_npy_int32(out + "/tokens/0000000" + std::to_string(id) + ".npy"));
  return tokens;
}

// The embedded model's config with absolute paths and the given GPT / VQ weights; written to dir/NAME.
std::string config_with(const std::string& dir, const std::string& name, const std::string& gpt,
                        const std::string& vq) {
  std::string config = read_file(kConfigs + "fmnist.yaml");
  for (size_t at = config.find(" fmnist/"); at != std::string::npos; at = config.find(" fmnist/", at + 1))
    config.replace(at + 1, 0, kConfigs);
  for (const auto& [from, to] : {std::pair<std::string, std::string>{kConfigs + "fmnist/gpt.safetensors", gpt},
                                 {kConfigs + "fmnist/vq.safetensors", vq}})
    config.replace(config.find(from), from.size(), to);
  std::ofstream(dir + "/" + name) << config;
  return dir + "/" + name;
}
}  // namespace

// A user's job on weights in torch.save's format, in LlamaGen's training layout ({"model": OrderedDict, ...}):
// the same greedy tokens as the safetensors files.
TEST_F(TorchSaveFiles, AJobOnTorchSaveWeightsEqualsTheSafetensorsRun) {
  python(std::string("CONFIGS = '") + kConfigs + "'\n" + kReadSafetensors + R"(
for name in ("gpt", "vq"):
    torch.save({"model": sd(name), "optimizer": None, "steps": 1100, "args": None}, name + ".pt")
)");
  const auto reference = greedy_tokens(dir.string(), kConfigs + "fmnist.yaml");
  EXPECT_EQ(greedy_tokens(dir.string(), config_with(dir.string(), "pt.yaml", path("gpt.pt"), path("vq.pt"))),
            reference);
  // An EMA checkpoint: the weights under "ema", chosen by the model config's state_dict_key.
  python(std::string("CONFIGS = '") + kConfigs + "'\n" + kReadSafetensors + R"(
torch.save({"model": {"w": torch.zeros(1)}, "ema": sd("gpt"), "steps": 1100}, "gpt_ema.pt")
)");
  auto config = config_with(dir.string(), "ema.yaml", path("gpt_ema.pt"), path("vq.pt"));
  std::string text = read_file(config);
  text.replace(text.find("  vocab_size:"), 0, "  state_dict_key: ema\n");
  std::ofstream(config) << text;
  EXPECT_EQ(greedy_tokens(dir.string(), config), reference);
}

// Names mapped by the model config: a DistributedDataParallel checkpoint ("module." before every name) with
// strip_prefix, and another codebase's names for the same tensors with rename; two names that map to one are
// refused naming both.
TEST_F(TorchSaveFiles, StripPrefixAndRenamesMapAFilesNamesOntoTheModels) {
  python(std::string("CONFIGS = '") + kConfigs + "'\n" + kReadSafetensors + R"(
gpt = sd("gpt")
torch.save({"model": collections.OrderedDict(("module." + k, v) for k, v in gpt.items())}, "ddp.pt")
other = collections.OrderedDict((k.replace("output.", "lm_head.").replace("layers.", "blocks."), v) for k, v in gpt.items())
torch.save(other, "renamed.pt")
both = collections.OrderedDict(gpt)
both["lm_head.weight"] = gpt["output.weight"]
torch.save(both, "both.pt")
)");
  const auto vq = kConfigs + "fmnist/vq.safetensors";
  const auto reference = greedy_tokens(dir.string(), kConfigs + "fmnist.yaml");
  auto with_keys = [&](const std::string& name, const std::string& weights, const std::string& keys) {
    const auto config = config_with(dir.string(), name, weights, vq);
    std::string text = read_file(config);
    text.replace(text.find("  vocab_size:"), 0, keys);
    std::ofstream(config) << text;
    return config;
  };
  EXPECT_EQ(greedy_tokens(dir.string(), with_keys("ddp.yaml", path("ddp.pt"), "  strip_prefix: module.\n")), reference);
  EXPECT_EQ(greedy_tokens(dir.string(), with_keys("renamed.yaml", path("renamed.pt"),
                                                  "  rename: {lm_head.: output., blocks.: layers.}\n")),
            reference);
  auto run_on = [&](const std::string& config) {
    std::ofstream(dir / "bad_job.yaml") << "model: " << config
                                        << "\nprompts: prompts.txt\ndecoder: {name: ar}\nout: " << path("bad_out")
                                        << "\n";
    return test::run_vispec("run " + path("bad_job.yaml"));
  };
  // Without the mapping the file does not fit, in one line naming a tensor.
  auto r = run_on(config_with(dir.string(), "plain.yaml", path("ddp.pt"), vq));
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_NE(r.text.find("tensor 'module."), std::string::npos) << r.text;
  r = run_on(with_keys("both.yaml", path("both.pt"), "  rename: {lm_head.: output.}\n"));
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("both.pt: tensors 'lm_head.weight' and 'output.weight' both become 'output.weight'"),
            std::string::npos)
      << r.text;
}

// Hugging Face's sharded layouts: model.safetensors.index.json over safetensors shards and
// pytorch_model.bin.index.json over torch.save shards load shard by shard to the same tokens; a tensor in
// another shard than the index says is refused in one line.
TEST_F(TorchSaveFiles, ShardedHuggingFaceLayoutsGiveTheSameTokens) {
  python(std::string("CONFIGS = '") + kConfigs + "'\n" + kReadSafetensors + R"(
import os
gpt = sd("gpt")
names = list(gpt)
halves = [names[: len(names) // 2], names[len(names) // 2 :]]
for kind, ext in (("st", "safetensors"), ("bin", "bin")):
    os.makedirs(kind)
    weight_map = {}
    for i, half in enumerate(halves):
        shard = f"model-0000{i + 1}-of-00002.{ext}" if ext == "safetensors" else f"pytorch_model-0000{i + 1}-of-00002.bin"
        part = collections.OrderedDict((k, gpt[k]) for k in half)
        if ext == "bin":
            torch.save(part, f"{kind}/{shard}")
        else:  # the safetensors format by its definition: header, then data
            header, data = {}, b""
            for k, t in part.items():
                raw = t.contiguous().numpy().tobytes()
                header[k] = {"dtype": {torch.float32: "F32", torch.int64: "I64"}[t.dtype], "shape": list(t.shape),
                             "data_offsets": [len(data), len(data) + len(raw)]}
                data += raw
            h = json.dumps(header).encode()
            h += b" " * (-len(h) % 8)
            open(f"{kind}/{shard}", "wb").write(struct.pack("<Q", len(h)) + h + data)
        weight_map.update({k: shard for k in half})
    index = "model.safetensors.index.json" if ext == "safetensors" else "pytorch_model.bin.index.json"
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, open(f"{kind}/{index}", "w"))
    wrong = dict(weight_map)
    wrong[halves[0][0]] = weight_map[halves[1][0]]
    json.dump({"weight_map": wrong}, open(f"{kind}/wrong.index.json", "w"))
)");
  const auto vq = kConfigs + "fmnist/vq.safetensors";
  const auto reference = greedy_tokens(dir.string(), kConfigs + "fmnist.yaml");
  EXPECT_EQ(
      greedy_tokens(dir.string(), config_with(dir.string(), "st.yaml", path("st/model.safetensors.index.json"), vq)),
      reference);
  EXPECT_EQ(
      greedy_tokens(dir.string(), config_with(dir.string(), "bin.yaml", path("bin/pytorch_model.bin.index.json"), vq)),
      reference);
  std::ofstream(dir / "job.yaml") << "model: "
                                  << config_with(dir.string(), "wrong.yaml", path("st/wrong.index.json"), vq)
                                  << "\nprompts: prompts.txt\ndecoder: {name: ar}\nout: " << path("wrong_out") << "\n";
  const auto r = test::run_vispec("run " + path("job.yaml"));
  EXPECT_EQ(r.exit_code, 2) << r.text;
  EXPECT_EQ(test::count_lines(r.text), 1) << r.text;
  EXPECT_NE(r.text.find("is not where"), std::string::npos) << r.text;
  EXPECT_FALSE(fs::exists(dir / "wrong_out")) << "output written before the weights were checked";
}

}  // namespace vispec
