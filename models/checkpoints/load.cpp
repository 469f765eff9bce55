#include "models/checkpoints/load.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/mapped_file.h"
#include "models/checkpoints/node_weights.h"
#include "models/checkpoints/torch_checkpoint.h"

namespace vispec {

namespace {
std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

torch::Dtype model_dtype(const std::string& name) {
  if (name == "fp32") return torch::kFloat32;
  if (name == "bf16") return torch::kBFloat16;
  if (name == "fp16") return torch::kFloat16;
  VISPEC_FAIL("unknown model dtype '", name, "' (expected fp32, bf16 or fp16)");
}

TensorMap state_dict(const torch::nn::Module& module) {
  TensorMap out;
  for (const auto& p : module.named_parameters()) out[p.key()] = p.value();
  for (const auto& b : module.named_buffers()) out[b.key()] = b.value();
  return out;
}

namespace {
bool is_torch_checkpoint(const std::string& path) {
  return ends_with(path, ".pt") || ends_with(path, ".pth") || ends_with(path, ".bin") || ends_with(path, ".ckpt");
}

// The HF sharded layout: DIR/model.safetensors.index.json (or pytorch_model.bin.index.json) maps every tensor
// name to the shard that holds it, {"metadata": {...}, "weight_map": {"name": "model-00001-of-00002.safetensors"}}.
bool is_shard_index(const std::string& path) { return ends_with(path, ".index.json"); }

struct ShardIndex {
  std::vector<std::string> shards;                   // paths, in first-mention order
  std::map<std::string, std::string> shard_of_name;  // tensor name -> shard path
};

ShardIndex read_shard_index(const std::string& path) {
  const auto j = nlohmann::json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
  VISPEC_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), path,
               ": not a shard index (no \"weight_map\" object)");
  const auto dir = std::filesystem::path(path).parent_path();
  ShardIndex index;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    VISPEC_CHECK(shard.is_string(), path, ": weight_map['", name, "'] is not a file name");
    const auto file = shard.get<std::string>();
    VISPEC_CHECK(!file.empty() && file.find('/') == std::string::npos, path, ": weight_map['", name, "'] = '", file,
                 "' is not a file beside the index");
    const auto shard_path = (dir / file).string();
    if (std::find(index.shards.begin(), index.shards.end(), shard_path) == index.shards.end())
      index.shards.push_back(shard_path);
    index.shard_of_name[name] = shard_path;
  }
  VISPEC_CHECK(!index.shards.empty(), path, ": the weight_map is empty");
  return index;
}

// Calls f(views, source) for each file of the weights in turn: one for a plain file, each shard of an index.
// The views are valid during the call only (the file is mapped, then unmapped): loading shard by shard keeps
// one shard's pages in memory at a time, never the whole checkpoint. check_data: torch.save files' storages
// are CRC-checked (index_torch_checkpoint); a pass that only wants names and shapes before a checked copy
// pass skips that read of the data.
void for_each_weight_file(const std::string& path, const std::function<void(const TensorMap&, const std::string&)>& f,
                          const std::string& state_dict_key = "", bool check_data = true) {
  VISPEC_CHECK(state_dict_key.empty() || is_torch_checkpoint(path) || is_shard_index(path), path, ": state_dict_key '",
               state_dict_key, "' applies to torch.save files only");
  if (ends_with(path, ".safetensors")) {
    f(MappedSafetensors(path).tensors(), path);
  } else if (is_torch_checkpoint(path)) {
    const MappedFile file(path);
    f(torch_checkpoint_views(file, path, state_dict_key, check_data), path);
  } else if (is_shard_index(path)) {
    const auto index = read_shard_index(path);
    for (const auto& shard : index.shards) {
      VISPEC_CHECK(!is_shard_index(shard), path, ": a shard that is itself an index");
      for_each_weight_file(
          shard,
          [&](const TensorMap& views, const std::string& source) {
            for (const auto& [name, t] : views) {
              const auto it = index.shard_of_name.find(name);
              VISPEC_CHECK(it != index.shard_of_name.end() && it->second == shard, source, ": tensor '", name,
                           "' is not where ", path, " puts it");
            }
            f(views, source);
          },
          state_dict_key, check_data);
    }
  } else {
    VISPEC_FAIL(path,
                ": unknown weight format (expected .safetensors, .pt, .pth, .bin, .ckpt or a shard index "
                "*.index.json)");
  }
}

