// ProbeResponder: the daemon's side of peer probes. A listener thread accepts rdma_cm connect
// requests on responder.port, admits only peers in responder.allow, decodes the hello
// (probes/handshake.h) and checks it against the caps (sessions, message size, registered memory:
// probes/responder_admission.h); anything refused gets a reject whose private data says why. An admitted peer gets a session
// thread that answers the ping-pong (latency) or exposes a buffer for RDMA WRITEs (bandwidth),
// bounded in time whatever the peer does (slow, silent, gone, garbage), and tears everything down.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "config/config.h"

namespace rdmahd {

class ProbeResponder {
 public:
  // Binds and listens (errors: bad listen address, port in use, no RDMA device) and starts the
  // listener thread.
  static Result<std::unique_ptr<ProbeResponder>> Start(const PeerResponderPolicy& policy);
  // Stops accepting, ends every session (each within ~100 ms) and joins every thread.
  ~ProbeResponder();
  ProbeResponder(const ProbeResponder&) = delete;
  ProbeResponder& operator=(const ProbeResponder&) = delete;

  // True when `next` can be applied in place (same address and port): allow list and caps change
  // for new sessions; running sessions keep their leases.
  bool CanApplyInPlace(const PeerResponderPolicy& next) const;
  Status Apply(const PeerResponderPolicy& next);

  std::uint64_t sessions_accepted() const;
  std::uint32_t active_sessions() const;  // holding a lease (set up, running or tearing down)
  std::uint64_t sessions_rejected() const;

  struct Impl;

 private:
  explicit ProbeResponder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmahd
