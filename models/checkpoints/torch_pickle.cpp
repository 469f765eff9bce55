#include "models/checkpoints/torch_pickle.h"

#include <cstring>
#include <map>

#include "core/check.h"

namespace vispec {

PickleValue::~PickleValue() {
  std::vector<PickleRef> pending;
  const auto adopt = [&pending](PickleValue& v) {
    for (auto& i : v.items) pending.push_back(std::move(i));
    for (auto& [k, x] : v.dict) {
      pending.push_back(std::move(k));
      pending.push_back(std::move(x));
    }
    v.items.clear();
    v.dict.clear();
  };
  adopt(*this);
  while (!pending.empty()) {
    PickleRef v = std::move(pending.back());
    pending.pop_back();
    if (v && v.use_count() == 1) adopt(*v);  // freed at the end of this iteration, childless
  }
}

namespace {
using Kind = PickleValue::Kind;

PickleRef make(Kind kind) {
  auto v = std::make_shared<PickleValue>();
  v->kind = kind;
  return v;
}

// The storage classes torch.save names, by the dtype of their elements (safetensors' names).
const std::map<std::string, std::string>& storage_dtypes() {
  static const std::map<std::string, std::string> m = {
      {"torch FloatStorage", "F32"},  {"torch HalfStorage", "F16"}, {"torch BFloat16Storage", "BF16"},
      {"torch DoubleStorage", "F64"}, {"torch LongStorage", "I64"}, {"torch IntStorage", "I32"},
      {"torch ShortStorage", "I16"},  {"torch CharStorage", "I8"},  {"torch ByteStorage", "U8"},
      {"torch BoolStorage", "BOOL"}};
  return m;
}

// Every global a checkpoint may name. Anything else (os.system, builtins.eval, a model class...) is refused.
bool known_global(const std::string& name) {
  static const char* const kKnown[] = {
      "collections OrderedDict",
      "torch._utils _rebuild_tensor_v2",
      "torch._utils _rebuild_parameter",
      "torch._utils _rebuild_parameter_with_state",
      "argparse Namespace",
      "torch Size",
      "torch.jit._pickle restore_type_tag"};  // LibTorch's pickle_save: (value, "Dict[str, Tensor]") -> value
  for (const char* k : kKnown)
    if (name == k) return true;
  return storage_dtypes().count(name) != 0;
}

class Unpickler {
 public:
  Unpickler(const uint8_t* bytes, uint64_t size, const std::string& path)
      : p_(bytes), end_(bytes + size), path_(path) {}

