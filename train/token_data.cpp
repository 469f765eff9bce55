#include "train/token_data.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <filesystem>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/fashion_data.h"
#include "io/file_digest.h"
#include "io/npy_tensor.h"
#include "models/checkpoints/safetensors.h"
#include "models/drafters/mulo_resamplers.h"
#include "models/model_config.h"
#include "models/vq/load_vq.h"
#include "train/fashion_only.h"
#include "train/image_folder.h"

namespace vispec {

namespace {
namespace fs = std::filesystem;

TokenData from_map(const TensorMap& m) {
  return {m.at("train_tokens"), m.at("train_labels"), m.at("test_tokens"), m.at("test_labels")};
}

// Fashion-MNIST's train and test sets (no flip augmentation: a CPU run sees less than two epochs, so more distinct
// images would not be seen anyway).
TensorMap tokenise_fashion(const ModelConfig& model, bool half, torch::Device device) {
  auto vq = load_vq(model, device);
  auto train = load_fashion_tensors("train", model.image_size());
  auto test = load_fashion_tensors("test", model.image_size());
  if (half) {
    train.images = half_resolution(train.images);
    test.images = half_resolution(test.images);
  }
  spdlog::info("tokenising {} + {} images with {}", train.images.size(0), test.images.size(0), model.vq_weights);
  return {{"train_tokens", tokenize_images(vq, train.images, model.vq_weights)},
          {"train_labels", train.labels},
          {"test_tokens", tokenize_images(vq, test.images, model.vq_weights)},
          {"test_labels", test.labels}};
}

// Splits sequences by the index of their image or file (split_indices), `per` sequences per image.
TensorMap split(const std::vector<torch::Tensor>& tokens, const std::vector<int64_t>& labels, int64_t per) {
  std::vector<int64_t> train, test;
  for (size_t i : split_indices(labels.size(), false)) train.push_back(int64_t(i));
  for (size_t i : split_indices(labels.size(), true)) test.push_back(int64_t(i));
  const auto all = torch::stack(tokens);  // [images, per, T]
  const auto label = torch::tensor(labels, torch::kInt64);
  const auto take = [&](const std::vector<int64_t>& rows, torch::Tensor& t, torch::Tensor& l) {
    const auto at = torch::tensor(rows, torch::kInt64);
    t = all.index_select(0, at).reshape({-1, all.size(2)});
    l = label.index_select(0, at).repeat_interleave(per);
  };
  TensorMap m;
  take(train, m["train_tokens"], m["train_labels"]);
  take(test, m["test_tokens"], m["test_labels"]);
  return m;
}

// This rank's share of a folder's images (every `ranks`-th from `rank`), tokenised: [share, T] int32. The images
// of a chunk are decoded on LibTorch's threads (--threads), then tokenised together.
torch::Tensor tokenise_share(const ImageFolder& folder, const ModelConfig& model, bool half, torch::Device device,
                             int rank, int ranks) {
  auto vq = load_vq(model, device);
  std::vector<size_t> mine;
  for (size_t i = size_t(rank); i < folder.images.size(); i += size_t(ranks)) mine.push_back(i);
  constexpr size_t kChunk = 64;  // images in memory at once
  std::vector<torch::Tensor> tokens;
  for (size_t i = 0; i < mine.size(); i += kChunk) {
    const std::vector<size_t> chunk(mine.begin() + long(i), mine.begin() + long(std::min(i + kChunk, mine.size())));
    auto x = load_folder_images(folder, chunk, model.image_size(), model.vq.in_channels);
    if (half) x = half_resolution(x);
    tokens.push_back(tokenize_images(vq, x, model.vq_weights));
    if ((i / kChunk) % 20 == 19) spdlog::info("tokenised {}/{} images", i + kChunk, mine.size());
  }
  return torch::cat(tokens);
}

// Every rank tokenises its share into a part file of the run directory; rank 0 puts them back in the folder's
// order and returns the split (the other ranks: nothing). The parts are removed once merged.
TensorMap tokenise_folder(const TrainOptions& o, const ImageFolder& folder, const ModelConfig& model, bool half,
                          torch::Device device) {
  auto& ranks = o.ranks();
  spdlog::info("tokenising {} images of {} classes from {} with {} on {} rank(s)", folder.images.size(),
               folder.classes.size(), folder.root, model.vq_weights, ranks.size());
  const auto part = [&](int r) { return o.out_dir + "/tokens.part-" + std::to_string(r) + ".safetensors"; };
  write_safetensors(part(ranks.rank()),
                    {{"tokens", tokenise_share(folder, model, half, device, ranks.rank(), ranks.size())}});
  ranks.barrier();
  if (!o.writes()) return {};
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < ranks.size(); ++r) parts.push_back(read_safetensors(part(r)).at("tokens"));
  std::vector<torch::Tensor> tokens;
  std::vector<int64_t> labels;
  for (size_t i = 0; i < folder.images.size(); ++i) {
    tokens.push_back(parts[i % size_t(ranks.size())][int64_t(i / size_t(ranks.size()))].unsqueeze(0));
    labels.push_back(folder.images[i].label);
  }
  auto data = split(tokens, labels, 1);
  for (int r = 0; r < ranks.size(); ++r) std::filesystem::remove(part(r));
  return data;
}

// The one `*_codes` folder of a LlamaGen code path (or the one of this image size), and its `*_labels` sibling.
std::array<fs::path, 2> code_folders(const std::string& root, int64_t image_size) {
  std::error_code ec;
  VISPEC_CHECK(fs::is_directory(root, ec), root, ": not a folder (--codes wants LlamaGen's --code-path)");
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(root)) {
    const auto name = entry.path().filename().string();
    if (entry.is_directory() && name.size() > 6 && name.compare(name.size() - 6, 6, "_codes") == 0)
      found.push_back(entry.path());
  }
  if (found.size() > 1) {
    const auto suffix = std::to_string(image_size) + "_codes";
    std::vector<fs::path> sized;
    for (const auto& f : found) {
      const auto name = f.filename().string();
      if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
        sized.push_back(f);
    }
    found = sized;
  }
  VISPEC_CHECK(found.size() == 1, root, ": ", found.empty() ? "no" : "more than one",
               " <dataset><size>_codes folder (LlamaGen's extract_codes_c2i.py writes one per image size)");
  auto labels = found[0].string();
  labels.replace(labels.size() - 6, 6, "_labels");
  VISPEC_CHECK(fs::is_directory(labels, ec), labels, ": missing (the class of each code file)");
  return {found[0], labels};
}

