// Which peers to probe: the static peers.targets list plus a targets file re-read on change (in
// the spirit of Prometheus' file_sd), and resolving a target to the IP address to probe.
//
// The targets file is YAML or JSON (JSON is YAML), a list of groups:
//   - targets: [10.0.0.2, node-b.example]
//     labels: {rack: r12}
// Labels are attached to every series of the group's peers. A file that cannot be read or parsed
// keeps the last good list, and the error says why (file:line:col).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace rdmahd {

using PeerLabels = std::vector<std::pair<std::string, std::string>>;  // sorted by name

struct PeerTarget {
  std::string name;  // IP literal or DNS name: the `peer` label
  PeerLabels labels;
  bool operator==(const PeerTarget&) const = default;
};

// A targets file holds a few thousand peers at most; the cap keeps a wrong path from being read whole.
inline constexpr std::size_t kMaxTargetsFileBytes = std::size_t{4} << 20;

// Parses a targets file's text. `source` names it in errors ("FILE:LINE:COL: ...").
Result<std::vector<PeerTarget>> ParseTargetsFile(const std::string& text, const std::string& source);

// The static list and the file's, one entry per name, sorted by name. A name in both takes the
// file's labels.
std::vector<PeerTarget> MergeTargets(const std::vector<std::string>& static_targets,
                                     const std::vector<PeerTarget>& file_targets);

// Re-reads a targets file when its identity (device, inode, size, mtime) changes, and parses it
// only when its bytes changed too (an orchestrator rewriting the same list costs a read, not a
// parse). Not thread-safe: the probe thread owns it. How often to call Refresh is the caller's
// policy (PeerProbe spaces the calls by their cost).
class TargetsFile {
 public:
  // Stats `path` (a new path is always read) and re-reads it when it changed. True when the list
  // changed. An unreadable or invalid file keeps the last good list and sets error().
  bool Refresh(const std::string& path);
  const std::vector<PeerTarget>& targets() const { return targets_; }
  const std::string& error() const { return error_; }
  // Times the file's text was parsed.
  std::size_t reads() const { return reads_; }

 private:
  struct Identity {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    std::int64_t mtime_ns = -1;
    bool operator==(const Identity&) const = default;
  };
  std::string path_;
  Identity seen_;
  bool read_once_ = false;
  std::vector<PeerTarget> targets_;
  std::string error_;
  std::size_t reads_ = 0;
  // The last parsed text, by hash and size, and the error() its parse left (empty: it parsed).
  std::size_t parsed_hash_ = 0;
  std::size_t parsed_size_ = 0;
  bool parsed_once_ = false;
  std::string parsed_error_;
};

// Turns a target into the IP address to probe. Implementations bound every lookup by `timeout`.
class AddressResolver {
 public:
  virtual ~AddressResolver() = default;
  // An IP literal is returned as is; a name is looked up (the first address getaddrinfo gives).
  // Errors name the target and say why ("node-b.example: Name or service not known").
  virtual Result<std::string> Resolve(const std::string& target, std::chrono::milliseconds timeout) = 0;
};

// The system resolver: getaddrinfo (so /etc/hosts and nsswitch apply), each lookup on a short-lived
// thread of its own that the caller waits for at most `timeout`, so that a stuck DNS server costs
// `timeout`, never the probe thread. Lookups that outlive their wait finish on their own; while
// kMaxAbandonedLookups of them still run, new lookups fail at once instead of piling up threads.
inline constexpr std::size_t kMaxAbandonedLookups = 8;
// `lookup` replaces getaddrinfo (tests: a lookup that hangs).
using HostLookup = std::function<Result<std::string>(const std::string& name)>;
std::unique_ptr<AddressResolver> MakeSystemResolver(HostLookup lookup = nullptr);

}  // namespace rdmahd