  PickleRef run() {
    for (;;) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;                          // PROTO
        case 0x95: fixed(8); break;                        // FRAME (protocol 4+): a length hint
        case '.': return pop();                            // STOP
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case 'N': push(make(Kind::kNone)); break;
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          auto v = make(Kind::kBool);
          v->boolean = op == 0x88;
          push(v);
          break;
        }
        case 'K': push_int(int64_t(fixed(1))); break;                     // BININT1
        case 'M': push_int(int64_t(fixed(2))); break;                     // BININT2
        case 'J': push_int(int64_t(int32_t(uint32_t(fixed(4))))); break;  // BININT
        case 0x8a: {                                                      // LONG1: little-endian two's complement
          const uint64_t n = fixed(1);
          fail_if(n > 8, "an integer wider than 64 bits");
          const uint64_t raw = fixed(int(n));
          int64_t v = int64_t(raw);
          if (n > 0 && n < 8 && (raw >> (8 * n - 1)) & 1) v = int64_t(raw | (~uint64_t(0) << (8 * n)));
          push_int(v);
          break;
        }
        case 'G': {  // BINFLOAT: big-endian double
          uint64_t raw = 0;
          for (int i = 0; i < 8; ++i) raw = raw << 8 | byte();
          auto v = make(Kind::kFloat);
          std::memcpy(&v->number, &raw, 8);
          push(v);
          break;
        }
        case 0x8c: push_string(fixed(1)); break;  // SHORT_BINUNICODE
        case 'X': push_string(fixed(4)); break;   // BINUNICODE
        case 0x8d: push_string(fixed(8)); break;  // BINUNICODE8
        case 'U':
        case 'C': push_string(fixed(1)); break;  // SHORT_BINSTRING, SHORT_BINBYTES
        case 'T':
        case 'B': push_string(fixed(4)); break;     // BINSTRING, BINBYTES
        case ')': push(make(Kind::kTuple)); break;  // EMPTY_TUPLE
        case ']': push(make(Kind::kList)); break;   // EMPTY_LIST
        case '}': push(make(Kind::kDict)); break;   // EMPTY_DICT
        case 't':
        case 'l':
        case 'd': {  // TUPLE, LIST, DICT from the mark
          auto items = pop_mark();
          auto v = make(op == 't' ? Kind::kTuple : op == 'l' ? Kind::kList : Kind::kDict);
          if (op == 'd') set_items(v, items);
          else v->items = std::move(items);
          push(v);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          const size_t n = size_t(op - 0x84);
          fail_if(stack_.size() < n + base(), "a tuple of more items than the stack holds");
          auto v = make(Kind::kTuple);
          v->items.assign(stack_.end() - long(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(v);
          break;
        }
        case 'a': {  // APPEND
          auto item = pop();
          list_of(top())->items.push_back(item);
          break;
        }
        case 'e': {  // APPENDS
          auto items = pop_mark();
          auto& list = list_of(top())->items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case 's': {  // SETITEM
          auto value = pop();
          auto key = pop();
          set_items(dict_of(top()), {key, value});
          break;
        }
        case 'u': {  // SETITEMS
          auto items = pop_mark();
          set_items(dict_of(top()), items);
          break;
        }
        case 'q': memo_put(fixed(1)); break;       // BINPUT
        case 'r': memo_put(fixed(4)); break;       // LONG_BINPUT
        case 0x94: memo_put(memo_.size()); break;  // MEMOIZE
        case 'h': memo_get(fixed(1)); break;       // BINGET
        case 'j': memo_get(fixed(4)); break;       // LONG_BINGET
        case 'c': {                                // GLOBAL "module\nname\n"
          const auto module = line(), name = line();
          push_global(module + " " + name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          auto name = pop(), module = pop();
          fail_if(name->kind != Kind::kString || module->kind != Kind::kString, "STACK_GLOBAL of non-strings");
          push_global(module->text + " " + name->text);
          break;
        }
        case 'Q': push(persistent(pop())); break;  // BINPERSID
        case 'R': {                                // REDUCE
          auto args = pop(), callable = pop();
          push(call(callable, args));
          break;
        }
        case 0x81: {  // NEWOBJ cls args
          auto args = pop(), cls = pop();
          push(call(cls, args));
          break;
        }
        case 'b': {  // BUILD: state for an object; ignored
          pop();
          fail_if(stack_.size() <= base(), "BUILD on an empty stack");
          break;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "0x%02x", unsigned(op));
          fail(std::string("pickle opcode ") + hex + " is not one a checkpoint uses");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    VISPEC_FAIL(path_, ": data.pkl byte ", consumed_, ": ", what);
  }
  void fail_if(bool bad, const std::string& what) const {
    if (bad) fail(what);
  }
  uint8_t byte() {
    fail_if(p_ >= end_, "ends before STOP");
    ++consumed_;
    return *p_++;
  }
  uint64_t fixed(int n) {  // little-endian unsigned
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(byte()) << (8 * i);
    return v;
  }
  std::string take(uint64_t n) {
    fail_if(n > uint64_t(end_ - p_), "a string runs past the end");
    std::string s(reinterpret_cast<const char*>(p_), size_t(n));
    p_ += n;
    consumed_ += n;
    return s;
  }
  std::string line() {
    std::string s;
    for (uint8_t c; (c = byte()) != '\n';) {
      s += char(c);
      fail_if(s.size() > 256, "a global name longer than 256 bytes");
    }
    return s;
  }
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(PickleRef v) {
    fail_if(stack_.size() >= (1u << 24), "a stack deeper than 16 M");
    stack_.push_back(std::move(v));
  }
  PickleRef pop() {
    fail_if(stack_.size() <= base(), "pops below its mark");
    auto v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PickleRef& top() {
    fail_if(stack_.size() <= base(), "an empty stack");
    return stack_.back();
  }
  std::vector<PickleRef> pop_mark() {
    fail_if(marks_.empty(), "no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PickleRef> items(stack_.begin() + long(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void push_int(int64_t i) {
    auto v = make(Kind::kInt);
    v->integer = i;
    push(v);
  }
  void push_string(uint64_t n) {
    auto v = make(Kind::kString);
    v->text = take(n);
    push(v);
  }
  void push_global(const std::string& name) {
    fail_if(!known_global(name), "global '" + name +
                                     "' refused: a checkpoint holds tensors and plain data, and "
                                     "vispec runs nothing a file names");
    auto v = make(Kind::kGlobal);
    v->text = name;
    push(v);
  }
  void memo_put(uint64_t index) {
    // Picklers number memo entries 0, 1, 2, ...: an index far beyond that is a file made to exhaust memory.
    fail_if(index > memo_.size() + uint64_t(end_ - p_), "a memo index far beyond the entries so far");
    if (memo_.size() <= index) memo_.resize(size_t(index) + 1);
    memo_[size_t(index)] = top();
  }
  void memo_get(uint64_t index) {
    fail_if(index >= memo_.size() || !memo_[size_t(index)], "reads a memo entry never written");
    push(memo_[size_t(index)]);
  }
  PickleRef list_of(const PickleRef& v) {
    fail_if(v->kind != Kind::kList, "appends to something that is not a list");
    return v;
  }
  PickleRef dict_of(const PickleRef& v) {
    fail_if(v->kind != Kind::kDict, "sets items of something that is not a dict");
    return v;
  }
  void set_items(const PickleRef& dict, const std::vector<PickleRef>& kv) {
    fail_if(kv.size() % 2 != 0, "an odd number of dict items");
    for (size_t i = 0; i < kv.size(); i += 2) {
      bool replaced = false;
      if (kv[i]->kind == Kind::kString)  // a key written twice keeps its first place, as in Python
        for (auto& [k, v] : dict->dict)
          if (k->kind == Kind::kString && k->text == kv[i]->text) {
            v = kv[i + 1];
            replaced = true;
          }
      if (!replaced) dict->dict.emplace_back(kv[i], kv[i + 1]);
    }
  }
  static std::vector<int64_t> ints(const PickleRef& tuple, bool& ok) {
    std::vector<int64_t> out;
    ok = tuple->kind == Kind::kTuple;
    if (ok)
      for (const auto& i : tuple->items) {
        ok = ok && i->kind == Kind::kInt;
        out.push_back(i->integer);
      }
    return out;
  }
  // ('storage', <storage class>, key, location, numel)
  PickleRef persistent(const PickleRef& id) {
    const auto& t = id->items;
    fail_if(id->kind != Kind::kTuple || t.size() != 5 || t[0]->kind != Kind::kString || t[0]->text != "storage" ||
                t[1]->kind != Kind::kGlobal || t[2]->kind != Kind::kString || t[4]->kind != Kind::kInt ||
                t[4]->integer < 0,
            "a persistent id that is not ('storage', class, key, location, numel)");
    const auto dtype = storage_dtypes().find(t[1]->text);
    fail_if(dtype == storage_dtypes().end(), "'" + t[1]->text + "' is not a storage class");
    auto v = make(Kind::kStorage);
    v->text = dtype->second;
    v->storage_key = t[2]->text;
    v->storage_numel = t[4]->integer;
    return v;
  }
  PickleRef call(const PickleRef& callable, const PickleRef& args) {
    fail_if(callable->kind != Kind::kGlobal, "calls something that is not a known global");
    fail_if(args->kind != Kind::kTuple, "calls " + callable->text + " without an argument tuple");
    const auto& name = callable->text;
    const auto& a = args->items;
    if (name == "collections OrderedDict") {
      auto d = make(Kind::kDict);
      fail_if(!a.empty(), "OrderedDict with arguments");
      return d;
    }
    if (name == "torch._utils _rebuild_tensor_v2") {  // (storage, offset, size, stride, requires_grad, hooks[, meta])
      bool shape_ok = false, stride_ok = false;
      fail_if(a.size() < 4 || a[0]->kind != Kind::kStorage || a[1]->kind != Kind::kInt, "a bad _rebuild_tensor_v2");
      auto t = make(Kind::kTensor);
      t->items = {a[0]};
      t->offset = a[1]->integer;
      t->shape = ints(a[2], shape_ok);
      t->stride = ints(a[3], stride_ok);
      fail_if(!shape_ok || !stride_ok || t->shape.size() != t->stride.size(), "a tensor with a bad shape or stride");
      return t;
    }
    if (name == "torch._utils _rebuild_parameter" || name == "torch._utils _rebuild_parameter_with_state") {
      fail_if(a.empty() || a[0]->kind != Kind::kTensor, "a parameter without a tensor");
      return a[0];
    }
    if (name == "torch.jit._pickle restore_type_tag") {
      fail_if(a.size() != 2, "a bad restore_type_tag");
      return a[0];
    }
    if (name == "torch Size") {
      fail_if(a.size() != 1 || a[0]->kind != Kind::kTuple, "a bad torch.Size");
      return a[0];
    }
    return make(Kind::kObject);  // argparse.Namespace: kept as an inert placeholder, its state ignored
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const std::string& path_;
  uint64_t consumed_ = 0;
  std::vector<PickleRef> stack_;
  std::vector<size_t> marks_;
  std::vector<PickleRef> memo_;
};
}  // namespace

PickleRef unpickle_checkpoint(const uint8_t* bytes, uint64_t size, const std::string& path) {
  return Unpickler(bytes, size, path).run();
}

}  // namespace vispec
