// RunValue, the run-time value of the backend's plan (tonnx/backend.h): a tensor, a string
// tensor, a sequence, an optional.
#include <string>

#include "tonnx/backend.h"

namespace tonnx::backend {

namespace {
const char* kind_name(RunValue::Kind k) {
  switch (k) {
    case RunValue::Kind::None:
      return "none (an empty optional)";
    case RunValue::Kind::Tensor:
      return "a tensor";
    case RunValue::Kind::Strings:
      return "a string tensor";
    case RunValue::Kind::Sequence:
      return "a sequence";
  }
  return "?";
}
[[noreturn]] void kind_fail(RunValue::Kind want, const RunValue& got) {
  throw std::runtime_error(std::string("expected ") + kind_name(want) + " but got " +
                           got.describe());
}
}  // namespace

const at::Tensor& RunValue::tensor() const {
  if (!is_tensor()) kind_fail(Kind::Tensor, *this);
  return std::get<at::Tensor>(v_);
}
const StringTensor& RunValue::strings() const {
  if (!is_strings()) kind_fail(Kind::Strings, *this);
  return *std::get<std::shared_ptr<const StringTensor>>(v_);
}
const Sequence& RunValue::sequence() const {
  if (!is_sequence()) kind_fail(Kind::Sequence, *this);
  return *std::get<std::shared_ptr<const Sequence>>(v_);
}
std::string RunValue::describe() const {
  switch (kind()) {
    case Kind::None:
      return "none (an empty optional)";
    case Kind::Tensor: {
      const at::Tensor& t = std::get<at::Tensor>(v_);
      if (!t.defined()) return "an omitted (undefined) tensor";
      return std::string("a tensor ") + ir::TensorType::from_tensor(t).str();
    }
    case Kind::Strings:
      return "a string tensor of shape " + c10::str(at::IntArrayRef(strings().shape));
    case Kind::Sequence:
      return "a sequence of " + std::to_string(sequence().items.size()) + " value(s)";
  }
  return "?";
}

}  // namespace tonnx::backend