TensorMap read_codes(const std::string& root, const ModelConfig& model, int64_t T, int64_t num_classes) {
  const auto [codes_dir, labels_dir] = code_folders(root, model.image_size());
  int64_t files = 0;
  for (const auto& entry : fs::directory_iterator(codes_dir))
    if (entry.path().extension() == ".npy") ++files;
  VISPEC_CHECK(files > 0, codes_dir.string(), ": no .npy code files");
  spdlog::info("reading {} code files from {}", files, codes_dir.string());
  std::vector<torch::Tensor> tokens(static_cast<size_t>(files));
  std::vector<int64_t> labels(static_cast<size_t>(files));
  const int64_t vocab = model.gpt.vocab_size;
  const auto read_file = [&](int64_t i) {  // file i's codes and class; returns its augmentations
    const auto name = std::to_string(i) + ".npy";
    const auto path = (codes_dir / name).string();
    VISPEC_CHECK(fs::exists(path), path, ": missing (code files are numbered 0 .. ", files - 1, ")");
    // LlamaGen writes int64 codes and labels: another type (float features, bool, float labels) is another file,
    // refused rather than cast.
    const auto integers = [](const torch::Tensor& t, const std::string& at, const char* what) {
      VISPEC_CHECK(torch::isIntegralType(t.scalar_type(), /*includeBool=*/false), at, ": ", what, " of dtype ",
                   t.scalar_type(), ", not integers (LlamaGen's extract_codes writes int64)");
    };
    auto codes = read_npy_tensor(path);
    integers(codes, path, "codes");
    codes = codes.to(torch::kInt64);
    VISPEC_CHECK(codes.dim() >= 1 && codes.dim() <= 3 && codes.numel() > 0 && codes.size(-1) == T, path,
                 ": codes of shape ", codes.sizes(), ", not [1, augmentations, ", T, "] (", T,
                 ": the trained GPT's grid squared)");
    codes = codes.reshape({-1, T});
    VISPEC_CHECK(codes.min().item<int64_t>() >= 0 && codes.max().item<int64_t>() < vocab, path,
                 ": a code outside the model's vocabulary of ", vocab);
    const auto label_path = (labels_dir / name).string();
    auto label = read_npy_tensor(label_path);
    integers(label, label_path, "a class");
    label = label.to(torch::kInt64).reshape(-1);
    VISPEC_CHECK(label.numel() == 1, label_path, ": ", label.numel(), " values, not one class");
    const int64_t y = label.item<int64_t>();
    VISPEC_CHECK(y >= 0 && y < num_classes, label_path, ": class ", y, " outside the model's ", num_classes);
    tokens[size_t(i)] = codes.to(vocab <= 32768 ? torch::kInt16 : torch::kInt32);
    labels[size_t(i)] = y;
    return codes.size(0);
  };
  // File 0 first (every other file must have its augmentations, and a folder of wrong files is reported by its
  // first), then the rest on LibTorch's threads (--threads): a million small files on a shared filesystem.
  const int64_t per = read_file(0);
  at::parallel_for(1, files, 1, [&](int64_t from, int64_t to) {
    for (int64_t i = from; i < to; ++i) {
      const int64_t augmentations = read_file(i);
      VISPEC_CHECK(augmentations == per, (codes_dir / (std::to_string(i) + ".npy")).string(), ": ", augmentations,
                   " augmentations where ", (codes_dir / "0.npy").string(), " has ", per);
    }
  });
  return split(tokens, labels, per);
}

