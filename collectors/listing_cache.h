// ListingCache: directory listings kept from one collection to the next (a LayoutCache whose
// layouts are listings), for host folders whose entries change only with boot parameters or
// hotplug (hugepage pool sizes, NUMA nodes). A folder is listed again once its listing is older
// than kNetdevRelistInterval (sysfs has no inotify: the interval bounds how late a new entry is
// seen, as for the netdev layouts), or after Forget() (a read below it said its object is gone:
// ListedEntryGone). A failed listing is kept as well: a
// capture without the folder is not listed again on every scrape.
#pragma once

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "collectors/device_reader.h"
#include "collectors/rdma_netdevs.h"
#include "common/layout_cache.h"
#include "common/node_fs.h"
#include "common/result.h"

namespace rdmahd {

// A failed read of `path` says that the folder holding it went away: its kernel object is gone
// under a held descriptor (ENODEV, ENXIO), or the file and its folder are both missing. A file
// that is merely absent from a folder that stands does not count (it would re-list every scrape).
inline bool ListedEntryGone(const NodeFs& fs, const std::string& path, const Error& e) {
  if (!IsGoneErrno(e.errno_value)) return false;
  if (e.errno_value != ENOENT) return true;
  const std::size_t slash = path.rfind('/');
  return slash != std::string::npos && !fs.Exists(path.substr(0, slash));
}

class ListingCache {
 public:
  explicit ListingCache(SteadyNow now = std::chrono::steady_clock::now)
      : now_(std::move(now)), listings_(kNetdevRelistInterval) {}

  // The entries of `dir`, listed now or at most kNetdevRelistInterval ago. Valid until the next
  // call on this object.
  const Result<std::vector<std::string>>& List(const NodeFs& fs, const std::string& dir) {
    auto list = [&]() -> Result<Listing> { return Listing{fs.ListDir(dir)}; };  // a failure is kept too
    auto fits = [](const Listing&) { return true; };
    auto read = [](Listing&) -> std::optional<std::string> { return std::nullopt; };
    return listings_.Read(dir, now_(), list, fits, read).layout->names;
  }
  void Forget() { listings_.Clear(); }

 private:
  struct Listing {
    Result<std::vector<std::string>> names;
  };
  SteadyNow now_;
  LayoutCache<Listing> listings_;  // by folder
};

}  // namespace rdmahd
