#include "probes/peer_targets.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>

#include "common/excerpt.h"
#include "common/mutex.h"
#include "common/net_address.h"
#include "common/node_fs.h"
#include "common/thread_name.h"
#include "config/yaml_document.h"

namespace rdmahd {
namespace {

std::string Position(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

Error At(const std::string& source, const YAML::Mark& mark, const std::string& message) {
  return Error{Position(source, mark) + ": " + message};
}

// Label names the probe's own series use; a file label may not shadow them.
bool IsReservedLabel(const std::string& name) {
  static const std::set<std::string> kReserved = {"peer", "kind", "result", "reason", "quantile", "le", "clock"};
  return kReserved.count(name) > 0 || name.starts_with("__");
}

bool IsLabelName(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

Result<PeerLabels> ParseLabels(const YAML::Node& node, const std::string& source) {
  PeerLabels labels;
  if (node.IsNull()) return labels;
  if (!node.IsMap()) return At(source, node.Mark(), "labels must be a map of label names to values");
  std::map<std::string, std::string> sorted;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar() || !IsLabelName(key.Scalar())) {
      return At(source, key.Mark(), "label names must match [a-zA-Z_][a-zA-Z0-9_]*");
    }
    if (IsReservedLabel(key.Scalar())) {
      return At(source, key.Mark(), "label " + QuoteExcerpt(key.Scalar()) + " is reserved (the probe's own series use it)");
    }
    if (!value.IsScalar()) return At(source, value.Mark(), "the value of label " + QuoteExcerpt(key.Scalar()) + " must be a string");
    if (!sorted.emplace(key.Scalar(), value.Scalar()).second) {
      return At(source, key.Mark(), "label " + QuoteExcerpt(key.Scalar()) + " is given twice");
    }
  }
  labels.assign(sorted.begin(), sorted.end());
  return labels;
}

Result<std::vector<PeerTarget>> ParseGroups(const YAML::Node& root, const std::string& source) {
  std::vector<PeerTarget> out;
  if (root.IsNull()) return out;  // an empty file: no peers
  if (!root.IsSequence()) {
    return At(source, root.Mark(), "must be a list of groups (- targets: [...], labels: {...})");
  }
  std::map<std::string, YAML::Mark> seen;
  for (const YAML::Node& group : root) {
    if (!group.IsMap()) return At(source, group.Mark(), "each group must be a map with targets and labels");
    YAML::Node targets;
    YAML::Node labels;
    for (auto it = group.begin(); it != group.end(); ++it) {
      const YAML::Node key = it->first;
      const std::string name = key.IsScalar() ? key.Scalar() : "";
      if (name == "targets") {
        targets = it->second;
      } else if (name == "labels") {
        labels = it->second;
      } else {
        return At(source, key.Mark(), "unknown key " + DescribeKey(name, 10) + " in a group (expected targets, labels)");
      }
    }
    if (!targets.IsDefined() || !targets.IsSequence()) {
      return At(source, group.Mark(), "a group needs targets: a list of IP addresses or host names");
    }
    Result<PeerLabels> parsed_labels = ParseLabels(labels.IsDefined() ? labels : YAML::Node(), source);
    if (!parsed_labels.ok()) return parsed_labels.error();
    for (const YAML::Node& t : targets) {
      if (!t.IsScalar()) return At(source, t.Mark(), "a target must be an IP address or host name");
      if (auto why = CheckPeerTarget(t.Scalar())) return At(source, t.Mark(), QuoteExcerpt(t.Scalar()) + " is " + *why);
      auto [it, inserted] = seen.emplace(t.Scalar(), t.Mark());
      if (!inserted) {
        return At(source, t.Mark(), QuoteExcerpt(t.Scalar()) + " is listed twice (first at line " +
                                        std::to_string(it->second.line + 1) + ")");
      }
      out.push_back({t.Scalar(), *parsed_labels});
    }
  }
  return out;
}

Result<std::vector<PeerTarget>> ParseTargetsFileUncapped(const std::string& text, const std::string& source) {
  if (text.size() > kMaxTargetsFileBytes) {
    return Error{source + ": " + std::to_string(text.size()) + " bytes, more than the " +
                 std::to_string(kMaxTargetsFileBytes >> 20) + " MiB a targets file may hold"};
  }
  // yaml-cpp alone loops forever on some malformed text (found by fuzz/targets_file_fuzz.cc):
  // the config loader's guarded reader refuses it.
  Result<YAML::Node> document = LoadSingleYamlDocument(text, source);
  if (!document.ok()) return document.error();
  try {
    return ParseGroups(document->IsDefined() ? *document : YAML::Node(), source);
  } catch (const YAML::Exception& e) {
    return At(source, e.mark, e.msg);
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
}

}  // namespace

// Messages quote no more of the file than short escaped excerpts, and are capped in length.
Result<std::vector<PeerTarget>> ParseTargetsFile(const std::string& text, const std::string& source) {
  Result<std::vector<PeerTarget>> parsed = ParseTargetsFileUncapped(text, source);
  if (!parsed.ok()) return Error{CapMessage(parsed.error().message), parsed.error().errno_value};
  return parsed;
}

std::vector<PeerTarget> MergeTargets(const std::vector<std::string>& static_targets,
                                     const std::vector<PeerTarget>& file_targets) {
  std::map<std::string, PeerLabels> merged;
  for (const auto& t : static_targets) merged.emplace(t, PeerLabels{});
  for (const auto& t : file_targets) merged[t.name] = t.labels;
  std::vector<PeerTarget> out;
  out.reserve(merged.size());
  for (auto& [name, labels] : merged) out.push_back({name, std::move(labels)});
  return out;
}

bool TargetsFile::Refresh(const std::string& path) {
  if (path != path_) {
    path_ = path;
    read_once_ = false;
    seen_ = {};
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    // Identity reset: the file reappearing with the same stat must be read again.
    seen_ = {};
    error_ = Error::FromErrno(path, err).message + " (keeping the last good list of " +
             std::to_string(targets_.size()) + " peers)";
    return false;
  }
  const Identity now{st.st_dev, st.st_ino, st.st_size,
                     static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  if (read_once_ && now == seen_) return false;
  seen_ = now;
  read_once_ = true;
  Result<std::string> text = ReadRegularFile(path, kMaxTargetsFileBytes);
  if (!text.ok()) {
    error_ = text.error().message + " (keeping the last good list of " + std::to_string(targets_.size()) + " peers)";
    return false;
  }
  // The same bytes as the last parse: the same outcome. (A 64-bit hash: two different versions
  // colliding would only delay the newer one to its next change.)
  const std::size_t hash = std::hash<std::string_view>{}(*text);
  if (parsed_once_ && hash == parsed_hash_ && text->size() == parsed_size_) {
    error_ = parsed_error_;
    return false;
  }
  ++reads_;
  Result<std::vector<PeerTarget>> parsed = ParseTargetsFile(*text, path);
  parsed_once_ = true;
  parsed_hash_ = hash;
  parsed_size_ = text->size();
  if (!parsed.ok()) {
    error_ = parsed.error().message + " (keeping the last good list of " + std::to_string(targets_.size()) + " peers)";
    parsed_error_ = error_;
    return false;
  }
  error_.clear();
  parsed_error_.clear();
  if (*parsed == targets_) return false;
  targets_ = std::move(*parsed);
  return true;
}

namespace {

// getaddrinfo's first IPv4 or IPv6 address of `name`, as text.
Result<std::string> LookUp(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (int rc = getaddrinfo(name.c_str(), nullptr, &hints, &result); rc != 0) {
    return Error{name + ": " + (rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : gai_strerror(rc))};
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(result, &freeaddrinfo);
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr = nullptr;
    if (ai->ai_family == AF_INET) {
      addr = &reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr;
    } else if (ai->ai_family == AF_INET6) {
      addr = &reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr;
    }
    if (addr != nullptr && inet_ntop(ai->ai_family, addr, text, sizeof text) != nullptr) return std::string(text);
  }
  return Error{name + ": no IPv4 or IPv6 address"};
}

// One lookup's outcome, shared by the waiting probe thread and the thread that looks up, so that
// either may be gone first.
struct Lookup {
  Mutex mu;
  std::condition_variable_any cv;
  std::optional<Result<std::string>> result GUARDED_BY(mu);
};

// getaddrinfo has no timeout (and NSS modules besides DNS have none either), so each lookup runs
// on a thread of its own and the probe thread waits for it at most `timeout`. A lookup that
// outlives its wait finishes on its own and frees what it used; while kMaxAbandonedLookups of
// them still run, new lookups fail at once, so a dead DNS server costs a bounded number of threads.
class SystemResolver : public AddressResolver {
 public:
  explicit SystemResolver(HostLookup lookup) : lookup_(lookup ? std::move(lookup) : HostLookup(LookUp)) {}

  Result<std::string> Resolve(const std::string& target, std::chrono::milliseconds timeout) override {
    if (IsIpLiteral(target)) return target;
    // Only abandoned lookups run now: the caller waits for each lookup it starts.
    if (const int stuck = running_->load(); stuck >= static_cast<int>(kMaxAbandonedLookups)) {
      return Error{target + ": " + std::to_string(stuck) +
                   " earlier lookups are still running past their timeout (is the DNS server answering?)"};
    }
    auto lookup = std::make_shared<Lookup>();
    running_->fetch_add(1);
    try {
      std::thread([lookup, running = running_, target, fn = lookup_] {
        NameThisThread("dns-lookup");
        Result<std::string> r = fn(target);
        {
          MutexLock lock(lookup->mu);
          lookup->result.emplace(std::move(r));
        }
        lookup->cv.notify_all();
        running->fetch_sub(1);
      }).detach();
    } catch (const std::system_error& e) {
      running_->fetch_sub(1);
      return Error{target + ": cannot start a lookup thread: " + e.what()};
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    MutexLock lock(lookup->mu);
    while (!lookup->result.has_value()) {
      if (lookup->cv.wait_until(lock, deadline) == std::cv_status::timeout && !lookup->result.has_value()) {
        return Error{target + ": no answer within " + std::to_string(timeout.count()) + "ms"};
      }
    }
    return std::move(*lookup->result);
  }

 private:
  HostLookup lookup_;
  // Lookup threads still running; shared with them (they may outlive the resolver).
  std::shared_ptr<std::atomic<int>> running_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace

std::unique_ptr<AddressResolver> MakeSystemResolver(HostLookup lookup) {
  return std::make_unique<SystemResolver>(std::move(lookup));
}

}  // namespace rdmahd
