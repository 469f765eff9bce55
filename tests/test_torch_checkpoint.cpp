// vispec's own torch.save reader (models/torch_checkpoint.h) on files torch.save itself writes: LlamaGen's
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
#include "io/atomic_file.h"
#include "io/npy.h"
#include "models/safetensors.h"
#include "models/torch_checkpoint.h"

namespace vispec {

namespace fs = std::filesystem;

namespace {
const std::string kFixtures = std::string(VISPEC_SOURCE_DIR) + "/../shared/fixtures/llamagen/";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class TorchSaveFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("vispec_pt_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  // Runs a Python script with the virtual environment's torch, in `dir`.
  void python(const std::string& script) {
    std::ofstream(dir / "make.py") << script;
    const std::string cmd = "cd " + dir.string() + " && " + VISPEC_TORCH_PYTHON + " make.py";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  fs::path dir;
};
}  // namespace

TEST(TorchCheckpoint, LlamaGenFixturesReadAsTheirSafetensorsTwins) {
  if (!fs::exists(kFixtures)) GTEST_SKIP() << "no " << kFixtures << " (the shared fixtures are not on this machine)";
  const std::pair<const char*, const char*> pairs[] = {{"c2i_gpt_state_dict.pt", "c2i_gpt.safetensors"},
                                                       {"c2i_gpt_train_layout.pt", "c2i_gpt.safetensors"},
                                                       {"t2i_gpt_train_layout.pt", "t2i_gpt.safetensors"},
                                                       {"vq_train_layout.pt", "vq.safetensors"}};
  for (const auto& [pt, st] : pairs) {
    const auto from_pt = read_torch_checkpoint(kFixtures + pt);
    const auto from_st = read_safetensors(kFixtures + st);
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
  for (const char* f : {"payload.pt", "legacy.pt", "truncated.pt", "no_tensors.pt", "damaged.pt"}) {
    err = error_of([&] { read_torch_checkpoint(path(f)); });
    EXPECT_FALSE(err.empty()) << f;
    EXPECT_EQ(err.find('\n'), std::string::npos) << f << ": " << err;
  }
}

// A user's job on weights in torch.save's format: the embedded model's GPT and VQ written by torch.save (the
// virtual environment's torch) give the same greedy tokens as the safetensors files.
TEST_F(TorchSaveFiles, AJobOnTorchSaveWeightsEqualsTheSafetensorsRun) {
  const std::string src = std::string(VISPEC_SOURCE_DIR) + "/configs/";
  // torch.save in LlamaGen's training layout, {"model": OrderedDict, ...}, of the embedded weights (read from
  // their safetensors files by the format's definition: a JSON header, then raw little-endian data).
  python(R"(
import collections, json, struct, torch
dtypes = {"F32": torch.float32, "I64": torch.int64}
for name in ("gpt", "vq"):
    raw = open(")" + src + R"(fmnist/" + name + ".safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    sd = collections.OrderedDict()
    for key, info in sorted(header.items()):
        if key == "__metadata__":
            continue
        b, e = info["data_offsets"]
        sd[key] = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]), dtype=dtypes[info["dtype"]]).view(info["shape"])
    torch.save({"model": sd, "optimizer": None, "steps": 1100, "args": None}, name + ".pt")
)");
  std::string config = read_file(src + "fmnist.yaml");
  for (size_t at = config.find(" fmnist/"); at != std::string::npos; at = config.find(" fmnist/", at + 1))
    config.replace(at + 1, 0, src);
  for (const char* name : {"gpt", "vq"}) {
    const std::string from = src + "fmnist/" + name + ".safetensors";
    config.replace(config.find(from), from.size(), path(std::string(name) + ".pt"));
  }
  std::ofstream(dir / "model.yaml") << config;
  std::ofstream(dir / "prompts.txt") << "bag\ncoat\n";
  for (const char* model : {"model.yaml", "SAFETENSORS"}) {
    const std::string m = std::string(model) == "SAFETENSORS" ? src + "fmnist.yaml" : path(model);
    const std::string out = path(std::string("out_") + (m == path(model) ? "pt" : "st"));
    std::ofstream(dir / "job.yaml") << "model: " << m << "\nprompts: prompts.txt\ndecoder: {name: ar, temperature: 0}\n"
                                    << "images_per_prompt: 2\nout: " << out << "\n";
    const auto r = test::run_vispec("run " + path("job.yaml"));
    ASSERT_EQ(r.exit_code, 0) << r.text;
  }
  for (int id = 0; id < 4; ++id) {
    const std::string npy = "/tokens/0000000" + std::to_string(id) + ".npy";
    EXPECT_EQ(read_npy_int32(path("out_pt") + npy), read_npy_int32(path("out_st") + npy)) << npy;
  }
}

}  // namespace vispec
