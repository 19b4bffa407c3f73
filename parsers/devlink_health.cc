#include "parsers/devlink_health.h"

#include <linux/devlink.h>

#include <cstring>
#include <string_view>

namespace rdmahd {
namespace {

constexpr std::string_view kProtocol = "devlink netlink HEALTH_REPORTER_GET";

Error Malformed(const std::string& what) { return NlMalformed(kProtocol, what); }

// A NUL-terminated (or not) identifier of printable ASCII.
Result<std::string> Name(const NlAttr& a, std::string_view what) {
  const char* p = reinterpret_cast<const char*>(a.payload.data());
  const std::size_t n = strnlen(p, a.payload.size());
  if (n > kDevlinkMaxNameBytes) {
    return Malformed(std::string(what) + " of " + std::to_string(n) + " bytes, at most " +
                     std::to_string(kDevlinkMaxNameBytes));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c < 0x21 || c >= 0x7F) return Malformed(std::string(what) + " has a byte outside printable ASCII");
  }
  return std::string(p, n);
}

template <typename T>
Result<T> Int(const NlAttr& a, std::string_view what, std::string_view type) {
  return NlAttrAs<T>(a, kProtocol, what, type);
}

Status ParseReporterNest(std::span<const std::uint8_t> nest, DevlinkHealthReporter& r) {
  auto attrs = SplitNlAttrs(nest, kProtocol, "DEVLINK_ATTR_HEALTH_REPORTER");
  if (!attrs) return attrs.error();
  bool have_name = false, have_state = false, have_errors = false, have_recovers = false;
  for (const NlAttr& a : *attrs) {
    switch (a.type) {
      case DEVLINK_ATTR_HEALTH_REPORTER_NAME: {
        auto v = Name(a, "DEVLINK_ATTR_HEALTH_REPORTER_NAME");
        if (!v) return v.error();
        r.name = std::move(*v);
        have_name = !r.name.empty();
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_STATE: {
        auto v = Int<std::uint8_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_STATE", "a u8");
        if (!v) return v.error();
        r.raw_state = *v;
        r.state = *v == 0 ? DevlinkHealthState::kHealthy
                          : (*v == 1 ? DevlinkHealthState::kError : DevlinkHealthState::kUnknown);
        have_state = true;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT: {
        auto v = Int<std::uint64_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT", "a u64");
        if (!v) return v.error();
        r.error_count = *v;
        have_errors = true;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT: {
        auto v = Int<std::uint64_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT", "a u64");
        if (!v) return v.error();
        r.recover_count = *v;
        have_recovers = true;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD: {
        auto v = Int<std::uint64_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD", "a u64");
        if (!v) return v.error();
        r.graceful_period_ms = *v;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER: {
        auto v = Int<std::uint8_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER", "a u8");
        if (!v) return v.error();
        r.auto_recover = *v != 0;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP: {
        auto v = Int<std::uint8_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP", "a u8");
        if (!v) return v.error();
        r.auto_dump = *v != 0;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS: {
        auto v = Int<std::uint64_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS", "a u64");
        if (!v) return v.error();
        r.last_dump_ms_since_boot = *v;
        break;
      }
      case DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS: {
        auto v = Int<std::uint64_t>(a, "DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS", "a u64");
        if (!v) return v.error();
        r.last_dump_realtime_ns = *v;
        break;
      }
      default:
        break;
    }
  }
  if (!have_name) return Malformed("a reporter without a name");
  if (!have_state || !have_errors || !have_recovers) {
    return Malformed("reporter \"" + r.name + "\" without its state, error count or recover count");
  }
  return Status::Ok();
}

}  // namespace

const char* DevlinkHealthStateName(DevlinkHealthState state) {
  switch (state) {
    case DevlinkHealthState::kHealthy: return "healthy";
    case DevlinkHealthState::kError: return "error";
    case DevlinkHealthState::kUnknown: return "unknown";
  }
  return "unknown";
}

Result<DevlinkHealthReporter> ParseDevlinkHealthReporter(const GenlMessage& message) {
  auto attrs = SplitNlAttrs(message.attrs, kProtocol, "DEVLINK_CMD_HEALTH_REPORTER_GET");
  if (!attrs) return attrs.error();
  DevlinkHealthReporter r;
  bool have_reporter = false;
  for (const NlAttr& a : *attrs) {
    if (a.type == DEVLINK_ATTR_BUS_NAME) {
      auto v = Name(a, "DEVLINK_ATTR_BUS_NAME");
      if (!v) return v.error();
      r.bus_name = std::move(*v);
    } else if (a.type == DEVLINK_ATTR_DEV_NAME) {
      auto v = Name(a, "DEVLINK_ATTR_DEV_NAME");
      if (!v) return v.error();
      r.dev_name = std::move(*v);
    } else if (a.type == DEVLINK_ATTR_PORT_INDEX) {
      auto v = Int<std::uint32_t>(a, "DEVLINK_ATTR_PORT_INDEX", "a u32");
      if (!v) return v.error();
      r.port_index = *v;
    } else if (a.type == DEVLINK_ATTR_HEALTH_REPORTER) {
      if (have_reporter) return Malformed("two DEVLINK_ATTR_HEALTH_REPORTER nests in one message");
      have_reporter = true;
      if (Status st = ParseReporterNest(a.payload, r); !st) return st.error();
    }
  }
  if (r.bus_name.empty() || r.dev_name.empty()) return Malformed("a reporter without its bus or device name");
  if (!have_reporter) return Malformed("no DEVLINK_ATTR_HEALTH_REPORTER nest");
  return r;
}

Result<DevlinkHealthReporter> ParseDevlinkHealthReporterReply(std::span<const std::uint8_t> datagram,
                                                              std::uint16_t family_id, std::uint32_t expected_seq) {
  auto reply = GenlReply(datagram, family_id, DEVLINK_CMD_HEALTH_REPORTER_GET, expected_seq, kProtocol);
  if (!reply) return reply.error();
  return ParseDevlinkHealthReporter(*reply);
}

Result<bool> ParseDevlinkHealthReporterDump(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                                            std::vector<DevlinkHealthReporter>& out) {
  std::vector<GenlMessage> messages;
  auto done = GenlDumpMessages(datagram, family_id, DEVLINK_CMD_HEALTH_REPORTER_GET, kProtocol, messages);
  if (!done) return done.error();
  for (const GenlMessage& m : messages) {
    if (out.size() >= kDevlinkMaxReporters) {
      return Malformed("more than " + std::to_string(kDevlinkMaxReporters) + " reporters in one dump");
    }
    auto r = ParseDevlinkHealthReporter(m);
    if (!r) return r.error();
    out.push_back(std::move(*r));
  }
  return *done;
}

}  // namespace rdmahd
