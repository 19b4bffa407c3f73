// Test support for the devlink decoders and readers: one DEVLINK_CMD_HEALTH_REPORTER_GET message
// as the kernel's devlink_nl_health_reporter_fill writes it, from the values a test states.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/devlink.h>

#include <cstdint>
#include <optional>

#include "tests/support/genl_test_message.h"

namespace rdmahd::testing {

inline constexpr std::uint16_t kDevlinkTestFamily = 21;  // the devlink family id the caller resolved

struct ReporterSpec {
  const char* dev = "0000:08:00.0";
  std::optional<std::uint32_t> port = std::nullopt;
  const char* name = "fw";
  std::uint8_t state = 0;
  std::uint64_t errors = 0, recovers = 0;
  std::optional<std::uint64_t> grace_ms = std::nullopt;
  std::optional<std::uint8_t> auto_recover = std::nullopt, auto_dump = std::nullopt;
  std::optional<std::uint64_t> dump_ts_ms = std::nullopt, dump_ts_ns = std::nullopt;
};

// As the kernel's devlink_nl_health_reporter_fill writes it: handle, port, then the nest.
inline void PutReporter(GenlDatagram& d, const ReporterSpec& s, std::uint32_t seq = 1) {
  nlmsghdr* nlh = d.Begin(kDevlinkTestFamily, DEVLINK_CMD_HEALTH_REPORTER_GET, seq);
  mnl_attr_put_strz(nlh, DEVLINK_ATTR_BUS_NAME, "pci");
  mnl_attr_put_strz(nlh, DEVLINK_ATTR_DEV_NAME, s.dev);
  if (s.port) mnl_attr_put_u32(nlh, DEVLINK_ATTR_PORT_INDEX, *s.port);
  nlattr* r = mnl_attr_nest_start(nlh, DEVLINK_ATTR_HEALTH_REPORTER);
  mnl_attr_put_strz(nlh, DEVLINK_ATTR_HEALTH_REPORTER_NAME, s.name);
  mnl_attr_put_u8(nlh, DEVLINK_ATTR_HEALTH_REPORTER_STATE, s.state);
  mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, s.errors);
  mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, s.recovers);
  if (s.grace_ms) mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD, *s.grace_ms);
  if (s.auto_recover) mnl_attr_put_u8(nlh, DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER, *s.auto_recover);
  if (s.dump_ts_ms) mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS, *s.dump_ts_ms);
  if (s.dump_ts_ns) mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS, *s.dump_ts_ns);
  if (s.auto_dump) mnl_attr_put_u8(nlh, DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP, *s.auto_dump);
  mnl_attr_nest_end(nlh, r);
  d.End();
}

}  // namespace rdmahd::testing