// The rows `ids` of file tensor t (module tensor `name`), or their shape alone on the meta device.
torch::Tensor take_rows(const torch::Tensor& t, const std::vector<int64_t>& ids, const std::string& source,
                        const std::string& name, bool shapes_only) {
  const int64_t last = ids.empty() ? -1 : *std::max_element(ids.begin(), ids.end());
  VISPEC_CHECK(t.dim() >= 1 && last < t.size(0), source, ": tensor '", name, "' has ", t.dim() ? t.size(0) : 0,
               " rows, the model takes its row ", last);
  auto sizes = t.sizes().vec();
  sizes[0] = int64_t(ids.size());
  if (shapes_only) return torch::empty(sizes, torch::TensorOptions().device(torch::kMeta).dtype(t.dtype()));
  return t.index_select(0, torch::tensor(ids, torch::kInt64));
}

// for_each_weight_file with the file's names mapped to the module's (keys): ignored tensors dropped, renamed,
// and the rows a module tensor takes taken (shapes_only: as meta tensors of their shape, no data read). Two
// file tensors that map to one name are an error naming both.
void for_each_mapped_weight_file(const std::string& path, const WeightKeys& keys,
                                 const std::function<void(const TensorMap&, const std::string&)>& f,
                                 bool check_data = true, bool shapes_only = false) {
  std::map<std::string, std::string> mapped_from;  // across shards: module name -> file name
  for_each_weight_file(
      path,
      [&](const TensorMap& views, const std::string& source) {
        if (!keys.renaming() && keys.ignore.empty() && keys.take_rows.empty()) return f(views, source);
        TensorMap mapped;
        for (const auto& [name, t] : views) {
          if (keys.ignored(name)) continue;
          const auto to = keys.map(name);
          const auto [it, fresh] = mapped_from.emplace(to, name);
          VISPEC_CHECK(fresh, source, ": tensors '", it->second, "' and '", name, "' both become '", to,
                       "' under the model config's weight names");
          const auto rows = keys.take_rows.find(to);
          auto& m = mapped[to] =
              rows == keys.take_rows.end() ? t : take_rows(t, rows->second, source, name, shapes_only);
          if (m.dim() == 2 && keys.is_conv1x1_from_linear(to)) m = m.view({m.size(0), m.size(1), 1, 1});
        }
        f(mapped, source);
      },
      keys.state_dict_key, check_data);
}

// Shapes and dtypes of every tensor of the weights, on the meta device: what checks need, with no data.
TensorMap weight_shapes(const std::string& path, const WeightKeys& keys, bool check_data = true) {
  TensorMap shapes;
  for_each_mapped_weight_file(
      path, keys,
      [&](const TensorMap& views, const std::string&) {
        for (const auto& [name, t] : views)
          shapes[name] = torch::empty(t.sizes(), torch::TensorOptions().device(torch::kMeta).dtype(t.dtype()));
      },
      check_data, /*shapes_only=*/true);
  return shapes;
}
}  // namespace

std::vector<std::string> weight_files(const std::string& path) {
  return is_shard_index(path) ? read_shard_index(path).shards : std::vector<std::string>{path};
}

TensorMap read_weights(const std::string& path) {
  TensorMap out;
  for_each_weight_file(path, [&](const TensorMap& views, const std::string&) {
    for (const auto& [name, t] : views) out[name] = t.clone(at::MemoryFormat::Contiguous);
  });
  return out;
}

