#include "probes/peer_targets.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <set>

#include "common/net_address.h"
#include "common/node_fs.h"

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
      return At(source, key.Mark(), "label \"" + key.Scalar() + "\" is reserved (the probe's own series use it)");
    }
    if (!value.IsScalar()) return At(source, value.Mark(), "the value of label \"" + key.Scalar() + "\" must be a string");
    if (!sorted.emplace(key.Scalar(), value.Scalar()).second) {
      return At(source, key.Mark(), "label \"" + key.Scalar() + "\" is given twice");
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
        return At(source, key.Mark(), "unknown key \"" + name + "\" in a group (expected targets, labels)");
      }
    }
    if (!targets.IsDefined() || !targets.IsSequence()) {
      return At(source, group.Mark(), "a group needs targets: a list of IP addresses or host names");
    }
    Result<PeerLabels> parsed_labels = ParseLabels(labels.IsDefined() ? labels : YAML::Node(), source);
    if (!parsed_labels.ok()) return parsed_labels.error();
    for (const YAML::Node& t : targets) {
      if (!t.IsScalar()) return At(source, t.Mark(), "a target must be an IP address or host name");
      if (auto why = CheckPeerTarget(t.Scalar())) return At(source, t.Mark(), "\"" + t.Scalar() + "\" is " + *why);
      auto [it, inserted] = seen.emplace(t.Scalar(), t.Mark());
      if (!inserted) {
        return At(source, t.Mark(), "\"" + t.Scalar() + "\" is listed twice (first at line " +
                                        std::to_string(it->second.line + 1) + ")");
      }
      out.push_back({t.Scalar(), *parsed_labels});
    }
  }
  return out;
}

}  // namespace

Result<std::vector<PeerTarget>> ParseTargetsFile(const std::string& text, const std::string& source) {
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (docs.size() > 1) return Error{source + ": holds more than one YAML document"};
    return ParseGroups(docs.empty() ? YAML::Node() : docs.front(), source);
  } catch (const YAML::Exception& e) {
    return At(source, e.mark, e.msg);
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
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
  Result<std::vector<PeerTarget>> parsed =
      text.ok() ? ParseTargetsFile(*text, path) : Result<std::vector<PeerTarget>>(text.error());
  if (!parsed.ok()) {
    error_ = parsed.error().message + " (keeping the last good list of " + std::to_string(targets_.size()) + " peers)";
    return false;
  }
  error_.clear();
  if (*parsed == targets_) return false;
  targets_ = std::move(*parsed);
  return true;
}

namespace {

// One getaddrinfo_a request; its memory must live until glibc is done with it.
struct Lookup {
  std::string name;
  addrinfo hints{};
  gaicb cb{};
  ~Lookup() {
    if (cb.ar_result != nullptr) freeaddrinfo(cb.ar_result);
  }
};

class SystemResolver : public AddressResolver {
 public:
  ~SystemResolver() override {
    // Lookups glibc still runs own their memory until they end: leave them to it (bounded by
    // kMaxAbandonedLookups; this happens only at exit or when the probe is torn down).
    for (auto& l : abandoned_) {
      if (gai_error(&l->cb) == EAI_INPROGRESS) static_cast<void>(l.release());
    }
  }

  Result<std::string> Resolve(const std::string& target, std::chrono::milliseconds timeout) override {
    if (IsIpLiteral(target)) return target;
    Reap();
    if (abandoned_.size() >= kMaxAbandonedLookups) {
      return Error{target + ": " + std::to_string(abandoned_.size()) +
                   " earlier lookups are still running past their timeout (is the DNS server answering?)"};
    }
    auto lookup = std::make_unique<Lookup>();
    lookup->name = target;
    lookup->hints.ai_family = AF_UNSPEC;
    lookup->hints.ai_socktype = SOCK_STREAM;
    lookup->cb.ar_name = lookup->name.c_str();
    lookup->cb.ar_request = &lookup->hints;
    gaicb* list[1] = {&lookup->cb};
    if (int rc = getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr); rc != 0) {
      return Error{target + ": getaddrinfo_a: " + gai_strerror(rc)};
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (gai_error(&lookup->cb) == EAI_INPROGRESS) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) break;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
      gai_suspend(list, 1, &ts);  // returns on completion, timeout or a signal; the loop re-checks
    }
    int err = gai_error(&lookup->cb);
    if (err == EAI_INPROGRESS) {
      const int cancelled = gai_cancel(&lookup->cb);
      if (cancelled == EAI_NOTCANCELED) abandoned_.push_back(std::move(lookup));
      if (cancelled != EAI_ALLDONE) {
        return Error{target + ": no answer within " + std::to_string(timeout.count()) + "ms"};
      }
      err = gai_error(&lookup->cb);
    }
    if (err != 0) return Error{target + ": " + gai_strerror(err)};
    for (const addrinfo* ai = lookup->cb.ar_result; ai != nullptr; ai = ai->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* addr = nullptr;
      if (ai->ai_family == AF_INET) {
        addr = &reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr;
      } else if (ai->ai_family == AF_INET6) {
        addr = &reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr;
      }
      if (addr != nullptr && inet_ntop(ai->ai_family, addr, text, sizeof text) != nullptr) return std::string(text);
    }
    return Error{target + ": no IPv4 or IPv6 address"};
  }

 private:
  void Reap() {
    std::erase_if(abandoned_, [](const std::unique_ptr<Lookup>& l) { return gai_error(&l->cb) != EAI_INPROGRESS; });
  }
  std::vector<std::unique_ptr<Lookup>> abandoned_;
};

}  // namespace

std::unique_ptr<AddressResolver> MakeSystemResolver() { return std::make_unique<SystemResolver>(); }

}  // namespace rdmahd
