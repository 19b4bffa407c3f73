#include "daemon/daemon.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstring>

#include "collectors/rdma_devices.h"
#include "daemon/http_server.h"
#include "daemon/logging.h"

namespace rdmahd {
namespace {

// Verdicts are also computed on this schedule, so state changes are logged (and the watchdog fed)
// even when nobody scrapes.
constexpr std::chrono::seconds kBackgroundEvaluationInterval{60};

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const Config>> LoadEffectiveConfig(const Options& options) {
  Config config;
  if (!options.config_file.empty()) {
    auto loaded = LoadConfigFile(options.config_file, RegisteredCollectorNames());
    if (!loaded.ok()) return loaded.error();
    config = std::move(loaded).value();
  }
  ApplyCollectorFlags(options, config);
  return std::shared_ptr<const Config>(std::make_shared<Config>(std::move(config)));
}

ConfigStore::ConfigStore(std::shared_ptr<const Config> initial)
    : current_(std::move(initial)), last_success_unix_(UnixNow()) {}

std::shared_ptr<const Config> ConfigStore::Get() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::uint64_t ConfigStore::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

bool ConfigStore::Apply(Result<std::shared_ptr<const Config>> loaded, std::string* error_message) {
  std::lock_guard lock(mu_);
  ++generation_;
  if (!loaded.ok()) {
    last_reload_ok_ = false;
    if (error_message) *error_message = loaded.error().message;
    return false;
  }
  current_ = std::move(loaded).value();
  last_reload_ok_ = true;
  last_success_unix_ = UnixNow();
  return true;
}

void ConfigStore::Render(MetricSink& sink) const {
  std::lock_guard lock(mu_);
  sink.Gauge("rdma_healthd_config_last_reload_successful",
             "1 if the last configuration load succeeded, 0 if it failed (the previous config is kept).")
      .Add({}, last_reload_ok_ ? 1 : 0);
  sink.Gauge("rdma_healthd_config_last_reload_success_timestamp_seconds",
             "Unix time of the last successful configuration load.")
      .Add({}, last_success_unix_);
}

Daemon::Daemon(Options options, std::shared_ptr<const Config> config)
    : options_(std::move(options)),
      config_(std::move(config)),
      engine_(NodeFs(options_.sysfs, options_.procfs, options_.dcb_dir)) {}

void Daemon::BlockDaemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A scraper hanging up mid-response must not kill the daemon.
  signal(SIGPIPE, SIG_IGN);
}

std::shared_ptr<const std::string> Daemon::Metrics() {
  std::shared_ptr<const Config> config = config_.Get();
  std::shared_ptr<const Report> report = engine_.Collect(config);
  Observe(report);
  std::lock_guard lock(exposition_mu_);
  const std::uint64_t generation = config_.generation();
  if (exposition_ && exposition_report_ == report && exposition_config_generation_ == generation) {
    return exposition_;
  }
  MetricSink& sink = exposition_sink_;
  sink.Clear();
  report->Render(engine_.collectors(), sink);
  config_.Render(sink);
  sink.Gauge("rdma_healthd_build_info", "Version of rdma-healthd; the value is always 1.")
      .Add({{"version", RDMAHD_VERSION}}, 1);
  // Copies of exposition_ are only made under exposition_mu_, so a use count of 1 here means no
  // request is still sending it: its buffer can be written over.
  if (!exposition_ || exposition_.use_count() != 1) exposition_ = std::make_shared<std::string>();
  sink.SerializeTo(*exposition_);
  exposition_report_ = std::move(report);
  exposition_config_generation_ = generation;
  return exposition_;
}

std::string Daemon::LandingPage() const {
  std::shared_ptr<const Config> config = config_.Get();
  std::string html =
      "<!DOCTYPE html>\n<html><head><title>rdma-healthd</title></head><body>\n"
      "<h1>rdma-healthd</h1>\n<p>RDMA / RoCE node health exporter, version " RDMAHD_VERSION "</p>\n"
      "<ul>\n<li><a href=\"/metrics\">/metrics</a>: metrics and check verdicts</li>\n"
      "<li><a href=\"/-/healthy\">/-/healthy</a>, <a href=\"/-/ready\">/-/ready</a></li>\n</ul>\n"
      "<p>Configuration: " + HtmlEscape(config->source) + "<br>sysfs: " + HtmlEscape(options_.sysfs) +
      "</p>\n<p>Collectors:</p>\n<ul>\n";
  for (const Collector* c : engine_.collectors()) {
    std::string name(c->Name());
    html += "<li>" + HtmlEscape(name) + (config->CollectorEnabled(name) ? "" : " (disabled)") + ": " +
            HtmlEscape(c->Description()) + "</li>\n";
  }
  html += "</ul>\n</body></html>\n";
  return html;
}

void Daemon::Reload() {
  log::Info("reloading configuration", {{"file", options_.config_file.empty() ? "<built-in defaults>"
                                                                               : options_.config_file}});
  std::string error;
  if (config_.Apply(LoadEffectiveConfig(options_), &error)) {
    log::Info("configuration reloaded", {{"source", config_.Get()->source}});
  } else {
    log::Error("configuration reload failed; keeping the running configuration", {{"error", error}});
  }
}

void Daemon::Observe(const std::shared_ptr<const Report>& report) {
  tracker_.ObserveAndLog(report);
  const auto* facts = report->snapshot.Get<RdmaDevicesFacts>();
  if (facts == nullptr) return;  // devices collector disabled or failed (logged as such)
  std::lock_guard lock(devices_mu_);
  std::size_t n = facts->devices.size();
  if (last_device_count_ == n) return;
  last_device_count_ = n;
  if (n == 0) {
    std::string where = engine_.fs().Sys("class/infiniband");
    log::Warn("no RDMA device found; still serving the other collectors' metrics",
              {{"path", where},
               {"reason", facts->class_dir_present ? "no device (or none matching devices.include/exclude)"
                                                   : "the directory does not exist: RDMA core not loaded"}});
    return;
  }
  std::string names;
  for (const auto& d : facts->devices) names += (names.empty() ? "" : ",") + d.name;
  log::Info("RDMA devices found", {{"count", std::to_string(n)}, {"devices", names}});
}

void Daemon::EvaluateInBackground() {
  std::shared_ptr<const Report> report = engine_.Collect(config_.Get());
  Observe(report);
  for (const CollectorOutcome& o : report->snapshot.outcomes) {
    for (const std::string& e : o.errors) {
      log::Debug("collector skipped a value", {{"collector", o.collector}, {"error", e}});
    }
    if (!o.success) {
      log::Warn("collector failed", {{"collector", o.collector},
                                     {"error", o.errors.empty() ? "" : o.errors.back()}});
    }
  }
}

int Daemon::Run() {
  RaiseOpenFileLimit();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  if (sfd < 0) {
    log::Error("signalfd failed", {{"error", std::strerror(errno)}});
    return 1;
  }

  // The listener first, so the port is held (and a bad address or a busy port reported) before a
  // first collection that may take seconds; /-/ready says 503 until that collection is done.
  HttpServerOptions http;
  http.listen_address = options_.listen_address;
  if (!options_.web_config_file.empty()) {
    auto web = LoadWebConfigFile(options_.web_config_file);
    if (!web.ok()) {
      log::Error("cannot load the web config", {{"error", web.error().message}});
      close(sfd);
      return 2;  // as for a bad --config.file: could not run
    }
    http.web = std::move(web).value();
  }
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[this] {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", Metrics()};
  }};
  routes["/"] = {[this] { return HttpResponse{200, "text/html; charset=utf-8", LandingPage()}; },
                 /*inline_ok=*/true};
  routes["/-/healthy"] = {[this] {
    // Healthy while the main loop is turning (it ticks at least every second).
    bool alive = SteadyNs() - last_loop_tick_ns_.load() < std::int64_t{10'000'000'000};
    return alive ? HttpResponse{200, "text/plain; charset=utf-8", "OK\n"}
                 : HttpResponse{503, "text/plain; charset=utf-8", "main loop stalled\n"};
  }, /*inline_ok=*/true};
  routes["/-/ready"] = {[this] {
    return ready_ ? HttpResponse{200, "text/plain; charset=utf-8", "OK\n"}
                  : HttpResponse{503, "text/plain; charset=utf-8", "starting\n"};
  }, /*inline_ok=*/true};
  const bool tls = http.web && http.web->tls;
  last_loop_tick_ns_ = SteadyNs();
  auto server = HttpServer::Start(std::move(http), std::move(routes));
  if (!server.ok()) {
    log::Error("cannot start the HTTP server", {{"error", server.error().message}});
    close(sfd);
    return 1;
  }
  log::Info("listening", {{"address", options_.listen_address},
                          {"port", std::to_string((*server)->port())},
                          {"tls", tls ? "on" : "off"},
                          {"max_connections", std::to_string((*server)->max_connections())},
                          {"config", config_.Get()->source}});

  // First collection before reporting ready, so the first scrape and the log show the node's state.
  EvaluateInBackground();
  ready_ = true;
  sd_notify(0, "READY=1\nSTATUS=serving metrics");

  std::uint64_t watchdog_usec = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  auto next_evaluation = std::chrono::steady_clock::now() + kBackgroundEvaluationInterval;
  int exit_code = 0;
  for (;;) {
    pollfd pfd{sfd, POLLIN, 0};
    int timeout_ms = 1000;
    if (watchdog) timeout_ms = std::min<int>(timeout_ms, static_cast<int>(watchdog_usec / 2000));
    int n = poll(&pfd, 1, timeout_ms);
    last_loop_tick_ns_ = SteadyNs();
    if (n < 0 && errno != EINTR) {
      log::Error("poll failed", {{"error", std::strerror(errno)}});
      exit_code = 1;
      break;
    }
    if (n > 0 && (pfd.revents & POLLIN)) {
      signalfd_siginfo si{};
      if (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGHUP) {
          sd_notify(0, "RELOADING=1");
          Reload();
          sd_notify(0, "READY=1");
        } else {
          log::Info("shutting down", {{"signal", strsignal(static_cast<int>(si.ssi_signo))}});
          break;
        }
      }
    }
    if (std::chrono::steady_clock::now() >= next_evaluation) {
      EvaluateInBackground();
      next_evaluation = std::chrono::steady_clock::now() + kBackgroundEvaluationInterval;
    }
    // The loop only gets here when collection returned, so the watchdog proves the workers live.
    if (watchdog) sd_notify(0, "WATCHDOG=1");
  }
  sd_notify(0, "STOPPING=1");
  ready_ = false;
  server->reset();
  close(sfd);
  return exit_code;
}

}  // namespace rdmahd
