// Folder listings shared between the devices that list the same names. A node of a thousand
// devices of one driver has the same counter names in every port's counters/ and hw_counters/,
// and the same DCQCN parameter names in every netdev's ECN folders; each layout keeps its listing
// for as long as it holds the folder's files, so one copy can serve them all.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace rdmahd {

using NameList = std::vector<std::string>;

// A list equal to `names` that some layout still holds, or else `names` itself, shared. Thread-safe.
// Remembers the last few distinct lists made (weakly: a list no layout holds any more is freed).
std::shared_ptr<const NameList> ShareNames(NameList names);

}  // namespace rdmahd