void check_state_dict(const torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                      const std::vector<std::string>& ignore_prefixes, const WeightKeys& keys) {
  const auto own = state_dict(module);
  for (const auto& [name, t] : tensors) {
    if (own.count(name)) continue;
    bool ignored = false;
    for (const auto& p : ignore_prefixes) ignored = ignored || name.rfind(p, 0) == 0;
    VISPEC_CHECK(ignored, source, ": tensor '", name, "' does not belong to the model (wrong config?)");
  }
  for (const auto& [name, dst] : own) {
    auto it = tensors.find(name);
    VISPEC_CHECK(it != tensors.end(), source, ": tensor '", name, "' is missing (model expects shape ",
                 shape_str(dst.sizes()), ")");
    const auto& got = it->second.sizes();
    const bool one_row = keys.may_be_one_row(name) && got.size() == dst.sizes().size() && !got.empty() && got[0] == 1 &&
                         got.slice(1) == dst.sizes().slice(1);
    VISPEC_CHECK(got == dst.sizes() || one_row, source, ": tensor '", name, "' has shape ",
                 shape_str(it->second.sizes()), ", model expects ", shape_str(dst.sizes()));
  }
}

void check_weights_file(const torch::nn::Module& module, const std::string& path,
                        const std::vector<std::string>& ignore_prefixes, const WeightKeys& keys) {
  check_state_dict(module, weight_shapes(path, keys), path, ignore_prefixes, keys);
}

void load_state_dict(torch::nn::Module& module, const TensorMap& tensors, const std::string& source,
                     const std::vector<std::string>& ignore_prefixes) {
  check_state_dict(module, tensors, source, ignore_prefixes);
  torch::NoGradGuard no_grad;
  for (auto& [name, dst] : state_dict(module)) dst.copy_(tensors.at(name));
}

namespace {
// The node's reader hands every tensor load_weights fills (the module's state dict, in name order) to the
// node's other processes. A census comes first, so that a process whose module differs (a bug: the scope's
// processes build one architecture) stops with a message rather than receiving into the wrong tensors.
void share_on_node(torch::nn::Module& module, NodeWeights& node, const std::string& path) {
  auto own = state_dict(module);
  int64_t elements = 0, bytes = 0;
  for (const auto& [name, t] : own) {
    elements += t.numel();
    bytes += int64_t(t.nbytes());
  }
  auto census = torch::tensor({int64_t(own.size()), elements}, torch::kInt64);
  node.share(census);
  VISPEC_ASSERT(census[0].item<int64_t>() == int64_t(own.size()) && census[1].item<int64_t>() == elements, path,
                ": the node's reader loaded ", census[0].item<int64_t>(), " tensors of ", census[1].item<int64_t>(),
                " elements, this process's module has ", own.size(), " of ", elements);
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : own) node.share(t);
  if (!node.reads_files()) count_weight_traffic(0, bytes);
}
}  // namespace

void load_weights(torch::nn::Module& module, const std::string& path, const std::vector<std::string>& ignore_prefixes,
                  const WeightKeys& keys) {
  NodeWeights* node = node_weights_in_scope();
  if (node && node->processes() > 1 && !node->reads_files()) return share_on_node(module, *node, path);
  // Checked whole first (names and shapes from headers), then copied file by file straight from the mapped
  // bytes into the parameters, converted to their device and dtype on the way: no host copy of the weights.
  // The check reads names and shapes only; the copy pass below checks the data's CRC-32s (a torch.save file)
  // before it copies anything, so a large checkpoint is read twice here, not three times.
  check_state_dict(module, weight_shapes(path, keys, /*check_data=*/false), path, ignore_prefixes, keys);
  auto own = state_dict(module);
  torch::NoGradGuard no_grad;
  int64_t read = 0;
  for_each_mapped_weight_file(path, keys, [&](const TensorMap& views, const std::string&) {
    for (const auto& [name, t] : views)
      if (const auto it = own.find(name); it != own.end()) {
        it->second.copy_(t);  // broadcasts a tensor stored as one row for all (checked above)
        read += int64_t(t.nbytes());
      }
  });
  count_weight_traffic(read, 0);
  if (node && node->processes() > 1) share_on_node(module, *node, path);
}

void save_weights(const torch::nn::Module& module, const std::string& path, const Metadata& metadata) {
  write_safetensors(path, state_dict(module), metadata);
}

}  // namespace vispec
