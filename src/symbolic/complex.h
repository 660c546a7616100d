// The complex rules of src/symbolic/complex.cpp, for the converter's complex path (internal).
#pragma once

#include <string>

#include "tonnx/symbolic.h"

namespace tonnx::sym {

// The rule that converts `qualname` when it takes or makes a complex tensor, or nullptr.
const SymbolicFn* complex_rule(const std::string& qualname);

}  // namespace tonnx::sym
