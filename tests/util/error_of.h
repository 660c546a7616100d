// The message an export or backend call fails with, for tests of error messages.
#pragma once

#include <string>

#include "tonnx/backend.h"
#include "tonnx/export.h"

namespace tonnx::test {

// The message of the ExportError or BackendError `f` throws, or "no error".
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ExportError& e) {
    return e.what();
  } catch (const backend::BackendError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace tonnx::test
