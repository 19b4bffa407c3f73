// ListingCache: directory listings kept from one collection to the next, for host folders whose
// entries change only with boot parameters or hotplug (hugepage pool sizes, NUMA nodes). A folder
// is listed again once its listing is older than kNetdevRelistInterval (sysfs has no inotify: the
// interval bounds how late a new entry is seen, as for the netdev layouts), or after Forget() (a
// read below it said its object is gone: ListedEntryGone). A failed listing is kept as well: a
// capture without the folder is not listed again on every scrape.
#pragma once

#include <cerrno>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "collectors/device_reader.h"
#include "collectors/rdma_netdevs.h"
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
  explicit ListingCache(SteadyNow now = std::chrono::steady_clock::now) : now_(std::move(now)) {}

  // The entries of `dir`, listed now or at most kNetdevRelistInterval ago. Valid until the next
  // call on this object.
  const Result<std::vector<std::string>>& List(const NodeFs& fs, const std::string& dir) {
    const auto now = now_();
    auto it = listings_.find(dir);
    if (it == listings_.end() || now - it->second.at >= kNetdevRelistInterval) {
      it = listings_.insert_or_assign(dir, Listing{fs.ListDir(dir), now}).first;
    }
    return it->second.names;
  }
  void Forget() { listings_.clear(); }

 private:
  struct Listing {
    Result<std::vector<std::string>> names;
    std::chrono::steady_clock::time_point at;
  };
  SteadyNow now_;
  std::map<std::string, Listing> listings_;
};

}  // namespace rdmahd
