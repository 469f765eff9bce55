// safetensors and torch checkpoints: round trips, and damaged files rejected with an error naming the problem.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "error_of.h"
#include "io/atomic_file.h"
#include "models/checkpoints/load.h"
#include "models/checkpoints/safetensors.h"
#include "models/checkpoints/torch_checkpoint.h"
#include "tiny_models.h"

namespace vispec {

namespace {
std::string temp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("vispec_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

using test::error_of;

TensorMap sample_tensors() {
  return {{"a.weight", torch::randn({3, 4})},
          {"b.bias", torch::randn({5}).to(torch::kBFloat16)},
          {"c.ids", torch::arange(6, torch::kInt64).view({2, 3})},
          {"d.scalar", torch::tensor(2.5f).reshape({})},
          {"e.empty", torch::zeros({0, 4})}};
}
}  // namespace

TEST(Safetensors, RoundTripKeepsNamesShapesDtypesValuesAndMetadata) {
  const auto path = temp_path("round.safetensors");
  const auto in = sample_tensors();
  write_safetensors(path, in, {{"format_version", "1"}});
  Metadata meta;
  const auto out = read_safetensors(path, &meta);
  ASSERT_EQ(out.size(), in.size());
  for (const auto& [name, t] : in) {
    ASSERT_TRUE(out.count(name)) << name;
    EXPECT_EQ(out.at(name).sizes(), t.sizes()) << name;
    EXPECT_EQ(out.at(name).scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(out.at(name), t)) << name;
  }
  EXPECT_EQ(meta.at("format_version"), "1");
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);  // header padded so the data starts 8-aligned, as the reference writer does
}

TEST(Safetensors, TruncatedFileIsRejected) {
  const auto path = temp_path("trunc.safetensors");
  write_safetensors(path, sample_tensors());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 7);
  const auto err = error_of([&] { read_safetensors(path); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;

  std::filesystem::resize_file(path, 5);
  EXPECT_NE(error_of([&] { read_safetensors(path); }).find("not a safetensors file"), std::string::npos);
}

TEST(Safetensors, CorruptHeaderAndOffsetsAreRejected) {
  const auto path = temp_path("corrupt.safetensors");
  write_safetensors(path, sample_tensors());
  std::string bytes = read_file(path);
  std::string bad = bytes;
  bad[9] = '#';  // break the JSON
  write_file_atomic(path, bad);
  EXPECT_NE(error_of([&] { read_safetensors(path); }).find("corrupt header"), std::string::npos);

  // A shape that disagrees with the stored byte count names the tensor.
  bad = bytes;
  const auto at = bad.find("[3,4]");
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 5, "[4,4]");
  write_file_atomic(path, bad);
  const auto err = error_of([&] { read_safetensors(path); });
  EXPECT_NE(err.find("'a.weight'"), std::string::npos) << err;
}

// Headers that are valid JSON but not what the format allows: each is refused in one line (vispec::Error), never
// a JSON type error (an "internal error") and never a tensor mapped beyond the file.
TEST(Safetensors, HostileHeadersAreRefusedInOneLine) {
  const auto path = temp_path("hostile.safetensors");
  const auto with_header = [&](std::string header, const std::string& data) {
    header += std::string((8 - header.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xFF);
    write_file_atomic(path, bytes + header + data);
    const auto e = error_of([&] { MappedSafetensors m(path); });
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    return e;
  };
  // 2^62 x 8 float32 wraps a 64-bit byte count around to 0: without the overflow check it passed and was mapped.
  auto err = with_header(R"({"x":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,0]}})", "");
  EXPECT_NE(err.find("is too large"), std::string::npos) << err;
  err = with_header(R"({"x":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", "abcd");
  EXPECT_NE(err.find("dtype is not a string"), std::string::npos) << err;
  err = with_header(R"({"x":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", "abcd");
  EXPECT_NE(err.find("shape is not a list"), std::string::npos) << err;
  err = with_header(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd");
  EXPECT_NE(err.find("not a dimension"), std::string::npos) << err;
  err = with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "abcd");
  EXPECT_NE(err.find("data_offsets is not [begin, end]"), std::string::npos) << err;
  err = with_header(R"({"__metadata__":{"k":1}})", "");
  EXPECT_NE(err.find("__metadata__ 'k' is not a string"), std::string::npos) << err;
  err = with_header(R"({"__metadata__":[1]})", "");
  EXPECT_NE(err.find("__metadata__ is not an object"), std::string::npos) << err;
}

TEST(Safetensors, StrictLoadNamesMissingUnknownAndMisshapenTensors) {
  auto gpt = test::tiny_gpt();
  auto state = state_dict(*gpt);
  TensorMap missing = state;
  missing.erase("norm.weight");
  EXPECT_NE(error_of([&] { load_state_dict(*gpt, missing, "x.safetensors"); }).find("'norm.weight' is missing"),
            std::string::npos);
  TensorMap extra = state;
  extra["layers.9.attention.wo.weight"] = torch::zeros({1});
  EXPECT_NE(error_of([&] { load_state_dict(*gpt, extra, "x.safetensors"); }).find("'layers.9.attention.wo.weight'"),
            std::string::npos);
  TensorMap misshapen = state;
  misshapen["output.weight"] = torch::zeros({2, 2});
  const auto err = error_of([&] { load_state_dict(*gpt, misshapen, "x.safetensors"); });
  EXPECT_NE(err.find("'output.weight' has shape [2, 2]"), std::string::npos) << err;
  // Ignorable extras (LlamaGen's freqs_cis) pass.
  TensorMap with_freqs = state;
  with_freqs["freqs_cis"] = torch::zeros({3});
  EXPECT_EQ(error_of([&] { load_state_dict(*gpt, with_freqs, "x", {"freqs_cis"}); }), "");
}

TEST(TorchCheckpoint, PlainAndLlamaGenWrappedStateDictsLoad) {
  auto gpt = test::tiny_gpt(7);
  const auto plain = temp_path("plain.pt");
  write_torch_checkpoint(plain, state_dict(*gpt));
  auto fresh = test::tiny_gpt(8);
  load_weights(*fresh, plain);
  EXPECT_TRUE(torch::equal(fresh->output->weight, gpt->output->weight));

  // LlamaGen's training checkpoints: {"model": state_dict, "steps": N, ...}
  c10::impl::GenericDict inner(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [name, t] : state_dict(*gpt)) inner.insert(name, t);
  c10::impl::GenericDict outer(c10::StringType::get(), c10::AnyType::get());
  outer.insert("model", inner);
  outer.insert("steps", int64_t(1234));
  const auto bytes = torch::pickle_save(c10::IValue(outer));
  const auto wrapped = temp_path("wrapped.pt");
  write_file_atomic(wrapped, std::string(bytes.begin(), bytes.end()));
  auto fresh2 = test::tiny_gpt(9);
  load_weights(*fresh2, wrapped);
  EXPECT_TRUE(torch::equal(fresh2->layers[0]->as<TransformerBlock>()->attention->wqkv->weight,
                           gpt->layers[0]->as<TransformerBlock>()->attention->wqkv->weight));
}

}  // namespace vispec
