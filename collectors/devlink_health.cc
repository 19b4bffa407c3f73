#include "collectors/devlink_health.h"

#include <linux/devlink.h>
#include <linux/netlink.h>

#include <cerrno>
#include <utility>

#include "facts/devlink_health_facts.h"
#include "parsers/devlink_health.h"

namespace rdmahd {

DevlinkHealthCollector::DevlinkHealthCollector()
    : DevlinkHealthCollector(std::make_unique<MnlGenlTransport>(DEVLINK_GENL_NAME)) {}

DevlinkHealthCollector::DevlinkHealthCollector(std::unique_ptr<GenlTransport> transport)
    : transport_(std::move(transport)) {}

namespace {

// Every reporter of the node, or why not.
Result<std::vector<DevlinkHealthReporter>> DumpReporters(GenlTransport& transport, std::uint32_t& seq) {
  auto answer = ExchangeGenl(transport, seq, /*dump=*/true, [](std::uint16_t family, std::uint32_t s) {
    return BuildGenlRequest(family, DEVLINK_CMD_HEALTH_REPORTER_GET, DEVLINK_GENL_VERSION, NLM_F_REQUEST | NLM_F_DUMP, s);
  });
  if (!answer) return answer.error();
  std::vector<DevlinkHealthReporter> reporters;
  bool done = false;
  for (const auto& datagram : answer->datagrams) {
    auto r = ParseDevlinkHealthReporterDump(datagram, answer->family_id, reporters);
    if (!r) return r.error();
    done = *r;
  }
  if (!done) return Error{"devlink HEALTH_REPORTER_GET dump ended without NLMSG_DONE", EPROTO};
  return reporters;
}

}  // namespace

Status DevlinkHealthCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  DevlinkHealthFacts facts;
  Result<std::vector<DevlinkHealthReporter>> reporters = Error{"not asked"};
  if (!ctx.fs.asks_kernel()) {
    reporters = Error{GenlNotCaptured("devlink health reporters come", "devlink -j health show"), ENODATA};
  } else {
    reporters = DumpReporters(*transport_, seq_);
    if (!reporters && reporters.error().errno_value != ENOENT) outcome.errors.push_back(reporters.error().message);
  }
  facts.devices.reserve(ctx.topology.devices.size());
  for (const TopologyDevice& d : ctx.topology.devices) {
    DevlinkHealthDeviceFacts f;
    f.device = d.name;
    f.pci_address = d.pci_address;
    if (!reporters) {
      f.note = reporters.error().message;
    } else if (!d.pci_address) {
      f.note = "no PCI function (a software device has no devlink health reporters)";
    } else {
      f.read = true;
      for (const DevlinkHealthReporter& r : *reporters) {
        if (r.bus_name == "pci" && r.dev_name == *d.pci_address) f.reporters.push_back(r);
      }
    }
    facts.devices.push_back(std::move(f));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void DevlinkHealthCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<DevlinkHealthFacts>();
  if (facts == nullptr) return;
  auto healthy = sink.Gauge("rdma_devlink_health_reporter_healthy",
                            "1 when the devlink health reporter of an RDMA device's PCI function is healthy, 0 in "
                            "error state (devlink health show).");
  auto errors = sink.Counter("rdma_devlink_health_reporter_errors_total",
                             "Errors a devlink health reporter has reported since the driver registered it.");
  auto recoveries = sink.Counter("rdma_devlink_health_reporter_recoveries_total",
                                 "Successful recoveries of a devlink health reporter since the driver registered it.");
  auto last_dump = sink.Gauge("rdma_devlink_health_reporter_last_dump_timestamp_seconds",
                              "Unix time of a devlink health reporter's last dump (taken at its last error when auto "
                              "dump is on); absent without a dump, or from a kernel that sends only DUMP_TS (ms since boot).");
  for (const DevlinkHealthDeviceFacts& f : facts->devices) {
    for (const DevlinkHealthReporter& r : f.reporters) {
      const std::string port = r.port_index ? std::to_string(*r.port_index) : "";
      const std::vector<Label> labels = {{"device", f.device}, {"reporter", r.name}, {"port", port}};
      if (r.state != DevlinkHealthState::kUnknown) healthy.Add(labels, r.state == DevlinkHealthState::kHealthy ? 1 : 0);
      errors.Add(labels, static_cast<double>(r.error_count));
      recoveries.Add(labels, static_cast<double>(r.recover_count));
      if (r.last_dump_realtime_ns) last_dump.Add(labels, static_cast<double>(*r.last_dump_realtime_ns) / 1e9);
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("devlink_health", DevlinkHealthCollector,
                          "devlink health reporters (fw, fw_fatal, tx, rx) of each RDMA device's PCI function");

}  // namespace rdmahd
