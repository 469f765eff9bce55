// A restricted unpickler for what torch.save puts in data.pkl: it understands the opcodes of pickle protocols
// 2-5 that state dicts and training checkpoints use, builds plain values (None, bools, ints, floats, strings,
// tuples, lists, dicts in insertion order) and tensors as references to storages, and knows a short list of
// globals by name. It never imports or calls anything named in the file: an unknown global is refused in one
// line naming it, and the known ones are interpreted here (OrderedDict is a dict, _rebuild_tensor_v2 a tensor
// reference, argparse.Namespace an inert object). No LibTorch here, so fuzz/fuzz_torch_checkpoint.cpp covers
// it whole.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vispec {

struct PickleValue;
using PickleRef = std::shared_ptr<PickleValue>;

struct PickleValue {
  PickleValue() = default;
  PickleValue(const PickleValue&) = delete;
  PickleValue& operator=(const PickleValue&) = delete;
  // Iterative: a file of nested lists a million deep must not overflow the stack when its tree is freed.
  ~PickleValue();

  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor, kObject };
  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;                                   // string; global "module name"; storage dtype ("F32", ...)
  std::vector<PickleRef> items;                       // tuple, list; tensor: {storage}
  std::vector<std::pair<PickleRef, PickleRef>> dict;  // dict (insertion order)
  std::string storage_key;                            // storage: the "data/<key>" entry
  int64_t storage_numel = 0;
  int64_t offset = 0;                  // tensor: in elements of its storage
  std::vector<int64_t> shape, stride;  // tensor
};

// Parses data.pkl (bytes, size) of checkpoint `path`; throws one line naming the file.
PickleRef unpickle_checkpoint(const uint8_t* bytes, uint64_t size, const std::string& path);

}  // namespace vispec
