// See script_storages.h. LibTorch 1.13's loader (PyTorchStreamReader::getRecord) reads a tensor
// record into a block from the CPU allocator of the record's size, then builds the storage over
// it with the byte size the pickle declares, unchecked; views of it (offset, sizes, strides)
// are checked against that declared size only.
#include "export/script_storages.h"

#include <c10/util/safe_numerics.h>

#include <unordered_set>

#include "tonnx/export.h"

namespace tonnx {
namespace {

class StorageChecker {
 public:
  StorageChecker(const detail::AllocationLog& log, const std::string& path)
      : log_(log), path_(path) {}

  void value(const c10::IValue& v, const std::string& name, int depth = 0) {
    if (depth > 64) return;  // (what the unpickler built; cycles through objects are cut below)
    if (v.isTensor()) {
      tensor(v.toTensor(), name);
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      for (size_t i = 0; i < list.size(); ++i)
        tensor(list.get(i), name + "[" + std::to_string(i) + "]");
    } else if (v.isList()) {
      auto list = v.toList();
      for (size_t i = 0; i < list.size(); ++i)
        value(list.get(i), name + "[" + std::to_string(i) + "]", depth + 1);
    } else if (v.isTuple()) {
      const auto& items = v.toTupleRef().elements();
      for (size_t i = 0; i < items.size(); ++i)
        value(items[i], name + "[" + std::to_string(i) + "]", depth + 1);
    } else if (v.isGenericDict()) {
      for (const auto& kv : v.toGenericDict()) {
        value(kv.key(), name + "{key}", depth + 1);
        value(kv.value(), name + "{" + (kv.key().isString() ? kv.key().toStringRef() : "?") + "}",
              depth + 1);
      }
    } else if (v.isObject()) {
      auto obj = v.toObject();
      if (!objects_.insert(obj.get()).second) return;
      const size_t slots = obj->slots().size();
      auto type = obj->type();
      for (size_t i = 0; i < slots; ++i)
        value(obj->getSlot(i),
              name + "." +
                  (i < type->numAttributes() ? type->getAttributeName(i) : std::to_string(i)),
              depth + 1);
    }
  }

  void graph(const torch::jit::Block* b, const std::string& where) {
    for (const torch::jit::Node* n : b->nodes()) {
      if (n->kind() == c10::prim::Constant && n->hasAttribute(c10::attr::value)) {
        auto kind = n->kindOf(c10::attr::value);
        if (kind == torch::jit::AttributeKind::t)
          tensor(n->t(c10::attr::value), "a constant of " + where);
        else if (kind == torch::jit::AttributeKind::ival)
          value(n->ival(c10::attr::value), "a constant of " + where);
      }
      for (const torch::jit::Block* sub : n->blocks()) graph(sub, where);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& name, const std::string& why) const {
    throw ExportError("cannot load TorchScript file '" + path_ + "': tensor '" + name + "' " + why +
                      "; the archive is damaged or was made to read memory outside it");
  }

  void tensor(const at::Tensor& t, const std::string& name) {
    if (!t.defined() || !t.has_storage() || t.is_sparse()) return;
    const c10::Storage& st = t.storage();
    const size_t declared = st.nbytes();
    if (st.data() && declared > 0 && storages_.insert(st.unsafeGetStorageImpl()).second) {
      auto real = log_.size_of(st.data());
      if (!real)
        fail(name, "has a storage of " + std::to_string(declared) +
                       " bytes that was not read from the archive, so it cannot be checked");
      if (declared > *real)
        fail(name, "declares a storage of " + std::to_string(declared) +
                       " bytes, but its record in the archive holds " + std::to_string(*real));
    }
    if (t.numel() == 0) return;
    // The last element's byte, with every product and sum checked for overflow.
    uint64_t last = static_cast<uint64_t>(t.storage_offset()), term = 0;
    bool overflow = t.storage_offset() < 0;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.stride(d) < 0) overflow = true;
      overflow |= c10::mul_overflows(static_cast<uint64_t>(t.size(d) - 1),
                                     static_cast<uint64_t>(t.stride(d)), &term);
      overflow |= c10::add_overflows(last, term, &last);
    }
    uint64_t end = 0;
    overflow |= c10::add_overflows(last, uint64_t{1}, &end);
    overflow |= c10::mul_overflows(end, static_cast<uint64_t>(t.element_size()), &end);
    if (overflow || end > declared)
      fail(name, "reaches past its storage of " + std::to_string(declared) + " bytes (offset " +
                     std::to_string(t.storage_offset()) + ", sizes " + c10::str(t.sizes()) +
                     ", strides " + c10::str(t.strides()) + ")");
  }

  const detail::AllocationLog& log_;
  const std::string& path_;
  std::unordered_set<const void*> objects_, storages_;
};

}  // namespace

void check_loaded_storages(const torch::jit::Module& m, const detail::AllocationLog& log,
                           const std::string& path) {
  StorageChecker c(log, path);
  c.value(m._ivalue(), "self");
  for (const auto& sub : m.modules())
    for (const auto& method : sub.get_methods())
      c.graph(method.graph()->block(), "method '" + method.name() + "'");
}

}  // namespace tonnx
