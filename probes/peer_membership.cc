#include "probes/peer_membership.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <system_error>
#include <thread>

#include "common/mutex.h"
#include "common/thread_name.h"
#include "probes/peer_measurement.h"
#include "probes/peer_selection.h"

namespace rdmahd {

// One pass of discovery lookups, shared by the probe thread and the thread that looks up, so that
// either may be gone first.
struct PeerMembership::DiscoveryPass {
  Mutex mu;
  bool done GUARDED_BY(mu) = false;
  std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers GUARDED_BY(mu);
};

PeerMembership::PeerMembership(Options options) : options_(std::move(options)) {}

PeerMembership::~PeerMembership() = default;

void PeerMembership::Update(const PeersPolicy& p, Clock::time_point now) {
  if (p.file != file_path_) {
    file_path_ = p.file;
    file_ = TargetsFile();
    file_checked_ = {};
    targets_changed_ = true;
    errors_changed_ = true;
  }
  // What a check of the file costs this thread, from the stat to the new peer set it may bring.
  file_cpu_start_.reset();
  if (!p.file.empty() && (file_checked_ == Clock::time_point{} || now >= file_next_check_)) {
    file_cpu_start_ = ThreadCpuTime();
    const std::string old_error = file_.error();
    if (file_.Refresh(p.file)) targets_changed_ = true;
    file_checked_ = now;
    if (file_.error() != old_error) errors_changed_ = true;
  }
  if (p.targets != static_targets_) {
    static_targets_ = p.targets;
    targets_changed_ = true;
  }

  Discover(p, now);
  // Selection: a new policy, or the next rotation epoch of this node's own picks.
  const auto rotation = std::max<std::int64_t>(1, p.selection.rotation.count());
  const std::int64_t epoch =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count() /
      rotation;
  if (epoch != selection_epoch_ || p.selection.max_peers != selection_.max_peers ||
      p.selection.same_tor_cap != selection_.same_tor_cap || p.selection.tor_label != selection_.tor_label ||
      p.selection.self != selection_.self) {
    selection_ = p.selection;
    selection_epoch_ = epoch;
    targets_changed_ = true;
  }
}

std::vector<PeerTarget> PeerMembership::Wanted(const PeersPolicy& p) {
  targets_changed_ = false;
  std::vector<PeerTarget> listed = p.file.empty() ? std::vector<PeerTarget>{} : file_.targets();
  for (const auto& [name, addresses] : discovered_) {
    for (const std::string& a : addresses) listed.push_back({a, {{"service", name}}});
  }
  // peers.targets are probed as listed; selection picks from the file's and discovery's targets.
  std::erase_if(listed, [&](const PeerTarget& t) {
    return std::find(static_targets_.begin(), static_targets_.end(), t.name) != static_targets_.end();
  });
  return MergeTargets(static_targets_, Select(std::move(listed), p.selection));
}

void PeerMembership::EndFileCheck() {
  if (!file_cpu_start_) return;
  // Changes while the file waits are coalesced into the next read, of the latest version.
  const auto cost = std::chrono::duration_cast<Clock::duration>(ThreadCpuTime() - *file_cpu_start_);
  file_next_check_ = file_checked_ + std::max<Clock::duration>(kFileCheckPeriod, cost * kFileCostSpacing);
  file_cpu_start_.reset();
}

std::chrono::nanoseconds PeerMembership::ThreadCpuTime() const {
  if (options_.thread_cpu_time) return options_.thread_cpu_time();
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

void PeerMembership::Discover(const PeersPolicy& p, Clock::time_point now) {
  if (p.discovery.dns != dns_names_ || p.discovery.dns_server != dns_server_) {
    dns_names_ = p.discovery.dns;
    dns_server_ = p.discovery.dns_server;
    std::erase_if(discovered_, [&](const auto& kv) {
      return std::find(dns_names_.begin(), dns_names_.end(), kv.first) == dns_names_.end();
    });
    dns_at_ = {};
    targets_changed_ = true;
    if (pass_) pass_stale_ = true;
    if (!discovery_error_.empty()) {  // said of the old names or server; the next pass says anew
      discovery_error_.clear();
      errors_changed_ = true;
    }
  }
  if (pass_) {
    std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers;
    {
      MutexLock lock(pass_->mu);
      if (!pass_->done) return;  // still looking up: probes go on with the last answers
      answers = std::move(pass_->answers);
    }
    pass_.reset();
    if (!pass_stale_) TakeDiscovery(std::move(answers));
    pass_stale_ = false;
  }
  if (dns_names_.empty() || (dns_at_ != Clock::time_point{} && now - dns_at_ < p.discovery.dns_interval)) return;
  dns_at_ = now;
  DnsOptions options;
  options.server = dns_server_;
  options.timeout = std::chrono::seconds(1);
  options.attempts = 2;
  DnsDiscoverer discover = options_.discover;
  if (!discover) {
    discover = [](const std::string& name, const DnsOptions& o) { return ResolveAddresses(name, o); };
  }
  auto pass = std::make_shared<DiscoveryPass>();
  try {
    std::thread([pass, names = dns_names_, options, discover = std::move(discover)] {
      NameThisThread("dns-discovery");
      std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers;
      for (const std::string& name : names) answers.emplace_back(name, discover(name, options));
      MutexLock lock(pass->mu);
      pass->answers = std::move(answers);
      pass->done = true;
    }).detach();
  } catch (const std::system_error& e) {
    const std::string error = std::string("dns: cannot start a discovery thread: ") + e.what();
    if (error != discovery_error_) {
      discovery_error_ = error;
      errors_changed_ = true;
    }
    return;
  }
  pass_ = std::move(pass);
}

void PeerMembership::TakeDiscovery(std::vector<std::pair<std::string, Result<std::vector<std::string>>>> answers) {
  std::string errors;
  for (auto& [name, found] : answers) {
    if (!found.ok()) {
      errors += (errors.empty() ? "" : "; ") + found.error().message;  // keeps the last good answer
      continue;
    }
    if (discovered_[name] != *found) {
      discovered_[name] = std::move(*found);
      targets_changed_ = true;
    }
  }
  if (errors != discovery_error_) {
    discovery_error_ = errors;
    errors_changed_ = true;
  }
}

namespace {

// This host's IP addresses (to find itself among discovered peers).
std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    char text[NI_MAXHOST];
    const socklen_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(i->ifa_addr, len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
      std::string a = text;
      if (auto pct = a.find('%'); pct != std::string::npos) a.resize(pct);  // fe80::1%eth0
      out.push_back(std::move(a));
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

std::vector<PeerTarget> PeerMembership::Select(std::vector<PeerTarget> targets, const PeerSelectionPolicy& policy) {
  // Who this node is among the targets: as configured, else a target that is one of its addresses,
  // else its host name.
  std::string self = policy.self;
  if (self.empty()) {
    const std::vector<std::string> mine = options_.local_addresses ? options_.local_addresses() : LocalAddresses();
    for (const PeerTarget& t : targets) {
      if (std::find(mine.begin(), mine.end(), t.name) != mine.end()) self = t.name;
    }
  }
  if (self.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) self = host;
  }
  std::vector<PeerCandidate> candidates;
  candidates.reserve(targets.size());
  for (const PeerTarget& t : targets) {
    std::string tor;
    for (const auto& [k, v] : t.labels) {
      if (k == policy.tor_label) tor = v;
    }
    candidates.push_back({t.name, std::move(tor)});
  }
  SelectionPolicy sp;
  sp.max_peers = policy.max_peers;
  sp.same_tor_cap = policy.same_tor_cap;
  sp.epoch = static_cast<std::uint64_t>(selection_epoch_);
  std::set<std::string> chosen;
  for (const SelectedPeer& s : PeerSelector(std::move(candidates)).Select(self, sp)) chosen.insert(s.name);
  std::erase_if(targets, [&](const PeerTarget& t) { return !chosen.contains(t.name); });
  return targets;
}

PeerSet ReconcilePeers(PeerSet current, std::vector<PeerTarget> wanted, const PeersPolicy& p, PeerSchedule& schedule,
                       std::chrono::steady_clock::time_point now) {
  PeerSet next;
  for (PeerTarget& t : wanted) {
    auto it = current.find(t.name);
    if (it != current.end()) {
      std::unique_ptr<PeerState> peer = std::move(it->second);
      if (peer->target.labels != t.labels) {
        peer->target.labels = t.labels;
        peer->status.labels = t.labels;
        peer->dirty = true;
      }
      next.emplace(t.name, std::move(peer));
      continue;
    }
    auto peer = std::make_unique<PeerState>();
    peer->status.name = t.name;
    peer->status.labels = t.labels;
    peer->target = std::move(t);
    peer->next_latency = schedule.FirstDue(now, p.interval);
    peer->next_bandwidth = schedule.FirstDue(now, p.bandwidth_interval);
    StartCounting(peer->status, kLatencyProbe);
    if (p.bandwidth) StartCounting(peer->status, kBandwidthProbe);
    next.emplace(peer->status.name, std::move(peer));
  }
  return next;
}

}  // namespace rdmahd
