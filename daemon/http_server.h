// HttpServer: a small wrapper over civetweb for the daemon's few endpoints. Handlers run on
// civetweb's worker threads, so they must be thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "common/result.h"

struct mg_context;
struct mg_connection;

namespace rdmahd {

struct HttpResponse {
  HttpResponse() = default;
  HttpResponse(int status_code, std::string type, std::string text)
      : status(status_code), content_type(std::move(type)), body(std::move(text)) {}
  HttpResponse(int status_code, std::string type, std::shared_ptr<const std::string> shared)
      : status(status_code), content_type(std::move(type)), shared_body(std::move(shared)) {}

  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // When set, sent instead of `body`: a body shared with other requests (the /metrics text).
  std::shared_ptr<const std::string> shared_body;
};

using HttpHandler = std::function<HttpResponse()>;

class HttpServer {
 public:
  // Listens on `listen_address` ("[HOST]:PORT", ":PORT" = all interfaces, PORT 0 = any free port)
  // and serves `routes` (exact paths) to GET and HEAD; other paths get 404, other methods 405.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen_address,
                                                   std::map<std::string, HttpHandler> routes,
                                                   int threads = 4);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

  // Exposed for tests: ":9872" -> "9872", "127.0.0.1:9872" -> same, "[::1]:9872" -> "[::1]:9872".
  static Result<std::string> ToCivetwebPorts(const std::string& listen_address);

 private:
  HttpServer() = default;
  static int Dispatch(mg_connection* conn, void* self);

  mg_context* ctx_ = nullptr;
  int port_ = 0;
  std::map<std::string, HttpHandler> routes_;
};

}  // namespace rdmahd
