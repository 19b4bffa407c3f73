// The "roce_tos" collector (collectors/roce_tos.h).
#include "collectors/roce_tos.h"

#include <cerrno>

#include "collectors/host_devices.h"
#include "facts/roce_tos_facts.h"
#include "parsers/host_dev_parse.h"

namespace rdmahd {
namespace {

bool IsAbsent(int err) { return err == ENOENT || err == ENOTDIR; }

std::string_view SourceName(const RoceTosPortFacts& p) {
  if (p.traffic_class) return "traffic_class";
  switch (p.source) {
    case RoceTosSource::kConfigfs: return "configfs";
    case RoceTosSource::kNoConfigfs:
    case RoceTosSource::kNoDeviceEntry: return "kernel_default";
    case RoceTosSource::kUnreadable: break;
  }
  return "unknown";
}

}  // namespace

RoceTosCollector::RoceTosCollector(SteadyNow now) : now_(std::move(now)) {}

Status RoceTosCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  RoceTosFacts facts;
  facts.ports.reserve(ctx.topology.PortCount());
  const NodeFs& fs = ctx.fs;
  const auto now = now_();
  const std::string configfs = fs.Sys("kernel/config/rdma_cm");
  const bool have_configfs = fs.IsDir(configfs);
  for (const TopologyDevice& d : ctx.topology.devices) {
    const bool have_entry = have_configfs && fs.IsDir(configfs + "/" + d.name);
    for (const TopologyPort& port : d.ports) {
      if (!port.IsEthernet()) continue;
      RoceTosPortFacts p;
      p.device = d.name;
      p.port = port.port;
      const std::string n = std::to_string(port.port);
      if (!have_configfs) {
        p.source = RoceTosSource::kNoConfigfs;
        p.note = configfs + " absent (rdma_cm not loaded, or configfs not mounted): rdma_cm uses the kernel default ToS 0";
      } else if (!have_entry) {
        p.source = RoceTosSource::kNoDeviceEntry;
        p.note = "no " + configfs + "/" + d.name + " (never created): rdma_cm uses the kernel default ToS 0";
      } else {
        const std::string path = configfs + "/" + d.name + "/ports/" + n + "/default_roce_tos";
        auto text = fs.ReadFile(path);
        if (!text) {
          p.note = text.error().message;
        } else if (auto tos = ParseRoceTos(*text); !tos) {
          p.note = path + ": " + tos.error().message;
        } else {
          p.source = RoceTosSource::kConfigfs;
          p.configfs_tos = *tos;
        }
        if (!p.note.empty()) outcome.errors.push_back(p.note);
      }
      Result<std::string_view> tc_text = ReadTrafficClass(fs, d, port.port, now);
      bool tc_unknown = false;  // an override file that cannot be read or parsed
      if (tc_text) {
        p.traffic_class_file = true;
        if (auto v = ParseTrafficClass(*tc_text); !v) {
          const std::string tc = fs.Sys("class/infiniband/" + d.name + "/tc/" + n + "/traffic_class");
          tc_unknown = true;
          p.note += (p.note.empty() ? "" : "; ") + tc + ": " + v.error().message;
          outcome.errors.push_back(tc + ": " + v.error().message);
        } else {
          p.traffic_class = *v;
        }
      } else if (!IsAbsent(tc_text.error().errno_value)) {
        p.traffic_class_file = true;
        tc_unknown = true;
        p.note += (p.note.empty() ? "" : "; ") + tc_text.error().message;
        outcome.errors.push_back(tc_text.error().message);
      }
      // The per-port override wins over rdma_cm's default; an unreadable override leaves it unknown.
      if (p.traffic_class) {
        p.effective_tos = p.traffic_class;
      } else if (!tc_unknown) {
        if (p.source == RoceTosSource::kConfigfs) {
          p.effective_tos = p.configfs_tos;
        } else if (p.source != RoceTosSource::kUnreadable) {
          p.effective_tos = 0;
        }
      }
      p.note = KernelPaths(fs, p.note);
      facts.ports.push_back(std::move(p));
    }
  }
  // Devices that left (or were re-created: their entries were replaced above) close their files.
  tc_files_.Retain([&](const std::string&, const TcFile& tc) {
    const TopologyDevice* d = ctx.topology.FindDevice(tc.device);
    return d != nullptr && d->generation == tc.generation;
  });
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

Result<std::string_view> RoceTosCollector::ReadTrafficClass(const NodeFs& fs, const TopologyDevice& d,
                                                            std::uint32_t port,
                                                            std::chrono::steady_clock::time_point now) {
  const std::uint64_t generation = d.generation;
  auto discover = [&]() -> Result<TcFile> {
    TcFile tc;
    tc.device = d.name;
    tc.generation = generation;
    tc.file.emplace(fs.Sys("class/infiniband/" + d.name + "/tc/" + std::to_string(port) + "/traffic_class"));
    return tc;
  };
  // Absent at the last look: looked up again only after kNetdevRelistInterval.
  auto fits = [&](const TcFile& tc) {
    return tc.generation == generation && (tc.file || now - tc.absent_at < kNetdevRelistInterval);
  };
  Result<std::string_view> r = Error{"traffic_class absent", ENOENT};  // only ENOENT is looked at
  auto read = [&](TcFile& tc) -> std::optional<std::string> {
    if (!tc.file) return std::nullopt;
    r = tc.file->Read(fs, read_buf_);
    if (!r && IsAbsent(r.error().errno_value)) {
      tc.file.reset();
      tc.absent_at = now;
    }
    return std::nullopt;  // a port's file is never "gone" for the device: absent is a value here
  };
  (void)tc_files_.Read(d.name + "/" + std::to_string(port), now, discover, fits, read);
  return r;
}

void RoceTosCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const RoceTosFacts* facts = snapshot.Get<RoceTosFacts>();
  if (facts == nullptr) return;
  auto tos = sink.Gauge("rdma_roce_default_tos",
                        "ToS byte RoCE traffic of the port is sent with by default (DSCP = ToS / 4); source: "
                        "traffic_class (mlx5 tc/N override), configfs (rdma_cm default_roce_tos) or kernel_default (0).");
  for (const RoceTosPortFacts& p : facts->ports) {
    if (!p.effective_tos) continue;
    const std::string port = std::to_string(p.port);
    tos.Add({{"device", p.device}, {"port", port}, {"source", SourceName(p)}}, *p.effective_tos);
  }
}

RDMAHD_REGISTER_COLLECTOR(
    "roce_tos", RoceTosCollector,
    "default ToS of RoCE traffic per port: rdma_cm configfs default_roce_tos, mlx5 tc/N/traffic_class");

}  // namespace rdmahd
