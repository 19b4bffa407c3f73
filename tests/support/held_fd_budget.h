// Tests that count held descriptors set the process-wide HeldFdBudget (common/held_files.h) for their
// duration, so they do not depend on the RLIMIT_NOFILE of whoever runs them.
#pragma once

#include <cstddef>

#include "common/held_files.h"

namespace rdmahd::testing {

class ScopedHeldFdBudget {
 public:
  explicit ScopedHeldFdBudget(std::size_t limit) { HeldFdBudget::Process().SetLimit(limit); }
  ~ScopedHeldFdBudget() { HeldFdBudget::Process().ResetForTest(); }
  ScopedHeldFdBudget(const ScopedHeldFdBudget&) = delete;
  ScopedHeldFdBudget& operator=(const ScopedHeldFdBudget&) = delete;
};

}  // namespace rdmahd::testing
