// Heap in use as glibc's malloc reports it (mallinfo2): its arena's blocks and the large blocks it
// maps apart (M_MMAP_THRESHOLD and up), for tests that measure what a structure holds.
#pragma once

#include <malloc.h>

#include <cstddef>

namespace rdmahd::testing {

inline std::size_t HeapInUse() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

}  // namespace rdmahd::testing
