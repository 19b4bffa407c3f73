// A GenlTransport (collectors/genl_transport.h) for collector tests: a family id (or the kernel's
// error for a family it lacks) and a handler that answers each request, which tests see decoded
// (command, header flags, attributes) so they can check what the collector asked for; and one
// collection and rendering of a collector against it.
#pragma once

#include <gtest/gtest.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>

#include <cerrno>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "collectors/genl_transport.h"
#include "common/metric_sink.h"
#include "common/netlink_parse.h"
#include "common/node_fs.h"
#include "core/collector.h"
#include "tests/support/genl_test_message.h"

namespace rdmahd::testing {

class FakeGenlTransport : public GenlTransport {
 public:
  using Datagrams = std::vector<std::vector<std::uint8_t>>;
  // `request` is the one message sent; its attrs point into the request's bytes.
  using Handler = std::function<Result<Datagrams>(const GenlMessage& request, bool dump)>;

  FakeGenlTransport(std::uint16_t family, Handler handler) : family_(family), handler_(std::move(handler)) {}

  Result<std::uint16_t> FamilyId() override {
    ++family_lookups;
    if (family_error) return Error{"generic netlink family is not registered in this kernel", family_error};
    return family_;
  }

  Result<Datagrams> Exchange(std::span<const std::uint8_t> request, bool dump) override {
    ++exchanges;
    auto messages = SplitNlMessages(request, "test request");
    if (!messages || messages->size() != 1) return Error{"the request is not one netlink message", EINVAL};
    const NlMessage& m = messages->front();
    if (m.header.nlmsg_type != family_) return Error{"the request is not of the family", EINVAL};
    auto genl = SplitGenlMessage(m, "test request");
    if (!genl) return genl.error();
    return handler_(*genl, dump);
  }

  int family_error = 0;  // set: FamilyId() fails with this errno (ENOENT: no such family)
  int family_lookups = 0;
  int exchanges = 0;

 private:
  std::uint16_t family_;
  Handler handler_;
};

// The netdev an ethtool request names (ETHTOOL_A_HEADER_DEV_NAME in its header nest
// `header_type`), "" when none; the header's ETHTOOL_A_HEADER_FLAGS appended to `flags` if given.
inline std::string EthtoolRequestNetdev(const GenlMessage& m, std::uint16_t header_type,
                                        std::vector<std::uint32_t>* flags = nullptr) {
  std::string name;
  auto attrs = SplitNlAttrs(m.attrs, "test", "request");
  EXPECT_TRUE(attrs.ok());
  if (!attrs) return name;
  for (const NlAttr& a : *attrs) {
    if (a.type != header_type) continue;
    auto header = SplitNlAttrs(a.payload, "test", "header");
    if (!header) continue;
    for (const NlAttr& h : *header) {
      if (h.type == ETHTOOL_A_HEADER_DEV_NAME) name = reinterpret_cast<const char*>(h.payload.data());
      if (h.type == ETHTOOL_A_HEADER_FLAGS && flags != nullptr) {
        flags->push_back(*NlAttrAs<std::uint32_t>(h, "test", "flags", "u32"));
      }
    }
  }
  return name;
}

// The kernel's answer of `err` (EOPNOTSUPP: a driver without the operation) to request `m`.
inline FakeGenlTransport::Datagrams KernelError(const GenlMessage& m, int err) {
  GenlDatagram d;
  d.Error(err, m.header.nlmsg_seq);
  return {d.bytes()};
}

// A topology of mlx5_0's ports 1, 2, ... each behind one of `names`.
inline Topology NetdevTopology(const std::vector<std::string>& names) {
  Topology t;
  t.class_dir_present = true;
  int port = 1;
  for (const auto& n : names) t.links.push_back({"mlx5_0", port++, n});
  return t;
}

// A tree that stands for the kernel the fake transport plays (collectors ask it as the live one).
inline const NodeFs& FakeKernelFs() {
  static const NodeFs fs = NodeFs("/nonexistent-sys", "/nonexistent-proc").AskingKernelForTest();
  return fs;
}

struct CollectedRun {
  Status status = Status::Ok();
  Snapshot snapshot;
  CollectorOutcome outcome;
  std::string text;  // the collector's exposition of its facts
};

// One collection over `topology` and the rendering of its facts.
inline CollectedRun CollectAndRender(Collector& c, const NodeFs& fs, const Topology& topology) {
  CollectedRun r;
  Config config;
  r.status = c.Collect(CollectContext{fs, config, topology}, r.snapshot, r.outcome);
  MetricSink sink;
  c.Render(r.snapshot, sink);
  r.text = sink.Serialize();
  return r;
}

}  // namespace rdmahd::testing
