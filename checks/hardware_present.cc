// hardware_present: RDMA hardware that was here and is gone, and hardware that never came.
//
// Vanished: every collection records, per RDMA device of the Topology, one gauge per object (the
// device, each of its ports, each netdev its RoCE GIDs name) and the device's PCI address, into
// the engine's History. An object present in an earlier collection and missing from this one is
// `failed` for its device, naming when it went (wall time) and its PCI address, and stays `failed`
// until it returns; back, it is `ok` saying "recovered" for kRecoveredFor. The history keeps at most
// kMaxObjects objects: past that the longest-gone are forgotten first, then new objects are not
// remembered (and say so).
//
// Expected (inventory.expected): device count and name patterns, and a number of ports ACTIVE at a
// minimum rate, judged on every collection including `rdma-healthd check`'s single one, so a NIC
// that never came up at boot, or a port that trained low, fails without any history.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/pattern.h"
#include "config/config_section.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {
namespace {

struct InventoryPolicy {
  std::optional<std::uint32_t> devices;  // at least this many devices (matching `names` when given)
  std::vector<std::string> names;        // each matches at least one device
  std::vector<Pattern> names_re;         // `names`, compiled by the loader
  std::optional<std::uint32_t> ports;    // at least this many ports ACTIVE (at min_rate_gbps)
  std::optional<double> min_rate_gbps;

  bool empty() const { return !devices && names.empty() && !ports && !min_rate_gbps; }
};

// Objects remembered at most (devices, ports and netdevs together); a node with 16 NICs of two
// ports and a few VLANs each needs about 100.
constexpr std::size_t kMaxObjects = 1024;
// How long a returned object's device says "recovered" (long enough for an alert's resolution and
// a person to see why it fired).
constexpr auto kRecoveredFor = std::chrono::hours(1);

// Series: "hardware_present/<device>/device", ".../port/<N>", ".../netdev/<name>": 0 while present,
// else Gone(): the Unix times (s) of the first collection that missed it and of the last that saw
// it, fixed when it went so that every later reason says the same. ".../pci": the device's PCI
// address, packed (PackPci).
constexpr std::string_view kPrefix = "hardware_present/";
constexpr std::string_view kDevice = "device";
constexpr std::string_view kPort = "port/";
constexpr std::string_view kNetdev = "netdev/";
constexpr std::string_view kPci = "pci";

std::string GroupPrefix(std::string_view device) {
  std::string s(kPrefix);
  s += device;
  s += '/';
  return s;
}

// "0000:3b:00.1" -> domain << 16 | bus << 8 | device << 3 | function, with bit 63 set so that no
// address packs to 0; nullopt for anything else.
std::optional<std::uint64_t> PackPci(const std::string& address) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  int used = 0;
  if (address.size() > 16 ||
      std::sscanf(address.c_str(), "%8x:%2x:%2x.%1x%n", &domain, &bus, &dev, &fn, &used) != 4 ||
      static_cast<std::size_t>(used) != address.size() || dev > 31 || fn > 7) {
    return std::nullopt;
  }
  return (std::uint64_t{1} << 63) | (std::uint64_t{domain} << 16) | (bus << 8) | (dev << 3) | fn;
}

std::string UnpackPci(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", static_cast<unsigned>((v >> 16) & 0xffffffffu),
                static_cast<unsigned>((v >> 8) & 0xff), static_cast<unsigned>((v >> 3) & 0x1f),
                static_cast<unsigned>(v & 7));
  return text;
}

std::int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// A gone object's state: when it was first missed in the upper 32 bits (at least 1, so the state is
// never 0), when it was last seen in the lower (Unix seconds fit 32 bits until 2106).
std::uint64_t Gone(std::int64_t missed_unix, std::int64_t seen_unix) {
  const auto clamp = [](std::int64_t v) { return static_cast<std::uint64_t>(std::clamp<std::int64_t>(v, 0, 0xffffffff)); };
  return (std::max<std::uint64_t>(clamp(missed_unix), 1) << 32) | clamp(seen_unix);
}
std::int64_t MissedAt(std::uint64_t state) { return static_cast<std::int64_t>(state >> 32); }
std::int64_t SeenAt(std::uint64_t state) { return static_cast<std::int64_t>(state & 0xffffffffu); }

