#include "collectors/verbs_devices.h"

#include <algorithm>
#include <cerrno>
#include <utility>

namespace rdmahd {
namespace {

// A verbs call's errno when the context outlived its kernel device (removed, driver unbound, device
// reset): not the sysfs set of IsGoneErrno (a verbs call answers EIO, never ENOENT).
bool ContextOutlivedDevice(int err) { return err == ENODEV || err == EIO || err == ENXIO; }

struct DeviceLimit {
  std::string_view metric;
  std::string_view help;
  std::uint64_t (*get)(const VerbsDeviceAttrs&);
};
// Chosen for sizing jobs: queue pairs, queue depths, completion queues, registered memory, SGEs,
// SRQs, protection domains and outstanding RDMA reads. The rest of ibv_device_attr is rarely a limit.
constexpr DeviceLimit kDeviceLimits[] = {
    {"rdma_device_max_qp", "Queue pairs the device supports (ibv_query_device max_qp).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_qp; }},
    {"rdma_device_max_qp_wr", "Work requests per send or receive queue (ibv_query_device max_qp_wr).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_qp_wr; }},
    {"rdma_device_max_sge", "Scatter/gather entries per work request (ibv_query_device max_sge).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_sge; }},
    {"rdma_device_max_cq", "Completion queues the device supports (ibv_query_device max_cq).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_cq; }},
    {"rdma_device_max_cqe", "Entries per completion queue (ibv_query_device max_cqe).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_cqe; }},
    {"rdma_device_max_mr", "Memory regions the device supports (ibv_query_device max_mr).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_mr; }},
    {"rdma_device_max_mr_size_bytes", "Largest memory region, bytes (ibv_query_device max_mr_size).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_mr_size; }},
    {"rdma_device_max_pd", "Protection domains the device supports (ibv_query_device max_pd).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_pd; }},
    {"rdma_device_max_srq", "Shared receive queues the device supports (ibv_query_device max_srq).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_srq; }},
    {"rdma_device_max_srq_wr", "Work requests per shared receive queue (ibv_query_device max_srq_wr).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_srq_wr; }},
    {"rdma_device_max_qp_rd_atom",
     "Outstanding RDMA reads and atomics per queue pair as responder (ibv_query_device max_qp_rd_atom).",
     [](const VerbsDeviceAttrs& a) -> std::uint64_t { return a.max_qp_rd_atom; }},
};

}  // namespace

VerbsDevicesCollector::VerbsDevicesCollector() : VerbsDevicesCollector(MakeLibibverbsProvider) {}

VerbsDevicesCollector::VerbsDevicesCollector(ProviderFactory factory) : factory_(std::move(factory)) {}

VerbsDevicesCollector::~VerbsDevicesCollector() = default;


Result<VerbsDevicesCollector::OpenDevice> VerbsDevicesCollector::OpenAndQuery(const VerbsDeviceId& id) {
  auto handle = provider_->Open(id);
  if (!handle.ok()) return handle.error();
  auto attrs = (*handle)->QueryDevice();
  if (!attrs.ok()) return attrs.error();
  OpenDevice d;
  d.id = id;
  d.handle = std::move(*handle);
  d.attrs = *attrs;
  return d;
}

Status VerbsDevicesCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  VerbsFacts facts;
  if (!ctx.fs.asks_kernel()) {
    open_.Clear();
    facts.not_queried_reason = "verbs not queried: --path.sysfs is not /sys (libibverbs reads the running kernel)";
    snapshot.Put(std::move(facts));
    return Status::Ok();
  }
  if (!provider_) provider_ = factory_();
  facts.queried = true;

  auto listed = provider_->ListDevices();
  if (!listed.ok()) {
    open_.Clear();
    return listed.error();
  }
  std::vector<VerbsDeviceId> wanted;
  for (VerbsDeviceId& id : *listed) {
    if (ctx.config.devices.Matches(id.name)) wanted.push_back(std::move(id));
  }
  std::sort(wanted.begin(), wanted.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  // Close devices that left the list or the filter, or were re-created under the same name.
  open_.Retain([&](const std::string& name, const OpenDevice& d) {
    auto w = std::find_if(wanted.begin(), wanted.end(), [&](const VerbsDeviceId& id) { return id.name == name; });
    return w != wanted.end() && *w == d.id;
  });

  for (const VerbsDeviceId& id : wanted) {
    VerbsDeviceFacts dev;
    std::vector<std::string> port_errors;
    auto open = [&]() {
      port_errors.clear();
      return OpenAndQuery(id);
    };
    auto fits = [](const OpenDevice&) { return true; };  // re-created devices were closed above
    auto query = [&](OpenDevice& d) -> std::optional<std::string> {
      port_errors.clear();
      dev = VerbsDeviceFacts{};
      dev.name = id.name;
      dev.attrs = d.attrs;
      for (std::uint32_t port = 1; port <= d.attrs.phys_port_cnt; ++port) {
        auto attrs = d.handle->QueryPort(port);
        if (attrs.ok()) {
          dev.ports.push_back(*attrs);
        } else if (ContextOutlivedDevice(attrs.error().errno_value)) {
          return attrs.error().message;
        } else {
          port_errors.push_back("port " + id.name + "/" + std::to_string(port) + " skipped: " + attrs.error().message);
        }
      }
      return std::nullopt;
    };
    // A second attempt only after a cached context turned out to outlive its device; a failed
    // open caches nothing, so the next collection tries again.
    LayoutUse<OpenDevice> use = open_.Read(id.name, {}, open, fits, query, GoneRetry::kCachedOnly);
    if (use.gone && use.layout != nullptr) open_.Erase(id.name);
    const std::string skipped = use.gone.value_or("");
    for (std::string& e : port_errors) outcome.errors.push_back(std::move(e));
    if (!skipped.empty()) {
      outcome.errors.push_back("device " + id.name + " skipped: " + skipped);
      facts.unopened.push_back({id.name, skipped});
      continue;
    }
    facts.devices.push_back(std::move(dev));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void VerbsDevicesCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const VerbsFacts* facts = snapshot.Get<VerbsFacts>();
  if (facts == nullptr || !facts->queried) return;

  for (const DeviceLimit& limit : kDeviceLimits) {
    auto family = sink.Gauge(limit.metric, limit.help);
    for (const VerbsDeviceFacts& d : facts->devices) {
      family.Add({{"device", d.name}}, static_cast<double>(limit.get(d.attrs)));
    }
  }

  struct PortRef {
    const VerbsDeviceFacts* device;
    const VerbsPortAttrs* port;
    std::string number;
  };
  std::vector<PortRef> ports;
  for (const VerbsDeviceFacts& d : facts->devices) {
    for (const VerbsPortAttrs& p : d.ports) ports.push_back({&d, &p, std::to_string(p.port)});
  }
  auto active = sink.Gauge("rdma_port_active_mtu_bytes",
                           "Path MTU the port uses now, bytes (ibv_query_port active_mtu); on RoCE derived from the netdev MTU.");
  for (const PortRef& r : ports) {
    if (r.port->active_mtu_bytes) {
      active.Add({{"device", r.device->name}, {"port", r.number}}, *r.port->active_mtu_bytes);
    }
  }
  auto max = sink.Gauge("rdma_port_max_mtu_bytes", "Largest MTU the port supports, bytes (ibv_query_port max_mtu).");
  for (const PortRef& r : ports) {
    if (r.port->max_mtu_bytes) max.Add({{"device", r.device->name}, {"port", r.number}}, *r.port->max_mtu_bytes);
  }
  auto state = sink.Gauge("rdma_port_verbs_state_id",
                          "Port state as ibv_query_port reports it: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.");
  for (const PortRef& r : ports) state.Add({{"device", r.device->name}, {"port", r.number}}, r.port->state);
  auto gids = sink.Gauge("rdma_port_gid_table_size", "Slots in the port's GID table (ibv_query_port gid_tbl_len).");
  for (const PortRef& r : ports) gids.Add({{"device", r.device->name}, {"port", r.number}}, r.port->gid_tbl_len);
  auto msg = sink.Gauge("rdma_port_max_message_size_bytes",
                        "Largest message one work request may carry, bytes (ibv_query_port max_msg_sz).");
  for (const PortRef& r : ports) msg.Add({{"device", r.device->name}, {"port", r.number}}, r.port->max_msg_sz);
}

RDMAHD_REGISTER_COLLECTOR("verbs", VerbsDevicesCollector,
                          "RDMA device limits and port MTUs from libibverbs (ibv_query_device, ibv_query_port); live /sys only");

}  // namespace rdmahd
