#include "probes/rdma_cm_connection.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint8_t kAckTimeoutExponent = 14;

ProbeFailure Fail(std::string reason, const PeerEndpoint& peer, const std::string& what) {
  return ProbeFailure{std::move(reason), "peer " + peer.name + " (" + peer.address + "): " + what};
}

int ToMs(std::chrono::milliseconds d) {
  return static_cast<int>(std::clamp<long long>(d.count(), 1, 60'000));
}

// Waits for `expected` after an rdma_cm step; any other event, an error event or the deadline is
// a failure with `reason` (timeouts and error events of resolve steps alike: both mean the step
// did not complete).
ProbeOutcome<CmEvent> Expect(VerbsSession& s, rdma_cm_event_type expected, Clock::time_point deadline,
                             const std::atomic<bool>& stop, const PeerEndpoint& peer, const char* step,
                             const std::string& timeout_reason) {
  Result<std::optional<CmEvent>> ev = WaitCmEvent(s.channel.get(), deadline, &stop);
  if (!ev.ok()) return Fail("local_resources", peer, ev.error().message);
  if (!ev->has_value()) {
    if (stop.load()) return Fail("stopped", peer, std::string(step) + ": stopped");
    return Fail(timeout_reason, peer, std::string(step) + ": timed out");
  }
  CmEvent e = std::move(**ev);
  if (e.type == expected) return e;
  return Fail(timeout_reason, peer,
              std::string(step) + ": " + rdma_event_str(e.type) + " (status " + std::to_string(e.status) + ")");
}

}  // namespace

Result<std::optional<CmEvent>> WaitCmEvent(rdma_event_channel* channel, Clock::time_point deadline,
                                           const std::atomic<bool>* stop) {
  for (;;) {
    rdma_cm_event* raw = nullptr;
    if (rdma_get_cm_event(channel, &raw) == 0) {
      CmEvent e;
      e.type = raw->event;
      e.status = raw->status;
      e.id = raw->id;
      e.listen_id = raw->listen_id;
      // UD events carry their data elsewhere; probes are RC only.
      const auto& conn = raw->param.conn;
      if (conn.private_data != nullptr && conn.private_data_len > 0) {
        const auto* p = static_cast<const std::uint8_t*>(conn.private_data);
        e.private_data.assign(p, p + conn.private_data_len);
      }
      rdma_ack_cm_event(raw);
      return std::optional<CmEvent>(std::move(e));
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Error::FromErrno("rdma_get_cm_event", errno);
    if (stop != nullptr && stop->load()) return std::optional<CmEvent>();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::optional<CmEvent>();
    pollfd pfd{channel->fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 50))) < 0 && errno != EINTR)
      return Error::FromErrno("poll rdma event channel", errno);
  }
}

Result<sockaddr_storage> ParseSockAddr(const std::string& address, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(address.c_str(), service.c_str(), &hints, &res); rc != 0 || res == nullptr)
    return Error{"not an IP address: \"" + address + "\""};
  sockaddr_storage out{};
  std::memcpy(&out, res->ai_addr, std::min<std::size_t>(res->ai_addrlen, sizeof(out)));
  freeaddrinfo(res);
  return out;
}

