// HttpServer: the daemon's few HTTP endpoints over libmicrohttpd.
//
// Threading: one event thread (epoll) owns every connection, so an idle, slowloris or slow-reading
// client costs a socket and a little memory, never a thread. Inline routes (cheap: /-/healthy,
// /-/ready) are answered on the event thread; every other route (/metrics, /, the JSON API: each
// runs a collection) is handed to a small worker pool while its connection is suspended, so a
// slow handler never holds up the event thread and cheap endpoints never queue behind it. In the
// pool /metrics goes first and pages (/, /api/*) take at most page_workers threads, so a scrape
// never waits behind them; a request whose client left is dropped (RouteKind, HttpRoute).
// Handlers therefore run on either thread and must be thread-safe; inline ones must not block.
//
// Basic auth (web config basic_auth_users): every route asks for a user and password. Credentials
// that verified before (BasicAuth's cache) are checked on the event thread and the request goes on
// as above, never waiting for a bcrypt. Others are checked on a PasswordCheckQueue of their own
// (HttpServerOptions::password_checks) while the connection is suspended; the route's handler then
// runs on the worker pool. When the client address (an IPv6 one by its /64) already has
// `per_client` checks, the answer is 429 at once; when `capacity` checks are waiting or running,
// 503 at once; both with Retry-After. So a flood of wrong passwords costs at most the queue's
// thread, and delays neither remembered credentials nor, beyond a turn each, other clients.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "daemon/basic_auth.h"
#include "daemon/shared_body.h"
#include "daemon/web_config.h"

namespace rdmahd {

// The Content-Security-Policy header of every answer: the status page's own policy (its <meta>
// tag: no script, no external anything, inline styles) plus frame-ancestors 'none', which only a
// header can carry (no page of the daemon may be framed). Every answer also says
// X-Content-Type-Options: nosniff.
inline constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'";

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string type, std::string text)
      : status(status_code), content_type(std::move(type)), body(std::move(text)) {}
  HttpResponse(int status_code, std::string type, std::shared_ptr<SharedBody> shared)
      : status(status_code), content_type(std::move(type)), shared_body(std::move(shared)) {}

  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // When not 0, a Retry-After header with this many seconds (429, 503).
  unsigned retry_after_seconds = 0;
  // When set, sent instead of `body`, in the encoding the request accepts.
  std::shared_ptr<SharedBody> shared_body;
  // When not empty, an ETag header with this entity tag (WeakEtag, etag.h), and Cache-Control: no-cache
  // instead of no-store (unless basic auth is on: then no-store always); a 200 whose tag an If-None-Match of the request names is sent as a 304
  // without a body (RFC 9110, 13.1.2).
  std::string etag;
  // Nothing is sent: the connection is closed (the client left; see HttpRequest::ClientLeft).
  bool client_left = false;

  static HttpResponse ClientLeft() {
    HttpResponse r;
    r.client_left = true;
    return r;
  }
};

// Query arguments the server takes at most: more, or a longer name or value, is a 400 before any
// handler runs ("bad request: ..."), so a handler never sees an unbounded list or string.
inline constexpr std::size_t kMaxQueryArguments = 16;
inline constexpr std::size_t kMaxQueryNameBytes = 64;
inline constexpr std::size_t kMaxQueryValueBytes = 1024;

// One query argument, percent-decoded (libmicrohttpd's GET arguments); `value` is empty for a bare
// name ("?x"). Raw request bytes: a handler that names one in an answer escapes it.
struct QueryArgument {
  std::string name;
  std::string value;
};

// What a handler may need to know of the request.
struct HttpRequest {
  // The body may go out gzip-compressed (Accept-Encoding).
  bool accepts_gzip = false;
  // Whether the client has left (see HttpRoute::page for what counts as left on which route): a
  // handler that works in stages asks between them and, when it has, returns
  // HttpResponse::ClientLeft() instead of going on. Unset (inline routes, tests): never left.
  std::function<bool()> client_left;
  // The query string's arguments in request order (at most kMaxQueryArguments). Routes are
  // matched on the path alone; a handler that takes no argument ignores them (a Prometheus scrape
  // config's `params` reach /metrics).
  std::vector<QueryArgument> query;
  // When the request was complete (before it waited for a worker); default: unknown (tests).
  std::chrono::steady_clock::time_point arrived{};

