// Why a value the devices collector holds in read backoff (BackedOffRead, facts/rdma_device_facts.h)
// is unknown, in the words the checks that need it give: "counters/symbol_error: EIO on read,
// retried with backoff (1 min doubling to 1 h)". The file names are the port folder's (sysfs names,
// not contents) and are escaped by the verdict's printers.
#pragma once

#include <string>
#include <vector>

#include "facts/rdma_device_facts.h"

namespace rdmahd {

// The reads of `reads` that `needed(file)` selects, named with their errno: empty when none is.
// At most four are named, then "and N more".
template <class Needed>
std::string BackedOffReason(const std::vector<BackedOffRead>& reads, Needed&& needed) {
  std::string out;
  std::size_t named = 0, more = 0;
  for (const BackedOffRead& b : reads) {
    if (!needed(b.file)) continue;
    if (named == 4) {
      ++more;
      continue;
    }
    out += (named++ == 0 ? "" : ", ") + b.file + ": " + b.errno_name;
  }
  if (named == 0) return out;
  if (more != 0) out += " and " + std::to_string(more) + " more";
  out += " on read, retried with backoff (1 min doubling to 1 h; the kernel logs each failed read)";
  return out;
}

}  // namespace rdmahd