// What a token cache was made from: the source, every file's path and size (the images, or the code and label
// files), the image size and whether at half resolution.
std::string cache_source(const TrainOptions& o, const ModelConfig& model, bool half, const ImageFolder* folder) {
  const std::string size_and_vq =
      std::to_string(model.image_size()) + " px" + (half ? " at half resolution" : "") + ", VQ " + model.vq_weights;
  if (!folder && o.codes.empty()) return "Fashion-MNIST, " + size_and_vq;
  std::vector<std::string> files;
  if (folder) {
    for (const auto& image : folder->images) files.push_back(image.path);
  } else {
    for (const auto& dir : code_folders(o.codes, model.image_size()))
      for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file()) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
  }
  uint64_t h = kFnv1aBasis;
  for (const auto& f : files) {
    h = fnv1a(f.data(), f.size(), h);
    const auto bytes = fs::file_size(f);
    h = fnv1a(&bytes, sizeof bytes, h);
  }
  return (folder ? "images " + fs::absolute(o.images).string() : "codes " + fs::absolute(o.codes).string()) + " (" +
         std::to_string(files.size()) + " files, hash " + std::to_string(h) + "), " + size_and_vq;
}
}  // namespace

TokenData load_token_data(const TrainOptions& o, const ModelConfig& model, bool half, int64_t tokens,
                          int64_t num_classes, torch::Device device) {
  VISPEC_CHECK(o.images.empty() || o.codes.empty(), "--images or --codes, not both");
  const std::string cache = o.out_dir + "/tokens.safetensors";
  const bool fashion = o.images.empty() && o.codes.empty();
  if (fashion) check_fashion_model(model, "train gpt without --images or --codes");
  VISPEC_CHECK(o.codes.empty() || !half, "--codes with --mulo: LlamaGen's codes are of full-resolution images");
  std::unique_ptr<ImageFolder> folder;
  if (!o.images.empty()) folder = std::make_unique<ImageFolder>(scan_image_folder(o.images, num_classes));
  // Only rank 0 checks or writes the cache: the other ranks do not stat every file of the source again. Every
  // source is checked, Fashion-MNIST's too: a cache proves by its recorded source what it holds.
  const auto source = o.writes() ? cache_source(o, model, half, folder.get()) : std::string();
  const bool cached = file_exists(cache);  // every rank's answer is the same: nothing writes it before a barrier
  if (cached && o.writes()) {
    Metadata made;
    read_safetensors(cache, &made);
    const auto recorded = made.find("source");
    // A cache without its source is Fashion-MNIST's (made before caches recorded one, or by
    // scripts/gpt_token_cache.py for quick runs): taken for Fashion-MNIST only.
    const bool unrecorded_fashion = fashion && recorded == made.end();
    VISPEC_CHECK(unrecorded_fashion || (recorded != made.end() && recorded->second == source), cache, ": tokens of ",
                 recorded != made.end() ? recorded->second : "an unrecorded source", ", not of ", source,
                 "; train into another --out");
  }
  if (!cached) {
    auto data = folder        ? tokenise_folder(o, *folder, model, half, device)  // every rank a share
                : !o.writes() ? TensorMap{}
                : fashion     ? tokenise_fashion(model, half, device)
                              : read_codes(o.codes, model, tokens, num_classes);
    if (o.writes()) write_safetensors(cache, data, {{"source", source}});
  }
  o.ranks().barrier();
  auto data = from_map(read_safetensors(cache));
  VISPEC_CHECK(data.train_tokens.size(1) == tokens, cache, ": sequences of ", data.train_tokens.size(1),
               " tokens where the trained GPT has ", tokens);
  return data;
}

}  // namespace vispec
