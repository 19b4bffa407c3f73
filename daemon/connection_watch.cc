#include "daemon/connection_watch.h"

#include <microhttpd.h>
#include <sys/socket.h>

#include <utility>

#include "common/logging.h"
#include "common/thread_name.h"
#include "daemon/client_address.h"

namespace rdmahd {
namespace {

// How often ConnectionWatch looks at the connections (see there), and how soon it looks after a
// new connection or to confirm a FIN it saw.
constexpr std::chrono::milliseconds kSweepInterval{200};
constexpr std::chrono::milliseconds kFinConfirmDelay{30};

}  // namespace

void ConnectionWatch::Start() {
  sweeper_ = std::thread([this] {
    NameThisThread("http-sweep");
    MutexLock lock(mu_);
    next_sweep_ = Clock::now() + kSweepInterval;
    while (!stopping_) {
      // Until the next sweep is due, or an earlier one is asked for (or a stop).
      while (!stopping_ && !rescheduled_) {
        if (cv_.wait_until(lock, next_sweep_) == std::cv_status::timeout) break;
      }
      if (stopping_ || rescheduled_) {
        rescheduled_ = false;  // woken for an earlier sweep (or to stop)
        continue;
      }
      auto now = Clock::now();
      next_sweep_ = now + (SweepLocked(now) ? kFinConfirmDelay : kSweepInterval);
    }
  });
}

void ConnectionWatch::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (sweeper_.joinable()) sweeper_.join();
}

void ConnectionWatch::Opened(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (info == nullptr) return;
  std::string key = ClientKey(conn);
  MutexLock lock(mu_);
  auto now = Clock::now();
  Tracked& t = conns_[conn];
  t = Tracked{};
  t.fd = info->connect_fd;
  t.Enter(Phase::kAwaitingHeader);
  t.deadline = now + header_timeout_;
  if (++per_client_[key] > limits_.max_per_client) {
    ::shutdown(t.fd, SHUT_RDWR);  // libmicrohttpd sees the error and closes it
    t.shut = true;
    log::Debug("HTTP connection refused: the client holds its share of the slots",
               {{"client", ClientAddressText(conn)}, {"max_per_client", std::to_string(limits_.max_per_client)}});
  } else if (++live_ + limits_.reserved > limits_.max_connections) {
    ShedIdlestLocked(conn);
  }
  t.key = std::move(key);
  // A burst of connections that close half-way must not wait a whole interval to be seen.
  if (now + kFinConfirmDelay < next_sweep_) {
    next_sweep_ = now + kFinConfirmDelay;
    rescheduled_ = true;
    cv_.notify_one();
  }
}

void ConnectionWatch::Closed(MHD_Connection* conn) {
  MutexLock lock(mu_);
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  if (!it->second.shut) --live_;
  if (auto c = per_client_.find(it->second.key); c != per_client_.end() && --c->second == 0) per_client_.erase(c);
  conns_.erase(it);
}

void ConnectionWatch::RequestLine(MHD_Connection* conn) {
  MutexLock lock(mu_);
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  if (it->second.phase == Phase::kBetweenRequests) {
    it->second.Enter(Phase::kAwaitingHeader);
    it->second.deadline = Clock::now() + header_timeout_;
  }
  it->second.request_line_seen = true;
}

void ConnectionWatch::HeaderComplete(MHD_Connection* conn) {
  MutexLock lock(mu_);
  if (auto it = conns_.find(conn); it != conns_.end()) {
    it->second.Enter(Phase::kReadingBody);
    it->second.deadline = Clock::now() + body_timeout_;
  }
}

// Shuts down the connection idle longest (see the class comment), other than `newcomer`.
void ConnectionWatch::ShedIdlestLocked(MHD_Connection* newcomer) {
  Tracked* idlest = nullptr;
  int idlest_rank = 2;
  for (auto& [conn, t] : conns_) {
    if (t.shut || conn == newcomer) continue;
    int rank = t.phase == Phase::kAwaitingHeader && !t.request_line_seen ? 0
               : t.phase == Phase::kBetweenRequests                    ? 1
                                                                       : 2;
    if (rank < idlest_rank || (rank == idlest_rank && idlest != nullptr && t.since < idlest->since)) {
      idlest = &t;
      idlest_rank = rank;
    }
  }
  if (idlest == nullptr) return;  // every other connection has a request in hand
  ::shutdown(idlest->fd, SHUT_RDWR);
  idlest->shut = true;
  --live_;
  ++shed_;
  log::Debug("HTTP idle connection shed for a new one", {{"shed_so_far", std::to_string(shed_)}});
}

void ConnectionWatch::SetPhase(MHD_Connection* conn, Phase phase) {
  MutexLock lock(mu_);
  if (auto it = conns_.find(conn); it != conns_.end()) it->second.Enter(phase);
}

// True when a FIN is waiting to be confirmed by the next sweep.
bool ConnectionWatch::SweepLocked(Clock::time_point now) {
  unsigned peer_closed = 0, header_late = 0, body_late = 0;
  bool to_confirm = false;
  for (auto& [conn, t] : conns_) {
    if (t.shut || t.phase == Phase::kInRequest) continue;
    char byte;
    bool fin = ::recv(t.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    bool late = (t.phase == Phase::kAwaitingHeader || t.phase == Phase::kReadingBody) && now >= t.deadline;
    if (fin && !t.fin_seen && !late) {
      t.fin_seen = true;
      to_confirm = true;
      continue;
    }
    t.fin_seen = fin;
    if (!fin && !late) continue;
    ::shutdown(t.fd, SHUT_RDWR);
    t.shut = true;
    --live_;
    ++(fin ? peer_closed : t.phase == Phase::kAwaitingHeader ? header_late : body_late);
  }
  if (peer_closed + header_late + body_late > 0) {
    log::Debug("HTTP connections closed", {{"peer_closed_mid_request", std::to_string(peer_closed)},
                                           {"header_timeout", std::to_string(header_late)},
                                           {"body_timeout", std::to_string(body_late)}});
  }
  return to_confirm;
}

}  // namespace rdmahd
