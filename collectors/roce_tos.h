// The "roce_tos" collector: the default ToS of every Ethernet RDMA port (facts/roce_tos_facts.h),
// from rdma_cm's configfs and mlx5's tc/N/traffic_class.
//  - configfs (default_roce_tos) is looked up and read whole on every collection: its entries come
//    and go with mkdir/rmdir, at any time.
//  - tc/N/traffic_class is a sysfs attribute of the device (MLNX_OFED's mlx5): held open and re-read
//    with one pread on every collection (an operator may write it at any time). A port without one
//    (an inbox driver, the benchmark's tree) is looked up again after kNetdevRelistInterval, or
//    when the device is re-created, so such a port costs no failed open per collection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "collectors/rdma_netdevs.h"
#include "common/held_files.h"
#include "common/layout_cache.h"
#include "core/collector.h"

namespace rdmahd {

struct TopologyDevice;

class RoceTosCollector : public Collector {
 public:
  explicit RoceTosCollector(SteadyNow now = std::chrono::steady_clock::now);
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  // tc/N/traffic_class of one port: held while it exists, else absent since `absent_at`.
  struct TcFile {
    std::string device;
    std::uint64_t generation = 0;  // of the device it was opened for
    std::optional<HeldFile> file;
    std::chrono::steady_clock::time_point absent_at{};
    std::size_t HeldDescriptors() const { return CountOpen(file); }
    void CloseDescriptors() { CloseHeld(file); }
  };
  // The port's traffic_class text, or its read error (ENOENT while it is absent).
  Result<std::string_view> ReadTrafficClass(const NodeFs& fs, const TopologyDevice& d, std::uint32_t port,
                                            std::chrono::steady_clock::time_point now);

  SteadyNow now_;
  std::string read_buf_;
  LayoutCache<TcFile> tc_files_;  // by "device/port"
};

}  // namespace rdmahd
