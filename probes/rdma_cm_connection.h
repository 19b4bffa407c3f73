// rdma_cm connection steps for probes, each bounded: the prober's resolve_addr -> resolve_route ->
// connect (with the hello in the private data) and the event waits the responder uses too. A
// wait is a poll() on the event channel's (non-blocking) fd, in slices so a stop request is seen.
#pragma once

#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "probes/handshake.h"
#include "probes/peer_prober.h"
#include "probes/verbs_resources.h"

namespace rdmahd {

// One rdma_cm event, copied out and acknowledged (private data included), so the event's memory
// is never held across other calls.
struct CmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_ERROR;
  int status = 0;
  rdma_cm_id* id = nullptr;         // for a connect request: the new id, ours to destroy
  rdma_cm_id* listen_id = nullptr;
  std::vector<std::uint8_t> private_data;
};

// The next event on `channel`, nullopt at `deadline` or when `stop` is set (checked every 50 ms).
Result<std::optional<CmEvent>> WaitCmEvent(rdma_event_channel* channel, std::chrono::steady_clock::time_point deadline,
                                           const std::atomic<bool>* stop);

// A numeric IPv4/IPv6 address (no DNS here: the caller resolved names) with a port.
Result<sockaddr_storage> ParseSockAddr(const std::string& address, std::uint16_t port);
// "a.b.c.d" or "v6" of a sockaddr (empty for other families).
std::string SockAddrText(const sockaddr* addr);

struct ConnectPlan {
  ProbeHello hello;
  std::size_t buffer_bytes = 0;
  int access = IBV_ACCESS_LOCAL_WRITE;
  QueueSizes queues;
  // Called after the QP exists and before connect (post the first receives here).
  std::function<Status(VerbsSession&)> before_connect;
};

// The prober's side: creates the session's channel, id and queue resources, connects to the
// peer's responder and returns the responder's accept message. Every failure is a ProbeFailure
// with a bounded reason ("address_resolution", "route_resolution", "connect_timeout", "rejected",
// "unreachable", "handshake", "local_resources", "stopped").
ProbeOutcome<ProbeAccept> ConnectToResponder(VerbsSession& s, const PeerEndpoint& peer, const ProbeSource& source,
                                             const ConnectPlan& plan, const std::atomic<bool>& stop);

// During an exchange: true (and `why` set) when the peer disconnected or the connection broke,
// read from the session's event channel without waiting.
bool ConnectionLost(VerbsSession& s, std::string* why);

}  // namespace rdmahd