std::string UtcTime(std::int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm parts{};
  gmtime_r(&t, &parts);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

std::string Duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  return std::to_string(s / 3600) + " h";
}

// The objects of one device this collection lists, as series names relative to its group prefix.
std::vector<std::string> ListedObjects(const TopologyDevice& d, const Topology& topology) {
  std::vector<std::string> out{std::string(kDevice)};
  for (const TopologyPort& p : d.ports) out.push_back(std::string(kPort) + std::to_string(p.port));
  for (const RdmaNetdev& l : topology.links) {
    if (l.device == d.name) out.push_back(std::string(kNetdev) + l.netdev);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// What one collection lists: each device's objects, the devices whose ports could not be listed,
// and the PCI address (packed) of each device that has one.
struct Listing {
  std::map<std::string, std::vector<std::string>, std::less<>> objects;
  std::set<std::string, std::less<>> unlisted_ports_of;
  std::map<std::string, std::uint64_t, std::less<>> pci;
};

Listing ListNow(const Topology& topology) {
  Listing l;
  for (const TopologyDevice& d : topology.devices) {
    if (d.ports_unreadable) l.unlisted_ports_of.insert(d.name);
    std::vector<std::string> objects = ListedObjects(d, topology);
    std::vector<std::string>& into = l.objects[d.name];
    into.insert(into.end(), std::make_move_iterator(objects.begin()), std::make_move_iterator(objects.end()));
    if (d.pci_address) {
      if (auto packed = PackPci(*d.pci_address)) l.pci[d.name] = *packed;
    }
  }
  return l;
}

// One remembered object: its series' samples, oldest first.
struct Remembered {
  std::string device, object;  // "mlx5_1", "port/1"
  std::vector<History::Sample> samples;
  std::uint64_t state() const { return samples.empty() ? 0 : samples.back().value; }
};

// Every remembered object, by device; the PCI address of each device that had one.
struct Memory {
  std::map<std::string, std::vector<Remembered>> devices;
  std::map<std::string, std::uint64_t> pci;
  std::size_t objects = 0;
};

Memory Recall(const History& history) {
  Memory m;
  for (auto& [name, samples] : history.SamplesUnder(kPrefix)) {
    const std::string_view rest = std::string_view(name).substr(kPrefix.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    std::string device(rest.substr(0, slash));
    const std::string_view object = rest.substr(slash + 1);
    if (samples.empty()) continue;
    if (object == kPci) {
      m.pci[device] = samples.back().value;
      continue;
    }
    m.devices[device].push_back({device, std::string(object), std::move(samples)});
    ++m.objects;
  }
  return m;
}

// "port 1", "netdev ens1f0np0", "mlx5_1" for an object of `device`.
std::string ObjectName(const Remembered& r) {
  if (r.object == kDevice) return r.device;
  if (r.object.starts_with(kPort)) return "port " + r.object.substr(kPort.size());
  if (r.object.starts_with(kNetdev)) return "netdev " + r.object.substr(kNetdev.size());
  return r.object;
}

class HardwarePresentCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config& config, History& history,
              History::TimePoint now) const override {
    const auto* topology = snapshot.Get<Topology>();
    MutexLock lock(mu_);
    fast_at_.reset();
    slow_at_.reset();
    if (topology == nullptr || topology->failure) steady_.on = false;
    Listing listing;
    if (topology != nullptr && !topology->failure) {
      listing = ListNow(*topology);
      if (steady_.on && listing.objects == steady_.objects && listing.pci == steady_.pci) {
        // Nothing came or went since a collection that found everything present: the same series
        // get the same values, through handles, with no recall of the history and no verdict to
        // work out again.
        History::Batch batch(history);
        for (auto& [series, value] : steady_.series) batch.RecordGauge(series, value, now);
        fast_at_ = now;
        return;
      }
      steady_.on = false;
    }
    RecordChanges(snapshot, topology, config, history, now, listing);
    slow_at_ = now;
    slow_listing_ = std::move(listing);
  }

  // The slow path: what is remembered against what is listed, object by object.
  void RecordChanges(const Snapshot& snapshot, const Topology* topology, const Config& config, History& history,
                     History::TimePoint now, Listing& listing) const {
    Memory memory = Recall(history);
    const auto keep_all = [&] {  // nothing known this time: keep what is remembered alive
      for (const auto& [device, objects] : memory.devices) {
        for (const Remembered& r : objects) history.RecordGauge(GroupPrefix(device) + r.object, r.state(), now);
        if (auto it = memory.pci.find(device); it != memory.pci.end()) {
          history.RecordGauge(GroupPrefix(device) + std::string(kPci), it->second, now);
        }
      }
    };
    if (topology == nullptr || topology->failure) {
      keep_all();
      return;
    }
    // A device the config's filter now excludes was not lost: forget it.
    for (auto it = memory.devices.begin(); it != memory.devices.end();) {
      if (config.devices.Matches(it->first)) {
        ++it;
        continue;
      }
      for (const Remembered& r : it->second) history.Forget(GroupPrefix(it->first) + r.object);
      history.Forget(GroupPrefix(it->first) + std::string(kPci));
      memory.objects -= it->second.size();
      memory.pci.erase(it->first);
      it = memory.devices.erase(it);
    }

    const std::int64_t now_unix = UnixSeconds(snapshot.taken_at);
    // When an object missing now was last seen: its last present collection, as wall time.
    const auto gone_now = [&](const Remembered& r) {
      const auto ago = std::chrono::duration_cast<std::chrono::seconds>(now - r.samples.back().last).count();
      return Gone(now_unix, now_unix - ago);
    };
    std::map<std::string, std::vector<std::string>, std::less<>>& listed = listing.objects;
    const std::set<std::string, std::less<>>& unlisted_ports_of = listing.unlisted_ports_of;
    const auto is_listed = [&](std::string_view device, std::string_view object) {
      const auto it = listed.find(device);
      return it != listed.end() && std::find(it->second.begin(), it->second.end(), object) != it->second.end();
    };
    // What is remembered and not listed now is gone (kept as it was if it went earlier, or if it is
    // a port of a device whose ports could not be listed).
    for (const auto& [device, objects] : memory.devices) {
      const std::string prefix = GroupPrefix(device);
      for (const Remembered& r : objects) {
        if (is_listed(device, r.object)) continue;
        // Unlisted ports leave their netdevs (named by the ports' GID tables) unknown too.
        const bool unknown = (r.object.starts_with(kPort) || r.object.starts_with(kNetdev)) &&
                             unlisted_ports_of.contains(device);
        history.RecordGauge(prefix + r.object, r.state() != 0 || unknown ? r.state() : gone_now(r), now);
      }
      if (auto it = memory.pci.find(device); it != memory.pci.end() && !topology->FindDevice(device)) {
        history.RecordGauge(prefix + std::string(kPci), it->second, now);
      }
    }
    // Listed and not remembered: (device, object).
    std::vector<std::pair<std::string, std::string>> fresh;
    for (const auto& [device, objects] : listed) {
      const auto known = memory.devices.find(device);
      for (const std::string& object : objects) {
        const bool remembered = known != memory.devices.end() &&
                                std::any_of(known->second.begin(), known->second.end(),
                                            [&](const Remembered& r) { return r.object == object; });
        if (!remembered) fresh.emplace_back(device, object);
      }
    }
    // Room for the new objects: the longest-gone are forgotten first (recalled again for the times
    // just recorded; only when the bound is reached, so a steady node recalls once per collection).
    if (memory.objects + fresh.size() > kMaxObjects) {
      memory = Recall(history);
      std::vector<const Remembered*> gone;
      for (const auto& [device, objects] : memory.devices) {
        for (const Remembered& r : objects) {
          if (r.state() != 0) gone.push_back(&r);
        }
      }
      std::stable_sort(gone.begin(), gone.end(),
                       [](const Remembered* a, const Remembered* b) { return a->state() < b->state(); });
      for (const Remembered* r : gone) {
        if (memory.objects + fresh.size() <= kMaxObjects) break;
        history.Forget(GroupPrefix(r->device) + r->object);
        if (r->object == kDevice) history.Forget(GroupPrefix(r->device) + std::string(kPci));
        --memory.objects;
      }
      const std::size_t room = kMaxObjects > memory.objects ? kMaxObjects - memory.objects : 0;
      for (std::size_t i = room; i < fresh.size(); ++i) {
        std::vector<std::string>& objects = listed[fresh[i].first];
        objects.erase(std::find(objects.begin(), objects.end(), fresh[i].second));
      }
    }
    for (const auto& [device, objects] : listed) {
      const std::string prefix = GroupPrefix(device);
      for (const std::string& object : objects) history.RecordGauge(prefix + object, 0, now);
    }
    for (const auto& [device, packed] : listing.pci) {
      if (is_listed(device, kDevice)) history.RecordGauge(GroupPrefix(device) + std::string(kPci), packed, now);
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    const auto* topology = ctx.snapshot.Get<Topology>();
    if (topology == nullptr) return;
    MutexLock lock(mu_);
    if (fast_at_ && *fast_at_ == ctx.now) {
      out.insert(out.end(), steady_.verdicts.begin(), steady_.verdicts.end());
      JudgeInventory(ctx, *topology, out);
      return;
    }
    const std::size_t first_verdict = out.size();
    bool steady = !topology->failure;  // every remembered object present and none back lately
    const Memory memory = Recall(ctx.history);
    const std::int64_t now_unix = UnixSeconds(ctx.snapshot.taken_at);
    // A steady time of this collection's history as wall time.
    const auto wall = [&](History::TimePoint t) {
      return now_unix - std::chrono::duration_cast<std::chrono::seconds>(ctx.now - t).count();
    };
    for (const TopologyDevice& d : topology->devices) {
      if (!memory.devices.contains(d.name)) {
        std::string reason = "present" + Pci(d.pci_address);
        if (memory.objects >= kMaxObjects) {
          reason += "; not remembered (more than " + std::to_string(kMaxObjects) +
                    " devices, ports and netdevs): its loss would go unseen";
        }
        out.push_back({"", d.name, Verdict::kOk, std::move(reason), ""});
        steady = false;
      }
    }
    for (const auto& [device, objects] : memory.devices) {
      const auto pci_it = memory.pci.find(device);
      const std::string pci = pci_it != memory.pci.end() ? UnpackPci(pci_it->second) : std::string();
      CheckResult r{"", device, Verdict::kOk, "", ""};
      if (topology->failure) {
        r.verdict = Verdict::kUnknown;
        r.reason = "device discovery failed this time; whether the device is present is not known";
        out.push_back(std::move(r));
        continue;
      }
      std::vector<const Remembered*> gone, back;
      std::size_t ports = 0;
      std::vector<std::string> netdevs;
      for (const Remembered& o : objects) {
        if (o.state() != 0) {
          gone.push_back(&o);
          continue;
        }
        if (o.object.starts_with(kPort)) ++ports;
        if (o.object.starts_with(kNetdev)) netdevs.push_back(o.object.substr(kNetdev.size()));
        // Back within kRecoveredFor: its present sample follows a gone one.
        if (o.samples.size() >= 2 && o.samples[o.samples.size() - 2].value != 0 &&
            ctx.now - o.samples.back().first < kRecoveredFor) {
          back.push_back(&o);
        }
      }
      const std::string where = pci.empty() ? " (no PCI address)" : " (PCI " + pci + ")";
      if (!gone.empty() || !back.empty()) steady = false;
      if (!gone.empty()) {
        // The device itself first: its ports and netdevs went with it.
        std::stable_sort(gone.begin(), gone.end(),
                         [](const Remembered* a, const Remembered* b) { return a->object == kDevice && b->object != kDevice; });
        const bool device_gone = gone.front()->object == kDevice;
        r.verdict = Verdict::kFailed;
        r.reason = device_gone ? device + where + " is gone" : "of " + device + where + ", ";
        std::string with;
        for (const Remembered* o : gone) {
          if (o->object == kDevice) continue;
          with += (with.empty() ? "" : ", ") + ObjectName(*o);
        }
        if (device_gone) {
          if (!with.empty()) r.reason += " with " + with;
        } else {
          r.reason += with + (gone.size() == 1 ? " is gone" : " are gone");
        }
        const Remembered& first = *gone.front();
        r.reason += ": missing since " + UtcTime(MissedAt(first.state())) + " (last seen " +
                    UtcTime(SeenAt(first.state())) + ")";
        r.fix = device_gone
                    ? "look for why the device left: `dmesg | grep -i -e mlx5 -e " +
                          (pci.empty() ? device : pci) + "` (a firmware fatal error, a PCIe surprise removal), `" +
                          (pci.empty() ? std::string("rdma dev") : "lspci -s " + pci + " -vv") +
                          "`; reload the driver or reboot to bring it back, reseat or replace the NIC if it stays gone"
                    : "`rdma link show " + device + "` and `ip link`: a port or netdev left while the device stayed "
                      "(driver unbinding, a netdev deleted or renamed); reload the driver or reboot if it stays gone";
      } else if (!back.empty()) {
        const Remembered& o = *back.front();
        const auto& away = o.samples[o.samples.size() - 2];
        r.reason = "recovered: " + ObjectName(o) + (o.object == kDevice ? where : " of " + device + where) +
                   " back since " + UtcTime(wall(o.samples.back().first)) + " after " +
                   Duration(std::chrono::duration<double>(o.samples.back().first - away.first).count()) +
                   " away (missing since " + UtcTime(MissedAt(away.value)) + ")";
        if (back.size() > 1) r.reason += ", with " + std::to_string(back.size() - 1) + " more of its objects";
      } else {
        r.reason = "present" + where + ", " + std::to_string(ports) + (ports == 1 ? " port" : " ports");
        if (!netdevs.empty()) {
          r.reason += ", netdev";
          r.reason += netdevs.size() == 1 ? " " : "s ";
          for (std::size_t i = 0; i < netdevs.size(); ++i) r.reason += (i ? ", " : "") + netdevs[i];
        }
      }
      out.push_back(std::move(r));
    }
    if (steady && slow_at_ && *slow_at_ == ctx.now) BecomeSteady(memory, out, first_verdict);
    JudgeInventory(ctx, *topology, out);
  }

 private:
  // The slow path's Record found, and its evaluation confirmed, that what the history remembers is
  // exactly what this collection listed, every object present: until the listing changes, each
  // collection records the same values and gets the same verdicts.
  void BecomeSteady(const Memory& memory, const std::vector<CheckResult>& out, std::size_t first_verdict) const
      REQUIRES(mu_) {
    std::size_t listed = 0;
    for (const auto& [device, objects] : slow_listing_.objects) listed += objects.size();
    if (memory.objects != listed || memory.pci.size() != slow_listing_.pci.size()) return;
    steady_.series.clear();
    for (const auto& [device, objects] : slow_listing_.objects) {
      const auto known = memory.devices.find(device);
      if (known == memory.devices.end() || known->second.size() != objects.size()) return;
      for (const std::string& object : objects) steady_.series.emplace_back(History::Handle(GroupPrefix(device) + object), 0);
    }
    for (const auto& [device, packed] : slow_listing_.pci) {
      const auto known = memory.pci.find(device);
      if (known == memory.pci.end() || known->second != packed) return;
      steady_.series.emplace_back(History::Handle(GroupPrefix(device) + std::string(kPci)), packed);
    }
    steady_.objects = slow_listing_.objects;
    steady_.pci = slow_listing_.pci;
    steady_.verdicts.assign(out.begin() + static_cast<std::ptrdiff_t>(first_verdict), out.end());
    steady_.on = true;
  }

  struct Steady {
    bool on = false;
    std::map<std::string, std::vector<std::string>, std::less<>> objects;  // the listing it holds for
    std::map<std::string, std::uint64_t, std::less<>> pci;
    std::vector<std::pair<History::Handle, std::uint64_t>> series;  // each series and its value
    std::vector<CheckResult> verdicts;                                // the devices' (not the inventory's)
  };
  mutable Mutex mu_;
  mutable Steady steady_ GUARDED_BY(mu_);
  mutable std::optional<History::TimePoint> fast_at_ GUARDED_BY(mu_);  // the collection Record found steady
  // The collection Record went through object by object, and what it listed.
  mutable std::optional<History::TimePoint> slow_at_ GUARDED_BY(mu_);
  mutable Listing slow_listing_ GUARDED_BY(mu_);

  static std::string Pci(const std::optional<std::string>& address) {
    return address ? " (PCI " + *address + ")" : std::string();
  }

  static void JudgeInventory(const CheckContext& ctx, const Topology& topology, std::vector<CheckResult>& out) {
    const InventoryPolicy& policy = ctx.config.Section<InventoryPolicy>();
    if (policy.empty()) return;
    CheckResult r{"", "node", Verdict::kOk, "", ""};
    if (topology.failure) {
      r.verdict = Verdict::kUnknown;
      r.reason = "device discovery failed; the inventory is not known";
      out.push_back(std::move(r));
      return;
    }
    const auto counted = [&](const std::string& name) {
      if (policy.names_re.empty()) return true;
      return std::any_of(policy.names_re.begin(), policy.names_re.end(),
                         [&](const Pattern& p) { return p.FullMatch(name); });
    };
    std::vector<std::string> short_of, found;
    std::vector<std::string> devices;
    for (const TopologyDevice& d : topology.devices) {
      if (counted(d.name)) devices.push_back(d.name);
    }
    const std::string matching = policy.names.empty() ? "" : " matching the names";
    for (const Pattern& p : policy.names_re) {
      if (std::none_of(topology.devices.begin(), topology.devices.end(),
                       [&](const TopologyDevice& d) { return p.FullMatch(d.name); })) {
        short_of.push_back("no device matches " + ConfigWalker::Quote(p.text()));
      }
    }
    if (policy.devices && devices.size() < *policy.devices) {
      short_of.push_back("expected at least " + std::to_string(*policy.devices) + " devices" + matching + ", found " +
                         std::to_string(devices.size()));
    }
    if (policy.devices || !policy.names.empty()) found.push_back(std::to_string(devices.size()) + " devices" + matching);

    if (policy.ports || policy.min_rate_gbps) {
      const auto* facts = ctx.snapshot.Get<RdmaDevicesFacts>();
      if (facts == nullptr) {
        r.verdict = Verdict::kUnknown;
        r.reason = "the devices collector did not run: ports and rates are not known";
        out.push_back(std::move(r));
        return;
      }
      std::size_t good = 0, total = 0;
      std::vector<std::string> low;
      for (const RdmaDeviceFacts& d : facts->devices) {
        if (!counted(d.name)) continue;
        for (const RdmaPortFacts& p : d.ports) {
          ++total;
          const bool active = p.state && p.state->id == kPortStateActive;
          const std::optional<double> gbps =
              p.rate_bytes_per_second ? std::optional<double>(static_cast<double>(*p.rate_bytes_per_second) * 8 / 1e9)
                                      : std::nullopt;
          const bool fast = !policy.min_rate_gbps || (gbps && *gbps + 1e-9 >= *policy.min_rate_gbps);
          if (active && fast) {
            ++good;
          } else if (low.size() < 16) {
            low.push_back(p.Subject() + " " +
                          (!active ? (p.state ? p.state->name : std::string("state unknown"))
                                   : gbps ? "at " + FormatRate(*gbps) : std::string("rate unknown")));
          }
        }
      }
      const std::uint64_t want = policy.ports ? *policy.ports : total;
      const std::string what = "ports ACTIVE" + (policy.min_rate_gbps ? " at " + FormatRate(*policy.min_rate_gbps) + " or more"
                                                                        : std::string());
      if (good < want || total == 0) {
        std::string s = "expected " + std::string(policy.ports ? "at least " : "every one of ") + std::to_string(want) +
                        " " + what + ", found " + std::to_string(good);
        if (!low.empty()) {
          s += " (";
          for (std::size_t i = 0; i < low.size(); ++i) s += (i ? ", " : "") + low[i];
          s += ")";
        }
        short_of.push_back(std::move(s));
      }
      found.push_back(std::to_string(good) + " " + what);
    }
    if (short_of.empty()) {
      r.reason = "as expected:";
      for (std::size_t i = 0; i < found.size(); ++i) r.reason += (i ? ", " : " ") + found[i];
    } else {
      r.verdict = Verdict::kFailed;
      for (std::size_t i = 0; i < short_of.size(); ++i) r.reason += (i ? "; " : "") + short_of[i];
      r.fix = "a device that is missing: `lspci -nn | grep -i -e mellanox -e infiniband -e ethernet` (is the card "
              "on the bus?), `dmesg | grep -i mlx5` (did the driver probe fail?), `rdma dev`; a port down or slow: "
              "`ibstat`, `ethtool <netdev>` for the speed and width it trained at; check the cable or optic and the "
              "switch port; then fix inventory.expected if the node really has less";
    }
    out.push_back(std::move(r));
  }

  static std::string FormatRate(double gbps) {
    char text[32];
    std::snprintf(text, sizeof text, "%g Gb/s", gbps);
    return text;
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("hardware_present", HardwarePresentCheck,
                      "no RDMA device, port or netdev seen earlier is gone; the node has the expected inventory");

RDMAHD_REGISTER_CONFIG_GROUP(inventory, "inventory", 90, {});

RDMAHD_REGISTER_CONFIG_SECTION(InventoryPolicy, "inventory.expected", 10,
    {{"inventory.expected.devices", "unset"},
     {"inventory.expected.names", "`[]`"},
     {"inventory.expected.ports", "unset"},
     {"inventory.expected.min_rate_gbps", "unset"}},
    [](const ConfigWalker& w, const ConfigNode& v, InventoryPolicy& out) {
      return w.VisitMap(v, {
          {"devices", [&](const ConfigNode& f) {
             std::optional<int> n;
             Status s = w.ReadInt(f, 1, 4096, n);
             if (s.ok() && n) out.devices = static_cast<std::uint32_t>(*n);
             return s;
           }},
          {"names", [&](const ConfigNode& f) {
             Status s = w.ReadRegexList(f, out.names);
             if (!s.ok()) return s;
             out.names_re.clear();
             for (const std::string& p : out.names) {
               if (Result<Pattern> c = Pattern::Compile(p); c.ok()) out.names_re.push_back(std::move(c.value()));
             }
             return s;
           }},
          {"ports", [&](const ConfigNode& f) {
             std::optional<int> n;
             Status s = w.ReadInt(f, 1, 65536, n);
             if (s.ok() && n) out.ports = static_cast<std::uint32_t>(*n);
             return s;
           }},
          {"min_rate_gbps", [&](const ConfigNode& f) { return w.ReadRateGbps(f, out.min_rate_gbps); }},
      });
    });

}  // namespace rdmahd
