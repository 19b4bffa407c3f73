#include "daemon/http_server.h"

#include <civetweb.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "common/parse.h"

namespace rdmahd {
namespace {

void Reply(mg_connection* conn, const HttpResponse& r, bool head) {
  const std::string& body = r.shared_body ? *r.shared_body : r.body;
  const char* reason = mg_get_response_code_text(conn, r.status);
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n\r\n",
            r.status, reason, r.content_type.c_str(), body.size());
  if (!head && !body.empty()) mg_write(conn, body.data(), body.size());
}

void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mg_init_library(0); });
}

}  // namespace

Result<std::string> HttpServer::ToCivetwebPorts(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos) {
    return Error{"--web.listen-address \"" + addr + "\": want [HOST]:PORT, e.g. :9872 or 127.0.0.1:9872"};
  }
  std::string host = addr.substr(0, colon);
  std::string port = addr.substr(colon + 1);
  auto p = ParseU64(port);
  if (!p || *p > 65535) {
    return Error{"--web.listen-address \"" + addr + "\": port \"" + port + "\" is not a number from 0 to 65535"};
  }
  if (host.empty() || host == "0.0.0.0") return port;
  if (host.front() == '[' && host.back() == ']') return host + ":" + port;  // IPv6
  if (host == "localhost") host = "127.0.0.1";
  return host + ":" + port;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen_address,
                                                      std::map<std::string, HttpHandler> routes,
                                                      int threads) {
  auto ports = ToCivetwebPorts(listen_address);
  if (!ports.ok()) return ports.error();
  InitLibraryOnce();

  std::unique_ptr<HttpServer> server(new HttpServer());
  server->routes_ = std::move(routes);
  std::string nthreads = std::to_string(threads);
  const char* options[] = {"listening_ports", ports->c_str(), "num_threads", nthreads.c_str(),
                           "request_timeout_ms", "10000", "enable_keep_alive", "yes",
                           nullptr};
  mg_callbacks callbacks{};
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = nullptr;
  init.configuration_options = options;
  char errtext[256] = {0};
  unsigned errcode = 0;
  mg_error_data err{};
  err.code = &errcode;
  err.text = errtext;
  err.text_buffer_size = sizeof errtext;
  server->ctx_ = mg_start2(&init, &err);
  if (server->ctx_ == nullptr) {
    return Error{"cannot listen on " + listen_address + ": " +
                 (errtext[0] ? std::string(errtext) : std::string("civetweb failed to start"))};
  }
  mg_set_request_handler(server->ctx_, "/", &HttpServer::Dispatch, server.get());
  std::vector<mg_server_port> bound(4);
  int n = mg_get_server_ports(server->ctx_, static_cast<int>(bound.size()), bound.data());
  if (n > 0) server->port_ = bound[0].port;
  return server;
}

HttpServer::~HttpServer() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

int HttpServer::Dispatch(mg_connection* conn, void* self_ptr) {
  auto* self = static_cast<HttpServer*>(self_ptr);
  const mg_request_info* info = mg_get_request_info(conn);
  bool head = std::strcmp(info->request_method, "HEAD") == 0;
  if (!head && std::strcmp(info->request_method, "GET") != 0) {
    Reply(conn, {405, "text/plain; charset=utf-8", "method not allowed\n"}, false);
    return 405;
  }
  auto it = self->routes_.find(info->local_uri);
  if (it == self->routes_.end()) {
    Reply(conn, {404, "text/plain; charset=utf-8", "not found\n"}, head);
    return 404;
  }
  HttpResponse r;
  try {
    r = it->second();
  } catch (const std::exception& e) {
    r = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
  }
  Reply(conn, r, head);
  return r.status;
}

}  // namespace rdmahd