  bool ClientLeft() const { return client_left && client_left(); }
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

// How a route is run (HttpRoute::kind).
enum class RouteKind {
  // On the worker pool, ahead of every kPage request (/metrics: a scraper's deadline is short).
  kScrape,
  // On the event thread. Only for handlers that return in microseconds and never wait on a lock a
  // collection may hold (/-/healthy, /-/ready).
  kInline,
  // On the worker pool, at most HttpServerOptions::page_workers at once (/ and /api/*: big renders
  // for people and tools), so a kScrape request always finds a thread; a request whose client has
  // sent its FIN is dropped unanswered (see "Clients that left" below).
  kPage,
};

// Clients that left. A request handed to the pool is looked at again (a non-blocking MSG_PEEK on
// its socket) when a worker takes it, before its answer is encoded, and whenever its handler asks
// (HttpRequest::ClientLeft, between collecting, rendering and serializing). A reset connection
// (RST) has left, whatever the route: its answer could never be delivered. A FIN says the client
// sends no more: on a kPage route it is taken as the client gone (as Go's net/http cancels a
// request's context on EOF), and the request is dropped without collecting or rendering; a
// /metrics request with its FIN is still answered (an HTTP/1.0 client that half-closes, `nc -N`,
// gets its scrape), as scrapes of one collection share one exposition and cost little.
struct HttpRoute {
  HttpRoute() = default;
  HttpRoute(HttpHandler h, RouteKind route_kind = RouteKind::kScrape) : handler(std::move(h)), kind(route_kind) {}
  HttpRoute(HttpHandler h, bool inline_answer)
      : HttpRoute(std::move(h), inline_answer ? RouteKind::kInline : RouteKind::kScrape) {}
  // A handler that does not look at the request.
  HttpRoute(std::function<HttpResponse()> h, RouteKind route_kind = RouteKind::kScrape)
      : handler([h = std::move(h)](const HttpRequest&) { return h(); }), kind(route_kind) {}
  HttpRoute(std::function<HttpResponse()> h, bool inline_answer)
      : HttpRoute(std::move(h), inline_answer ? RouteKind::kInline : RouteKind::kScrape) {}

  HttpHandler handler;
  RouteKind kind = RouteKind::kScrape;
};

// Connections held at once, whatever their state. Past it new connections wait in the kernel's
// accept queue. Lowered to fit when the open-file limit is smaller (see Start).
inline constexpr unsigned kDefaultMaxConnections = 1024;
// A connection with no byte moving either way for this long is closed (dead peers, idle keep-alive).
inline constexpr unsigned kDefaultIdleTimeoutSeconds = 60;
// A request's header must be complete this long after the connection opened (first request) or
// after its request line arrived (later requests on a keep-alive connection), however slowly its
// bytes trickle in; past it the connection is closed (slowloris). Go's ReadHeaderTimeout.
inline constexpr unsigned kDefaultHeaderTimeoutSeconds = 10;
// A request's body must be complete this long after its header was; past it the connection is
// closed. No route takes a body (one is read and dropped before the 405), so this only bounds a
// client that trickles one, or that stopped sending without closing.
inline constexpr unsigned kDefaultBodyTimeoutSeconds = 10;
// Connections one client (ClientAddressKey, client_address.h: an IPv4 address, an IPv6 /64) may hold, as a fraction
// of max_connections (1/4: one client cannot take every slot, several others still get in).
inline constexpr unsigned kPerClientShareDivisor = 4;

// Slots kept free, as a fraction of max_connections (at least 2): when a new connection takes one
// of them, the connection idle longest (no request line yet, then between requests) is shed, so a
// flood of idle connections from many addresses never keeps a scraper or a health check out.
inline constexpr unsigned kReservedShareDivisor = 16;

struct HttpServerOptions {
  std::string listen_address = ":9872";  // see ParseListenAddress
  std::optional<WebConfig> web;          // TLS and basic auth (--web.config.file)
  int workers = 2;                       // threads for routes that are not RouteKind::kInline
  // kPage requests running at once; 0: workers - 1 (at least 1), so a scrape always has a thread.
  int page_workers = 0;
  unsigned max_connections = kDefaultMaxConnections;
  unsigned idle_timeout_seconds = kDefaultIdleTimeoutSeconds;
  unsigned header_timeout_seconds = kDefaultHeaderTimeoutSeconds;
  unsigned body_timeout_seconds = kDefaultBodyTimeoutSeconds;
  // 0: max_connections / kPerClientShareDivisor (at least 4, at most max_connections).
  unsigned max_connections_per_client = 0;
  // bcrypt of credentials not verified before (see "Basic auth" at the top of this file).
  PasswordCheckLimits password_checks;
};

class HttpServer {
 public:
  // Binds the listening socket and starts serving `routes` (exact paths; the query string goes to
  // the handler as HttpRequest::query) to GET and HEAD; other paths get 404, other methods 405. Bodies go out gzip-compressed when the request allows it.
  // Request framing a proxy could read differently is answered 400 and the connection closed,
  // before any body is read: whitespace before a field name's colon (RFC 9112, 5.1), more than one
  // Content-Length even if equal (6.3), Content-Length with Transfer-Encoding (6.1: refused, the
  // strict option), a Transfer-Encoding other than "chunked", a NUL (%00) in the target (3.2).
  // Every answer carries X-Content-Type-Options: nosniff and kContentSecurityPolicy; with basic
  // auth, Cache-Control: no-store (ETag or not).
  // Errors name the address ("address 127.0.0.1:9872 is already in use") and, when the start
  // fails for want of file descriptors, the open-file limit.
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                   std::map<std::string, HttpRoute> routes);
  // In-flight handlers finish; queued ones, and password checks waiting or running, are answered
  // 503. A running bcrypt is not waited for (see PasswordCheckQueue::Stop).
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  unsigned max_connections() const;
  unsigned max_connections_per_client() const;
  // Requests dropped unanswered since the start because their client had left.
  std::uint64_t requests_dropped_client_left() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmahd
