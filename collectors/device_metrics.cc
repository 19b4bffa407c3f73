#include "collectors/device_metrics.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "parsers/ib_sysfs_parse.h"

namespace rdmahd {
namespace {

// Counter files with a name of their own, after node_exporter's infiniband collector
// (node_infiniband_X -> rdma_port_X, with node_exporter's "port_" prefix dropped).
struct NamedCounter {
  std::string_view file;
  std::string_view metric;
  std::string_view help;
  double scale;  // port_*_data count 4-byte words
};
constexpr NamedCounter kNamedCounters[] = {
    {"port_rcv_data", "rdma_port_data_received_bytes_total", "Data octets received on the port (counters/port_rcv_data x 4).", 4},
    {"port_xmit_data", "rdma_port_data_transmitted_bytes_total", "Data octets transmitted on the port (counters/port_xmit_data x 4).", 4},
    {"port_rcv_packets", "rdma_port_packets_received_total", "Packets received on all VLs, including errors (counters/port_rcv_packets).", 1},
    {"port_xmit_packets", "rdma_port_packets_transmitted_total", "Packets transmitted on all VLs, including errors (counters/port_xmit_packets).", 1},
    {"port_rcv_errors", "rdma_port_errors_received_total", "Received packets containing an error (counters/port_rcv_errors).", 1},
    {"port_rcv_discards", "rdma_port_discards_received_total", "Inbound packets discarded because the port was down or congested (counters/port_rcv_discards).", 1},
    {"port_xmit_discards", "rdma_port_discards_transmitted_total", "Outbound packets discarded because the port was down or congested (counters/port_xmit_discards).", 1},
    {"port_rcv_constraint_errors", "rdma_port_constraint_errors_received_total", "Received packets discarded for constraint violations (counters/port_rcv_constraint_errors).", 1},
    {"port_xmit_constraint_errors", "rdma_port_constraint_errors_transmitted_total", "Packets not transmitted because of constraint violations (counters/port_xmit_constraint_errors).", 1},
    {"port_xmit_wait", "rdma_port_transmit_wait_total", "Ticks with data to send but none sent (counters/port_xmit_wait; 32-bit on many HCAs, saturates).", 1},
    {"link_downed", "rdma_port_link_downed_total", "Times the link failed to recover from an error and went down (counters/link_downed).", 1},
    {"link_error_recovery", "rdma_port_link_error_recovery_total", "Times the link recovered from an error (counters/link_error_recovery).", 1},
    {"symbol_error", "rdma_port_symbol_error_total", "Minor link errors on physical lanes (counters/symbol_error).", 1},
    {"local_link_integrity_errors", "rdma_port_local_link_integrity_errors_total", "Times local physical errors exceeded the threshold (counters/local_link_integrity_errors).", 1},
    {"excessive_buffer_overrun_errors", "rdma_port_excessive_buffer_overrun_errors_total", "Consecutive flow-control periods with buffer overruns (counters/excessive_buffer_overrun_errors).", 1},
    {"VL15_dropped", "rdma_port_vl15_dropped_total", "Incoming VL15 (management) packets dropped (counters/VL15_dropped).", 1},
    {"port_rcv_remote_physical_errors", "rdma_port_receive_remote_physical_errors_total", "Received packets marked bad by the remote end (counters/port_rcv_remote_physical_errors).", 1},
    {"port_rcv_switch_relay_errors", "rdma_port_receive_switch_relay_errors_total", "Received packets that could not be forwarded (counters/port_rcv_switch_relay_errors).", 1},
    {"unicast_rcv_packets", "rdma_port_unicast_packets_received_total", "Unicast packets received, including errors (counters/unicast_rcv_packets).", 1},
    {"unicast_xmit_packets", "rdma_port_unicast_packets_transmitted_total", "Unicast packets transmitted, including errors (counters/unicast_xmit_packets).", 1},
    {"multicast_rcv_packets", "rdma_port_multicast_packets_received_total", "Multicast packets received, including errors (counters/multicast_rcv_packets).", 1},
    {"multicast_xmit_packets", "rdma_port_multicast_packets_transmitted_total", "Multicast packets transmitted, including errors (counters/multicast_xmit_packets).", 1},
};
// counters_ext/ (mlx4's 64-bit extended counters; node_exporter's "legacy_" family).
constexpr NamedCounter kNamedExtCounters[] = {
    {"port_rcv_data_64", "rdma_port_legacy_data_received_bytes_total", "Data octets received, 64-bit (counters_ext/port_rcv_data_64 x 4).", 4},
    {"port_xmit_data_64", "rdma_port_legacy_data_transmitted_bytes_total", "Data octets transmitted, 64-bit (counters_ext/port_xmit_data_64 x 4).", 4},
    {"port_rcv_packets_64", "rdma_port_legacy_packets_received_total", "Packets received, 64-bit (counters_ext/port_rcv_packets_64).", 1},
    {"port_xmit_packets_64", "rdma_port_legacy_packets_transmitted_total", "Packets transmitted, 64-bit (counters_ext/port_xmit_packets_64).", 1},
    {"port_unicast_rcv_packets", "rdma_port_legacy_unicast_packets_received_total", "Unicast packets received (counters_ext/port_unicast_rcv_packets).", 1},
    {"port_unicast_xmit_packets", "rdma_port_legacy_unicast_packets_transmitted_total", "Unicast packets transmitted (counters_ext/port_unicast_xmit_packets).", 1},
    {"port_multicast_rcv_packets", "rdma_port_legacy_multicast_packets_received_total", "Multicast packets received (counters_ext/port_multicast_rcv_packets).", 1},
    {"port_multicast_xmit_packets", "rdma_port_legacy_multicast_packets_transmitted_total", "Multicast packets transmitted (counters_ext/port_multicast_xmit_packets).", 1},
};

// Where each named counter of a table sits in one CounterValues name list, and which slots have no
// name of their own. Computed once per distinct name list in a Render (ports of one driver share
// equal lists, and discovery shares equal lists by pointer).
struct NamedSlots {
  const CounterValues::Names* names = nullptr;
  std::vector<std::optional<std::size_t>> slot_of;  // per table entry
  std::vector<bool> unnamed;                        // per slot
};

template <std::size_t N>
NamedSlots MapNamedSlots(const NamedCounter (&table)[N], const CounterValues::Names& names) {
  NamedSlots m;
  m.names = &names;
  m.slot_of.resize(N);
  m.unnamed.assign(names.size(), true);
  for (std::size_t k = 0; k < N; ++k) {
    auto it = std::lower_bound(names.begin(), names.end(), table[k].file);
    if (it != names.end() && *it == table[k].file) {
      const auto slot = static_cast<std::size_t>(it - names.begin());
      m.slot_of[k] = slot;
      m.unnamed[slot] = false;
    }
  }
  return m;
}

}  // namespace

void RenderDeviceMetrics(const RdmaDevicesFacts& facts_ref, MetricSink& sink) {
  const RdmaDevicesFacts* facts = &facts_ref;

  sink.Gauge("rdma_devices_found", "RDMA devices found under /sys/class/infiniband after device filtering.")
      .Add({}, static_cast<double>(facts->devices.size()));

  auto info = sink.Family("rdma_device_info",
                  "RDMA device identity from /sys/class/infiniband/<device>; value is always 1.", MetricType::Gauge);
  for (const RdmaDeviceFacts& d : facts->devices) {
    auto label = [](const std::optional<std::string>& v) -> std::string_view {
      if (v) return *v;  // (not `v ? *v : ""`: that would view a temporary std::string)
      return {};
    };
    std::string node_type;
    if (d.node_type) {
      auto parsed = ParseSysfsEnum(*d.node_type);
      node_type = parsed ? parsed->name : *d.node_type;
    }
    info.Add({{"device", d.name},
              {"board_id", label(d.board_id)},
              {"firmware_version", label(d.fw_ver)},
              {"hca_type", label(d.hca_type)},
              {"node_guid", label(d.node_guid)},
              {"sys_image_guid", label(d.sys_image_guid)},
              {"node_type", node_type}},
             1);
  }

  // Reads in backoff (collectors/device_reader.h): only for devices where a read failed so.
  auto backoff = sink.Gauge("rdma_read_backoff_files",
                            "Files of the RDMA device whose reads fail (EINVAL, EIO, EOPNOTSUPP, EPERM) and are "
                            "retried with backoff, 1 min doubling to 1 h; their series are absent meanwhile.");
  auto read_errors = sink.Counter("rdma_read_errors_total",
                                  "Failed reads of the RDMA device's files, by errno, for the errnos that are backed "
                                  "off (each retry counts).");
  for (const RdmaDeviceFacts& d : facts->devices) {
    if (d.read_errors.empty()) continue;
    backoff.Add({{"device", d.name}}, static_cast<double>(d.read_backoff_files));
    for (const auto& [errno_name, count] : d.read_errors) {
      read_errors.Add({{"device", d.name}, {"errno", errno_name}}, static_cast<double>(count));
    }
  }

  // Port label strings, built once for all families: `device="mlx5_0",port="1"` leads every port
  // series (about 2,000 of them on 16 dual-port devices).
  struct PortRef {
    const RdmaPortFacts* facts;
    std::string port;
    MetricSink::LabelPrefix labels;
  };
  std::vector<PortRef> ports;
  for (const RdmaDeviceFacts& d : facts->devices) {
    for (const RdmaPortFacts& p : d.ports) {
      std::string port = std::to_string(p.port);
      MetricSink::LabelPrefix labels({{"device", p.device}, {"port", port}});
      ports.push_back({&p, std::move(port), std::move(labels)});
    }
  }

  auto port_info = sink.Family("rdma_port_info",
                       "RDMA port link layer and the netdev behind it (from its RoCE GIDs); value is always 1.",
                       MetricType::Gauge);
  auto state = sink.Family("rdma_port_state_id",
                   "Port state (ports/P/state): 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", MetricType::Gauge);
  auto phys = sink.Family("rdma_port_physical_state_id",
                  "Physical port state (ports/P/phys_state): 1 Sleep, 2 Polling, 3 Disabled, "
                  "4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
                  MetricType::Gauge);
  auto rate = sink.Family("rdma_port_rate_bytes_per_second", "Port signalling rate (ports/P/rate), bytes per second.",
                  MetricType::Gauge);
  auto roce_v2 = sink.Family("rdma_port_roce_v2_gids", "GIDs of type RoCE v2 in the port's GID table.",
                     MetricType::Gauge);
  for (const PortRef& r : ports) {
    const RdmaPortFacts& p = *r.facts;
    port_info.Add(r.labels,
                  {{"link_layer", p.link_layer ? std::string_view(*p.link_layer) : std::string_view()},
                   {"netdev", std::string_view(p.netdev)}},
                  1);
  }
  for (const PortRef& r : ports) {
    if (r.facts->state) state.Add(r.labels, {}, r.facts->state->id);
  }
  for (const PortRef& r : ports) {
    if (r.facts->phys_state) phys.Add(r.labels, {}, r.facts->phys_state->id);
  }
  for (const PortRef& r : ports) {
    if (r.facts->rate_bytes_per_second) {
      rate.Add(r.labels, {}, static_cast<double>(*r.facts->rate_bytes_per_second));
    }
  }
  for (const PortRef& r : ports) {
    if (r.facts->roce_v2_gid_count) roce_v2.Add(r.labels, {}, *r.facts->roce_v2_gid_count);
  }

  // Named-counter slots per distinct name list (usually one list per driver and directory).
  std::vector<NamedSlots> named_memo;
  auto slots_for = [&](const auto& table, const CounterValues& values) -> const NamedSlots& {
    const CounterValues::Names* names = values.names().get();
    for (const NamedSlots& m : named_memo) {
      if (m.names == names) return m;
    }
    return named_memo.emplace_back(MapNamedSlots(table, *names));
  };
  // Computed for every port first: named_memo must not grow (and move) while references are held.
  std::vector<std::size_t> counters_slots(ports.size()), ext_slots(ports.size());
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  auto memo_index = [&](const auto& table, const CounterValues& values) -> std::size_t {
    if (!values.names()) return kNone;
    return static_cast<std::size_t>(&slots_for(table, values) - named_memo.data());
  };
  for (std::size_t i = 0; i < ports.size(); ++i) {
    counters_slots[i] = memo_index(kNamedCounters, ports[i].facts->counters);
    ext_slots[i] = memo_index(kNamedExtCounters, ports[i].facts->counters_ext);
  }

  auto render_named = [&](const auto& table, auto member, const std::vector<std::size_t>& memo_of_port) {
    for (std::size_t k = 0; k < std::size(table); ++k) {
      const NamedCounter& c = table[k];
      auto family = sink.Family(c.metric, c.help, MetricType::Counter);
      for (std::size_t i = 0; i < ports.size(); ++i) {
        if (memo_of_port[i] == kNone) continue;
        const std::optional<std::size_t>& slot = named_memo[memo_of_port[i]].slot_of[k];
        if (!slot) continue;
        const std::optional<std::uint64_t>& v = (ports[i].facts->*member).value(*slot);
        if (v) family.Add(ports[i].labels, {}, static_cast<double>(*v) * c.scale);
      }
    }
  };
  render_named(kNamedCounters, &RdmaPortFacts::counters, counters_slots);
  render_named(kNamedExtCounters, &RdmaPortFacts::counters_ext, ext_slots);

  auto other = sink.Family("rdma_port_counters_total",
                   "Raw value of a counters/ or counters_ext/ file without a metric of its own.", MetricType::Counter);
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const RdmaPortFacts& p = *ports[i].facts;
    if (counters_slots[i] != kNone) {
      const NamedSlots& m = named_memo[counters_slots[i]];
      for (std::size_t s = 0; s < p.counters.slot_count(); ++s) {
        if (m.unnamed[s] && p.counters.value(s)) {
          other.Add(ports[i].labels, {{"counter", p.counters.name(s)}}, static_cast<double>(*p.counters.value(s)));
        }
      }
    }
    if (ext_slots[i] != kNone) {
      const NamedSlots& m = named_memo[ext_slots[i]];
      for (std::size_t s = 0; s < p.counters_ext.slot_count(); ++s) {
        if (m.unnamed[s] && p.counters_ext.value(s) && !p.counters.contains(p.counters_ext.name(s))) {
          other.Add(ports[i].labels, {{"counter", p.counters_ext.name(s)}},
                    static_cast<double>(*p.counters_ext.value(s)));
        }
      }
    }
  }
  auto hw = sink.Family("rdma_port_hw_counters_total",
                "Raw value of a ports/P/hw_counters/ file (driver-defined names).", MetricType::Counter);
  for (const PortRef& r : ports) {
    const CounterValues& values = r.facts->hw_counters;
    for (std::size_t s = 0; s < values.slot_count(); ++s) {
      if (values.value(s)) {
        hw.Add(r.labels, {{"counter", values.name(s)}}, static_cast<double>(*values.value(s)));
      }
    }
  }
}

}  // namespace rdmahd
