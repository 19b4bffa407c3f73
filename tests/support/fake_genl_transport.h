// A GenlTransport (collectors/genl_transport.h) for collector tests: a family id (or the kernel's
// error for a family it lacks) and a handler that answers each request, which tests see decoded
// (command, header flags, attributes) so they can check what the collector asked for; and one
// collection and rendering of a collector against it.
#pragma once

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
