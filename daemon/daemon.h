// Daemon: the long-running mode. Owns the config (swapped whole on SIGHUP), the collection engine,
// the HTTP endpoints and the main loop (signalfd + sd_notify watchdog + periodic evaluation).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "core/collection_engine.h"
#include "common/metric_sink.h"
#include "config/config.h"
#include "daemon/collector_error_log.h"
#include "daemon/http_server.h"
#include "daemon/options.h"
#include "daemon/probe_round_log.h"
#include "daemon/text_buffer_pool.h"
#include "daemon/verdict_tracker.h"
#include "probes/probe_responder.h"

namespace rdmahd {

// Loads the config the options ask for (file or built-in defaults) with the --collector flags
// applied on top.
Result<std::shared_ptr<const Config>> LoadEffectiveConfig(const Options& options);

// Why `report` cannot vouch for the node although its collectors ran: the sysfs root holds no
// class/infiniband (a wrong --path.sysfs, or the RDMA core not loaded). Read from the devices
// collector's facts; nullopt when the class is there or the collector did not run.
std::optional<std::string> SysfsRootProblem(const Report& report, const NodeFs& fs);

// The running config and the outcome of the last reload. Thread-safe.
class ConfigStore {
 public:
  explicit ConfigStore(std::shared_ptr<const Config> initial);
  std::shared_ptr<const Config> Get() const;
  // Tries `loaded`: on success swaps it in; on error keeps the running config. Either way the
  // outcome is recorded for the reload metrics.
  bool Apply(Result<std::shared_ptr<const Config>> loaded, std::string* error_message);
  void Render(MetricSink& sink) const;
  // Changes whenever what Render prints changes (every Apply).
  std::uint64_t generation() const;
  // What Render prints: the last load's outcome and when a load last succeeded (Unix seconds).
  std::pair<bool, double> last_reload() const;

 private:
  mutable Mutex mu_;
  std::uint64_t generation_ GUARDED_BY(mu_) = 0;
  std::shared_ptr<const Config> current_ GUARDED_BY(mu_);
  bool last_reload_ok_ GUARDED_BY(mu_) = true;
  double last_success_unix_ GUARDED_BY(mu_) = 0;
};

class Daemon {
 public:
  Daemon(Options options, std::shared_ptr<const Config> config);
  // With this engine instead of one over the options' paths (tests).
  Daemon(Options options, std::shared_ptr<const Config> config, std::unique_ptr<CollectionEngine> engine);
  // Blocks until SIGTERM or SIGINT. The caller must have blocked SIGHUP/SIGTERM/SIGINT in every
  // thread (BlockDaemonSignals) before any thread was created. Returns the process exit code,
  // promptly whatever a collector is doing: nothing in the main loop waits for a collection.
  int Run();

  // After Run(): the collector still running, or empty. When not empty the process must leave
  // with _exit: the engine's worker is still inside that collector and uses state that static
  // destructors would free.
  std::string busy_collector() const { return engine_->busy_collector(); }

  // Blocks the signals the daemon handles, in the calling thread (call before any thread exists;
  // only in the daemon mode: `check` and `check-config` keep the default actions).
  static void BlockDaemonSignals();

  // The /metrics body. Scrapes served from the same collection share one exposition, made for the
  // first of them: gzip-compressed straight from the sink when that request accepts gzip (the
  // exposition then holds no text; see SharedBody), else as text.
  // nullptr when `client_left` says, once the collection is done, that the client has left.
  std::shared_ptr<SharedBody> MetricsBody(bool accepts_gzip, const std::function<bool()>& client_left = {});
  // Its text (tests); valid for as long as the caller holds it.
  std::shared_ptr<const std::string> Metrics() { return MetricsBody(false)->Text(); }

  // The port Run's HTTP server listens on, once it does (0 before; tests listen on port 0).
  int http_port() const { return http_port_.load(); }

