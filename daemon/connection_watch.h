// ConnectionWatch: the HTTP server's watch over its connections, for what libmicrohttpd cannot
// do itself (deadlines, FINs it misses, per-client limits, a reserve of free slots). Its calls
// come from libmicrohttpd's event thread; it sweeps on a thread of its own (Start to Stop).
//
// Closes connections libmicrohttpd would hold for the whole idle timeout although their request can
// never be served, so that they do not fill max_connections:
//  - the peer closed (FIN) before its request header was complete, or before its body was (a
//    Content-Length not reached, a chunk cut mid-way), or between requests. libmicrohttpd 0.9.75
//    under epoll often misses such a FIN (it arrives with the last bytes it read and no new edge
//    follows), so the socket sits in CLOSE-WAIT until the idle timeout (60 s);
//  - the header is not complete by its deadline (HttpServerOptions::header_timeout_seconds), or
//    the body by its own (body_timeout_seconds, from the header's end): libmicrohttpd's only
//    timeout is an idle one, which a client sending a byte now and then resets for ever.
// A request whose header and body are complete is left alone, FIN or not: a client that
// half-closed after its request (HTTP/1.0 style, `nc -N`) still gets its answer, and one that does
// not read it is bounded by the idle timeout.
// Mechanism: the connection-notify callback records each connection's fd; the callbacks that see a
// request line (URI log), a complete header (the access handler's first call), a complete body
// (the call that answers) and a finished request move it between phases. A thread looks every
// kSweepInterval: in a phase without a whole request in hand, recv(MSG_PEEK) returning 0 means the
// peer sent FIN with nothing left to read;
// it must have been so on two sweeps in a row, kFinConfirmDelay apart (a complete request that
// libmicrohttpd has read but not yet handed over looks the same for a moment). Such a connection, or one past its header
// or body deadline, gets shutdown(SHUT_RDWR): libmicrohttpd then sees end-of-file and error on it and
// closes it in its own thread, as for any dead peer. The fd cannot be closed and reused under the
// sweep: libmicrohttpd calls the CLOSED notification (which removes it, under mu_) before it
// closes the socket.
// It also holds the connection limits libmicrohttpd cannot: per client as ClientAddressKey counts
// them (an IPv6 /64 is one client; libmicrohttpd's own per-IP limit, not used, would count each IPv6 address), a
// connection past the client's share shut down as it opens; and a reserve of slots kept free by
// shedding, when a new connection takes one, the connection idle longest: first those that never
// sent a request line, then those between requests (kept-alive scrapers, which reconnect). So a
// flood of idle connections from many addresses, each under its share, never keeps a newcomer in
// the accept queue until the header deadline; a connection with a request in hand is never shed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/mutex.h"

struct MHD_Connection;

namespace rdmahd {

class ConnectionWatch {
 public:
  struct Limits {
    std::chrono::seconds header_timeout;
    std::chrono::seconds body_timeout;
    unsigned max_connections;
    unsigned max_per_client;
    unsigned reserved;  // slots kept free by shedding idle connections
  };
  explicit ConnectionWatch(Limits limits)
      : header_timeout_(limits.header_timeout), body_timeout_(limits.body_timeout), limits_(limits) {}
  ~ConnectionWatch() { Stop(); }

  void Start();
  void Stop();

  // The calls below come from libmicrohttpd's event thread.
  void Opened(MHD_Connection* conn);
  void Closed(MHD_Connection* conn);
  // A request line arrived: a later request on a keep-alive connection starts its header deadline.
  // (The first request's deadline runs from the connection's start.)
  void RequestLine(MHD_Connection* conn);
  // The header is complete: any body must be by its own deadline.
  void HeaderComplete(MHD_Connection* conn);
  // The whole request (body included) is in hand, or is answered without reading its body.
  void RequestComplete(MHD_Connection* conn) { SetPhase(conn, Phase::kInRequest); }
  void RequestDone(MHD_Connection* conn) { SetPhase(conn, Phase::kBetweenRequests); }

 private:
  using Clock = std::chrono::steady_clock;

  enum class Phase { kAwaitingHeader, kReadingBody, kInRequest, kBetweenRequests };
  struct Tracked {
    int fd = -1;
    Phase phase = Phase::kAwaitingHeader;
    Clock::time_point deadline;  // of the header (kAwaitingHeader) or the body (kReadingBody)
    bool fin_seen = false;  // on the previous sweep, in this phase
    bool shut = false;      // shutdown() done; libmicrohttpd will close it
    bool request_line_seen = false;  // in this phase
    Clock::time_point since;         // in this phase
    std::string key;                 // ClientAddressKey
    void Enter(Phase p) {
      phase = p;
      fin_seen = false;
      request_line_seen = false;
      since = Clock::now();
    }
  };

  // Shuts down the connection idle longest (see the class comment), other than `newcomer`.
  void ShedIdlestLocked(MHD_Connection* newcomer) REQUIRES(mu_);

  void SetPhase(MHD_Connection* conn, Phase phase);

  // True when a FIN is waiting to be confirmed by the next sweep.
  bool SweepLocked(Clock::time_point now) REQUIRES(mu_);

  const std::chrono::seconds header_timeout_;
  const std::chrono::seconds body_timeout_;
  const Limits limits_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::unordered_map<MHD_Connection*, Tracked> conns_ GUARDED_BY(mu_);
  std::unordered_map<std::string, unsigned> per_client_ GUARDED_BY(mu_);  // connections per ClientKey
  unsigned live_ GUARDED_BY(mu_) = 0;  // tracked and not shut down
  std::uint64_t shed_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool rescheduled_ GUARDED_BY(mu_) = false;  // next_sweep_ moved earlier
  Clock::time_point next_sweep_ GUARDED_BY(mu_) = Clock::time_point::max();
  std::thread sweeper_;
};

}  // namespace rdmahd