std::string SockAddrText(const sockaddr* addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr == nullptr) return {};
  if (addr->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, buf, sizeof(buf));
  } else if (addr->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

ProbeOutcome<ProbeAccept> ConnectToResponder(VerbsSession& s, const PeerEndpoint& peer, const ProbeSource& source,
                                             const ConnectPlan& plan, const std::atomic<bool>& stop) {
  Result<sockaddr_storage> dst = ParseSockAddr(peer.address, peer.port);
  if (!dst.ok()) return Fail("address_resolution", peer, dst.error().message);
  std::optional<sockaddr_storage> src;
  if (!source.bind_address.empty()) {
    Result<sockaddr_storage> parsed = ParseSockAddr(source.bind_address, 0);
    if (!parsed.ok()) return Fail("address_resolution", peer, "source: " + parsed.error().message);
    src = *parsed;
  }
  if (Status st = CreateEventChannel(s); !st.ok()) return Fail("local_resources", peer, st.error().message);
  if (Status st = CreateCmId(s); !st.ok()) return Fail("local_resources", peer, st.error().message);
  if (source.tos.has_value()) {
    // Before address resolution, so the route and the QP's address vector carry it.
    std::uint8_t tos = *source.tos;
    if (rdma_set_option(s.id.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)) != 0)
      return Fail("local_resources", peer, Error::FromErrno("rdma_set_option TOS", errno).message);
  }

  // Step 1: address. Binding to the source address makes rdma_cm pick that netdev's device and
  // its RoCE v2 GID (the GID table entry for that IP).
  const int step_ms = ToMs(source.step_timeout);
  if (rdma_resolve_addr(s.id.get(), src ? reinterpret_cast<sockaddr*>(&*src) : nullptr,
                        reinterpret_cast<sockaddr*>(&*dst), step_ms) != 0)
    return Fail("address_resolution", peer, Error::FromErrno("rdma_resolve_addr", errno).message);
  ProbeOutcome<CmEvent> ev = Expect(s, RDMA_CM_EVENT_ADDR_RESOLVED, Clock::now() + source.step_timeout, stop, peer,
                                    "resolve address", "address_resolution");
  if (auto* f = std::get_if<ProbeFailure>(&ev)) return *f;

  // Step 2: route.
  if (rdma_resolve_route(s.id.get(), step_ms) != 0)
    return Fail("route_resolution", peer, Error::FromErrno("rdma_resolve_route", errno).message);
  ev = Expect(s, RDMA_CM_EVENT_ROUTE_RESOLVED, Clock::now() + source.step_timeout, stop, peer, "resolve route",
              "route_resolution");
  if (auto* f = std::get_if<ProbeFailure>(&ev)) return *f;

  // A peer that vanishes without a disconnect (powered off, its QP gone) must fail the probe as
  // retries exceeded within a second, whatever default the device would use (Soft-RoCE's may
  // never retransmit): 4.096 us * 2^14 = 67 ms per try.
  std::uint8_t ack_timeout = kAckTimeoutExponent;
  if (rdma_set_option(s.id.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout, sizeof(ack_timeout)) != 0)
    return Fail("local_resources", peer, Error::FromErrno("rdma_set_option ACK_TIMEOUT", errno).message);

  // Step 3: PD, MR, CQ, QP (INIT) on the device the address resolved to.
  if (Status st = CreateQueueResources(s, plan.buffer_bytes, plan.access, plan.queues); !st.ok())
    return Fail("local_resources", peer, st.error().message);
  if (plan.before_connect) {
    if (Status st = plan.before_connect(s); !st.ok()) return Fail("local_resources", peer, st.error().message);
  }

  // Step 4: connect (RTR, RTS) with the hello; the accept carries the responder's answer.
  const std::vector<std::uint8_t> hello = EncodeHello(plan.hello);
  rdma_conn_param param{};
  param.private_data = hello.data();
  param.private_data_len = static_cast<std::uint8_t>(hello.size());
  param.responder_resources = 0;  // no RDMA READ/atomics either way
  param.initiator_depth = 0;
  param.retry_count = 5;
  param.rnr_retry_count = 7;
  if (rdma_connect(s.id.get(), &param) != 0)
    return Fail("unreachable", peer, Error::FromErrno("rdma_connect", errno).message);
  Result<std::optional<CmEvent>> got = WaitCmEvent(s.channel.get(), Clock::now() + source.step_timeout, &stop);
  if (!got.ok()) return Fail("local_resources", peer, got.error().message);
  if (!got->has_value()) {
    if (stop.load()) return Fail("stopped", peer, "connect: stopped");
    return Fail("connect_timeout", peer, "connect: no answer within " + std::to_string(source.step_timeout.count()) + " ms");
  }
  const CmEvent& e = **got;
  switch (e.type) {
    case RDMA_CM_EVENT_ESTABLISHED: {
      Result<ProbeAccept> accept = DecodeAccept(e.private_data);
      if (!accept.ok()) return Fail("handshake", peer, accept.error().message);
      if (accept->kind != plan.hello.kind || accept->message_size != plan.hello.message_size)
        return Fail("handshake", peer, "accept does not match the hello (kind or message size)");
      return *accept;
    }
    case RDMA_CM_EVENT_REJECTED: {
      // A responder's reject carries why; a port nobody listens on is rejected by the peer's CM
      // with no (or foreign) private data: nothing is there to answer.
      Result<ProbeReject> reject = DecodeReject(e.private_data);
      if (reject.ok())
        return Fail("rejected", peer, "responder refused: " + std::string(RejectCodeName(reject->code)) + ": " + reject->text);
      return Fail("unreachable", peer, "connect rejected (status " + std::to_string(e.status) + "): no probe responder on port " +
                                           std::to_string(peer.port) + "?");
    }
    case RDMA_CM_EVENT_UNREACHABLE:
      return Fail("unreachable", peer, "connect: unreachable (status " + std::to_string(e.status) + ")");
    default:
      return Fail("unreachable", peer, std::string("connect: ") + rdma_event_str(e.type) + " (status " +
                                           std::to_string(e.status) + ")");
  }
}

bool ConnectionLost(VerbsSession& s, std::string* why) {
  Result<std::optional<CmEvent>> ev = WaitCmEvent(s.channel.get(), Clock::now(), nullptr);
  if (!ev.ok()) {
    *why = ev.error().message;
    return true;
  }
  if (!ev->has_value()) return false;
  *why = std::string(rdma_event_str((*ev)->type));
  return true;
}

}  // namespace rdmahd
