// The "devices" collector: each RDMA device's identity (fw_ver, board_id, hca_type, GUIDs,
// node_type) and each port's state, physical state, rate and counters, for the devices and ports
// of the collection's Topology (core/topology.h). Each port fact carries its Topology part too
// (link layer, netdev, GIDs): the port whole, as RdmaDevicesFacts and rdma_device_* /
// rdma_port_* metrics (collectors/device_metrics.h). It also reports the topology stage's
// problems as its own: discovery is the skeleton of its facts.
//
// Performance design (a fresh scrape must cost a fraction of node_exporter's):
//  - Each device's files (which attribute and counter files exist) are discovered by the topology
//    stage with the device (RdmaDeviceFiles, collectors/device_reader.h) and read here through
//    them: this collector lists and probes nothing. Each file is a HeldFile (common/node_fs.h):
//    opened once, re-read with pread at offset 0, so a steady-state scrape is one pread per
//    attribute, no open/close and no path lookup.
//  - A read failing with ENODEV/ENOENT/ENXIO while the device's own directory is gone or re-created
//    (e.g. after `rdma link delete rxe0`) means the device changed since the topology stage read
//    it: its files are discovered again for this collection and read again at once. While the
//    directory stands, such a failure costs that one value (an error of the collector): a dangling
//    symlink in counters/ must not hide the device and its DOWN port.
//  - Attributes that cannot change while the device object exists are read once (on the first
//    successful read after discovery) and their descriptor closed: board_id, hca_type, node_guid,
//    sys_image_guid, node_type (set by the driver before the device is registered). fw_ver is
//    re-read every scrape: mlx5 prints it from the live initialization segment, and a live
//    firmware activation (devlink reload action fw_activate) changes it without the device going
//    away.
//  - Counter names are listed once per device object and shared (immutable) with every snapshot; a scrape
//    stores only the values (CounterValues), so it allocates per port, not per counter file.
//  - A file whose read fails with EINVAL, EIO, EOPNOTSUPP or EPERM (a port in switch mode; a
//    restricted PF's counters, where every read makes mlx5 log an ACCESS_REG failure) is read
//    again after 1 min, doubling to 1 h, not on every collection (ReadBackoff,
//    collectors/device_reader.h). Meanwhile its value is absent, the port fact names it
//    (read_backoff), its first error is reported on every collection in the same words (so
//    logged once), and rdma_read_backoff_files / rdma_read_errors_total count it.
//  - On the live /sys, hw_counters come over RDMA netlink (collectors/rdma_nl_stats.h): one
//    request per port instead of one read per counter file, with the same values. The files name
//    the counters (a name the netlink answer lacks is read from its file; names only netlink has
//    are ignored, so the metric set does not depend on the path). A port whose netlink read fails
//    goes back to the files until the device is discovered again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "collectors/rdma_netdevs.h"
#include "collectors/rdma_nl_stats.h"
#include "common/held_files.h"
#include "core/collector.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {

class RdmaDevicesCollector : public Collector {
 public:
  // hw_counters over RDMA netlink (one request per port) when the collection's NodeFs asks the
  // kernel (the sysfs root is the live /sys), else from the files.
  RdmaDevicesCollector();
  // The same over `netlink` (tests); nullptr: always from the files.
  explicit RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink);
  // The same, with the clock read backoff is timed by (tests).
  RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink, SteadyNow now);
  ~RdmaDevicesCollector() override;

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  struct State;  // opaque: the collector's state

 private:
  std::unique_ptr<State> state_;
  std::unique_ptr<RdmaNetlinkStats> netlink_;
  SteadyNow now_;
};

}  // namespace rdmahd
