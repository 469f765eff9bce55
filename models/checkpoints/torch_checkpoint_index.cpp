#include "models/checkpoints/torch_checkpoint_index.h"

#include <cstring>
#include <set>

#include "core/check.h"
#include "models/checkpoints/safetensors_header.h"
#include "models/checkpoints/torch_pickle.h"

namespace vispec {

namespace {
using Kind = PickleValue::Kind;

PickleRef dict_get(const PickleRef& dict, const std::string& key) {
  if (dict->kind != Kind::kDict) return nullptr;
  for (const auto& [k, v] : dict->dict)
    if (k->kind == Kind::kString && k->text == key) return v;
  return nullptr;
}

PickleRef select_state_dict(PickleRef root, const std::string& key, const std::string& path) {
  if (!key.empty()) {
    size_t start = 0;
    for (;;) {
      const size_t dot = key.find('.', start);
      const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      root = dict_get(root, part);
      VISPEC_CHECK(root, path, ": no '", key.substr(0, dot), "' in the checkpoint (state_dict_key: ", key, ")");
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    return root;
  }
  for (int depth = 0; depth < 2; ++depth) {
    PickleRef inner;
    for (const char* k : {"model", "module", "state_dict"})
      if (auto v = dict_get(root, k); v && v->kind == Kind::kDict) {
        inner = v;
        break;
      }
    if (!inner) break;
    root = inner;
  }
  return root;
}

// The tensor's last element, in elements of its storage; -1 for an empty tensor. Overflow-safe.
int64_t last_element(const TorchTensorRecord& t, const std::string& where) {
  int64_t last = t.offset;
  VISPEC_CHECK(t.offset >= 0, where, ": negative storage offset");
  for (size_t i = 0; i < t.shape.size(); ++i) {
    VISPEC_CHECK(t.shape[i] >= 0 && t.stride[i] >= 0, where, ": negative size or stride");
    if (t.shape[i] == 0) return -1;
    int64_t step = 0;
    VISPEC_CHECK(
        !__builtin_mul_overflow(t.shape[i] - 1, t.stride[i], &step) && !__builtin_add_overflow(last, step, &last),
        where, ": shape and strides reach past any storage");
  }
  return last;
}
}  // namespace

std::vector<TorchTensorRecord> index_torch_checkpoint(const uint8_t* bytes, uint64_t size, const std::string& path,
                                                      const std::string& state_dict_key, bool check_data) {
  static const uint8_t kLegacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8};
  VISPEC_CHECK(!(size >= sizeof(kLegacy) && std::memcmp(bytes, kLegacy, sizeof(kLegacy)) == 0), path,
               ": torch.save's legacy format (PyTorch before 1.6, or _use_new_zipfile_serialization=False); rewrite "
               "it once in Python: torch.save(torch.load(IN, weights_only=True), OUT)");
  const auto entries = read_stored_zip(bytes, size, path);
  std::string prefix;
  const ZipSpan* pickle = nullptr;
  for (const auto& [name, span] : entries) {
    const auto slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash + 1) == "data.pkl") {
      VISPEC_CHECK(!pickle, path, ": two data.pkl entries");
      prefix = name.substr(0, slash + 1);
      pickle = &span;
    }
  }
  VISPEC_CHECK(pickle, path, ": a zip file without <name>/data.pkl (not written by torch.save)");
  if (const auto order = entries.find(prefix + "byteorder"); order != entries.end())
    VISPEC_CHECK(std::string(reinterpret_cast<const char*>(order->second.data), order->second.size) == "little", path,
                 ": a big-endian checkpoint");
  check_zip_crc(*pickle, path, prefix + "data.pkl");
  const auto root = unpickle_checkpoint(pickle->data, pickle->size, path);
  const auto state = select_state_dict(root, state_dict_key, path);
  VISPEC_CHECK(state->kind == Kind::kDict, path, ": the state dict",
               state_dict_key.empty() ? "" : " at '" + state_dict_key + "'", " is not a dict");
  std::vector<TorchTensorRecord> out;
  std::set<std::string> checked;
  for (const auto& [key, value] : state->dict) {
    if (key->kind != Kind::kString || value->kind != Kind::kTensor) continue;
    const std::string where = path + ": tensor '" + key->text + "'";
    const auto& storage = *value->items.at(0);
    TorchTensorRecord t{key->text, storage.text, value->shape, value->stride, value->offset, {}};
    const auto entry = entries.find(prefix + "data/" + storage.storage_key);
    VISPEC_CHECK(entry != entries.end(), where, ": its storage data/", storage.storage_key, " is missing");
    t.storage = entry->second;
    if (check_data && checked.insert(entry->first).second) check_zip_crc(t.storage, path, entry->first);  // once each
    const uint64_t element = uint64_t(safetensors_element_size(storage.text));
    VISPEC_CHECK(uint64_t(storage.storage_numel) <= t.storage.size / element &&
                     t.storage.size == uint64_t(storage.storage_numel) * element,
                 where, ": storage data/", storage.storage_key, " holds ", t.storage.size, " bytes, not ",
                 storage.storage_numel, " elements of ", storage.text);
    const int64_t last = last_element(t, where);
    VISPEC_CHECK(last < storage.storage_numel, where, ": reaches element ", last, " of a storage of ",
                 storage.storage_numel);
    out.push_back(std::move(t));
  }
  VISPEC_CHECK(!out.empty(), path, ": holds no tensors",
               state_dict_key.empty() ? " at its top level or under model, module or state_dict" : "");
  return out;
}

}  // namespace vispec
