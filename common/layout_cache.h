// LayoutCache: what a collector learnt by listing and probing one kernel object (an RDMA device, a
// netdev, a port's file, a verbs context), kept from one collection to the next by name, with its
// held descriptors (HeldFile, common/held_files.h). The one place that decides when such a layout is
// discovered again:
//  - when the name is new, or the tree the layouts were made for changed (SetRoot);
//  - when the collector says it no longer fits (`fits`: a device re-created under the same name, a
//    new topology generation, a layout that met errors while being discovered);
//  - when it is older than the relist interval (for what nothing signals; docs/performance.md), or
//    was marked for it (Expire);
//  - once, at once, when a read through it says the object behind it is gone: the gone-retry. The
//    layout is dropped (closing its descriptors), discovered again and read again in the same
//    collection, so a device or netdev re-created between two scrapes costs no values.
// Dropping a layout closes its descriptors; HeldDescriptors()/CloseDescriptors() ask every layout.
// Not thread-safe: one collector owns one cache, and collections are serialized by the engine.
#pragma once

#include <chrono>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/result.h"

namespace rdmahd {

// Whether a layout discovered in this very collection is tried again after it said "gone".
enum class GoneRetry {
  kAlways,      // sysfs: the object may have been re-created meanwhile; rediscover once more
  kCachedOnly,  // a fresh layout that is gone already is going away: stop (verbs contexts)
};

// What LayoutCache::Read did for one name.
template <class Layout>
struct LayoutUse {
  Layout* layout = nullptr;         // the layout read last; null when its discovery failed
  std::optional<std::string> gone;  // set when the last attempt failed: discovery's error, or the read's "gone"
};

template <class Layout>
class LayoutCache {
 public:
  using Clock = std::chrono::steady_clock;

  // `relist`: a layout this old is discovered again before its next read (max(): never for age).
  explicit LayoutCache(Clock::duration relist = Clock::duration::max()) : relist_(relist) {}

  // The tree the layouts are made for (sysfs root, capture folder): another one drops them all.
  void SetRoot(std::string_view root) {
    if (root == root_) return;
    entries_.clear();
    root_ = std::string(root);
  }

  // Reads `key` through its layout, discovering it when needed (see the header) and once more when
  // `read` says the object is gone.
  //   discover(): Result<Layout>; an error: the object is not there (nothing is cached).
  //   fits(const Layout&): bool; false: discover again before reading.
  //   read(Layout&): std::optional<std::string>; nullopt when read, else why the object is gone.
  // The layout of the last attempt stays cached, even when it said gone (Erase it to drop it).
  template <class Discover, class Fits, class ReadFn>
  LayoutUse<Layout> Read(const std::string& key, Clock::time_point now, Discover&& discover, Fits&& fits,
                         ReadFn&& read, GoneRetry retry = GoneRetry::kAlways) {
    LayoutUse<Layout> out;
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto it = entries_.find(key);
      if (it != entries_.end() && (attempt > 0 || Stale(it->second, now) || !fits(*it->second.layout))) {
        entries_.erase(it);  // closes its descriptors before the object is looked at again
        it = entries_.end();
      }
      const bool fresh = it == entries_.end();
      if (fresh) {
        Result<Layout> found = discover();
        if (!found.ok()) {
          out.layout = nullptr;
          out.gone = found.error().message;
          if (retry == GoneRetry::kCachedOnly) break;
          continue;
        }
        it = entries_.insert_or_assign(key, Entry{std::make_unique<Layout>(std::move(*found)), now, false}).first;
      }
      out.layout = it->second.layout.get();
      out.gone = read(*out.layout);
      if (!out.gone || (fresh && retry == GoneRetry::kCachedOnly)) break;
    }
    return out;
  }

  // The cached layout of `key`, or null.
  Layout* Find(const std::string& key) {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.layout.get();
  }
  // Discover `key` again before its next read (a file beside the held ones went away).
  void Expire(const std::string& key) {
    if (auto it = entries_.find(key); it != entries_.end()) it->second.expired = true;
  }
  void Erase(const std::string& key) { entries_.erase(key); }
  // Drops the layouts for which keep(name, layout) is false (objects that left the topology).
  template <class Keep>
  void Retain(Keep&& keep) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = keep(it->first, static_cast<const Layout&>(*it->second.layout)) ? std::next(it) : entries_.erase(it);
    }
  }
  void Clear() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }

  // Calls f(name, layout) for every cached layout.
  template <class F>
  void ForEach(F&& f) const {
    for (const auto& [name, e] : entries_) f(name, static_cast<const Layout&>(*e.layout));
  }

  // Descriptors held open by the layouts (Layout::HeldDescriptors()), and closing them all while
  // keeping the layouts (the next reads reopen by path, as after a failed read).
  std::size_t HeldDescriptors() const {
    std::size_t n = 0;
    for (const auto& [name, e] : entries_) n += e.layout->HeldDescriptors();
    return n;
  }
  void CloseDescriptors() {
    for (auto& [name, e] : entries_) e.layout->CloseDescriptors();
  }

 private:
  struct Entry {
    std::unique_ptr<Layout> layout;  // stable address while cached; Layout may be incomplete here
    Clock::time_point discovered_at;
    bool expired = false;
  };
  bool Stale(const Entry& e, Clock::time_point now) const {
    return e.expired || (relist_ != Clock::duration::max() && now - e.discovered_at >= relist_);
  }

  Clock::duration relist_;
  std::string root_;
  std::unordered_map<std::string, Entry> entries_;
};

// A HeldFile that may be absent: the count for Layout::HeldDescriptors(), and closing it.
// (Declared here so every layout counts its files the same way; HeldFile is in common/held_files.h.)
template <class File>
std::size_t CountOpen(const std::optional<File>& f) {
  return f && f->is_open() ? 1 : 0;
}
template <class File>
void CloseHeld(std::optional<File>& f) {
  if (f) f->Close();
}

}  // namespace rdmahd