 private:
  // The report a request is answered from (a collection, or the engine's cached one), observed
  // (logged) as a scrape's is.
  std::shared_ptr<const Report> CurrentReport();
  // For a request of the status page or the JSON API: the report CurrentReport() would have given
  // when the request arrived, or a later one (HttpRequest::arrived). Requests queued behind each
  // other for the page workers share one collection instead of each starting its own.
  std::shared_ptr<const Report> ReportFor(const HttpRequest& request);
  // Why the report cannot vouch for the node (SysfsRootProblem), as `check` says it.
  std::vector<std::string> Problems(const Report& report) const;
  // The status page at / (daemon/status_page.h); nothing is rendered for a client that left.
  HttpResponse StatusPage(const HttpRequest& request);
  // An API document (docs/api.md) made by `render`. Requests answered from one report share one
  // render (made for the first of them, while later ones wait) for as long as one still sends it,
  // and one gzip copy of it; nothing is rendered for a client that left.
  struct ApiDocument {
    Mutex mu;
    std::weak_ptr<const Report> report GUARDED_BY(mu);
    std::weak_ptr<SharedBody> body GUARDED_BY(mu);
    std::string etag GUARDED_BY(mu);
  };
  HttpResponse ApiAnswer(const HttpRequest& request, ApiDocument& document,
                         const std::function<std::string(const Report&)>& render);
  // /api/v1/checks and /api/v1/devices: the cached document when the request has no query
  // argument; else the filtered one (docs/api.md, "Filters and paging"), rendered for the request
  // from the same report. A bad argument is a 400, a device the node does not have a 404.
  HttpResponse ChecksAnswer(const HttpRequest& request);
  HttpResponse DevicesAnswer(const HttpRequest& request);
  void Reload();
  // Waits up to timeout_ms for a signal and acts on it (SIGHUP: reload). False when the daemon
  // must stop: SIGTERM, SIGINT, or poll failing (exit_code set to 1).
  bool HandleSignal(int sfd, int timeout_ms, int& exit_code);
  // The evaluator thread: one evaluation at once, then one every kBackgroundEvaluationInterval.
  void EvaluatePeriodically(std::stop_token stop);
  void EvaluateInBackground(const std::stop_token& stop);
  // Ends background evaluation; from then on no scrape waits for a collection. Idempotent.
  void StopEvaluation();
  // Starts, reconfigures or stops the probe responder to match peers.responder. A responder that
  // cannot start (no RDMA device, port in use) is logged; the daemon goes on without it.
  void ReconcileResponder(const Config& config);
  // RDMA device appearance/disappearance, then verdict changes, then failed probe rounds go to the
  // log.
  void Observe(const std::shared_ptr<const Report>& report);
  void LogDeviceCountChange(const Report& report);
  // Rounds of a probe that threw (ProbeRoundLog says which are news).
  void LogProbeRoundFailures(const Report& report);

  Options options_;
  ConfigStore config_;
  std::unique_ptr<CollectionEngine> engine_;
  VerdictTracker tracker_;
  CollectorErrorLog collector_errors_;  // the evaluator thread's only
  ProbeRoundLog probe_rounds_;
  Mutex devices_mu_;
  std::optional<std::size_t> last_device_count_ GUARDED_BY(devices_mu_);
  std::atomic<bool> ready_{false};
  std::atomic<bool> first_evaluation_done_{false};
  std::atomic<std::int64_t> last_loop_tick_ns_{0};
  std::atomic<int> http_port_{0};
  ApiDocument checks_document_, devices_document_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  // The last /metrics exposition and what it was rendered from. The sink and, when no request
  // still holds it, a text's buffer are reused by the next render, so a steady-state scrape
  // allocates almost nothing.
  Mutex exposition_mu_;
  // Watched, not held: after a background evaluation the engine has a newer report, and this one
  // need not stay in memory until the next scrape only to be compared with it.
  std::weak_ptr<const Report> exposition_report_ GUARDED_BY(exposition_mu_);
  std::uint64_t exposition_config_generation_ GUARDED_BY(exposition_mu_) = 0;
  // Watched too: the body lives while a request sends it, not until the next scrape (a
  // 1,000-device node's compressed exposition is 1.9 MB). Requests that overlap share it; a
  // request after the last one ended renders the same report again, without a new collection.
  std::weak_ptr<SharedBody> exposition_ GUARDED_BY(exposition_mu_);
  std::shared_ptr<TextBufferPool> text_pool_ = TextBufferPool::Create();
  MetricSink exposition_sink_ GUARDED_BY(exposition_mu_);

  // Main-loop thread only (start, reload, shutdown).
  std::unique_ptr<ProbeResponder> responder_;

  // Last: it uses the members above, so it must stop before they are destroyed.
  std::jthread evaluator_;
};

}  // namespace rdmahd
