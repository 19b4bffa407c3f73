#include "daemon/daemon.h"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <tuple>

#include "common/logging.h"
#include "common/mutex.h"
#include "common/thread_name.h"
#include "core/topology.h"
#include "facts/rdma_device_facts.h"
#include "common/held_files.h"
#include "common/node_fs.h"
#include "daemon/check_command.h"
#include "daemon/etag.h"
#include "daemon/http_server.h"
#include "daemon/json_api.h"
#include "daemon/query.h"
#include "daemon/shared_body.h"
#include "daemon/status_page.h"

namespace rdmahd {
namespace {

// Verdicts are also computed on this schedule, so state changes are logged (and the watchdog fed)
// even when nobody scrapes.
constexpr std::chrono::seconds kBackgroundEvaluationInterval{60};

// The exposition sink keeps its buffers between scrapes up to this size (formatting into memory it
// already has is what keeps a scrape cheap); above it (several hundred devices) it frees them after
// each exposition is made, so that the served exposition is the one copy resident between scrapes.
constexpr std::size_t kSinkBuffersKept = 8u << 20;

// Held attribute descriptors against their budget (common/node_fs.h): process-wide figures.
void RenderHeldFiles(MetricSink& sink) {
  const HeldFdBudget& budget = HeldFdBudget::Process();
  sink.Gauge("rdma_healthd_held_files", "Attribute files held open for re-reading.")
      .Add({}, static_cast<double>(budget.held()));
  sink.Gauge("rdma_healthd_held_files_budget",
             "Most attribute files that may be held open: soft RLIMIT_NOFILE minus a reserve for connections.")
      .Add({}, static_cast<double>(budget.limit()));
  sink.Counter("rdma_healthd_unheld_reads_total",
               "Attribute reads done open/read/close because the held-file budget was used up.")
      .Add({}, static_cast<double>(budget.unheld_reads()));
}

// Once per process, when the budget first turns a read away (values stay right, scrapes cost more).
void LogHeldFilesBudgetOnce() {
  if (!HeldFdBudget::Process().TakeExhaustedNotice()) return;
  log::Warn("held-file budget used up: further attribute files are read open/read/close",
            {{"budget", std::to_string(HeldFdBudget::Process().limit())},
             {"fix", "raise the open-file limit (systemd LimitNOFILE=)"}});
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::optional<std::string> SysfsRootProblem(const Report& report, const NodeFs& fs) {
  const auto* topology = report.snapshot.Get<Topology>();
  if (report.snapshot.Get<RdmaDevicesFacts>() == nullptr || topology == nullptr || topology->class_dir_present) {
    return std::nullopt;
  }
  if (NodeFs::IsLiveSysfsRoot(fs.sysfs_root())) {
    return fs.Sys("class/infiniband") + " does not exist: the RDMA core (ib_core) is not loaded";
  }
  return fs.Sys("class/infiniband") + " does not exist: --path.sysfs=" + fs.sysfs_root() +
         " is not a sysfs tree, or the RDMA core (ib_core) was not loaded where it was captured";
}

Result<std::shared_ptr<const Config>> LoadEffectiveConfig(const Options& options) {
  Config config;
  if (!options.config_file.empty()) {
    auto loaded = LoadConfigFile(options.config_file, RegisteredPluginNames(),
                                 ConfigReadOptions{options.config_captured_root});
    if (!loaded.ok()) return loaded.error();
    config = std::move(loaded).value();
  }
  ApplyCollectorFlags(options, config);
  return std::shared_ptr<const Config>(std::make_shared<Config>(std::move(config)));
}

ConfigStore::ConfigStore(std::shared_ptr<const Config> initial)
    : current_(std::move(initial)), last_success_unix_(UnixNow()) {}

std::shared_ptr<const Config> ConfigStore::Get() const {
  MutexLock lock(mu_);
  return current_;
}

std::uint64_t ConfigStore::generation() const {
  MutexLock lock(mu_);
  return generation_;
}

bool ConfigStore::Apply(Result<std::shared_ptr<const Config>> loaded, std::string* error_message) {
  MutexLock lock(mu_);
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

std::pair<bool, double> ConfigStore::last_reload() const {
  MutexLock lock(mu_);
  return {last_reload_ok_, last_success_unix_};
}

void ConfigStore::Render(MetricSink& sink) const {
  MutexLock lock(mu_);
  sink.Gauge("rdma_healthd_config_last_reload_successful",
             "1 if the last configuration load succeeded, 0 if it failed (the previous config is kept).")
      .Add({}, last_reload_ok_ ? 1 : 0);
  sink.Gauge("rdma_healthd_config_last_reload_success_timestamp_seconds",
             "Unix time of the last successful configuration load.")
      .Add({}, last_success_unix_);
}

Daemon::Daemon(Options options, std::shared_ptr<const Config> config)
    : Daemon(options, std::move(config),
             std::make_unique<CollectionEngine>(MakeNodeFs(options))) {}

Daemon::Daemon(Options options, std::shared_ptr<const Config> config, std::unique_ptr<CollectionEngine> engine)
    : options_(std::move(options)), config_(std::move(config)), engine_(std::move(engine)) {}

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

std::shared_ptr<const Report> Daemon::CurrentReport() {
  std::shared_ptr<const Report> report = engine_->Collect(config_.Get());
  Observe(report);
  LogHeldFilesBudgetOnce();
  return report;
}

std::shared_ptr<const Report> Daemon::ReportFor(const HttpRequest& request) {
  if (request.arrived == std::chrono::steady_clock::time_point{}) return CurrentReport();
  std::shared_ptr<const Report> report = engine_->Collect(config_.Get(), request.arrived);
  Observe(report);
  LogHeldFilesBudgetOnce();
  return report;
}

std::vector<std::string> Daemon::Problems(const Report& report) const {
  std::vector<std::string> problems;
  if (auto p = SysfsRootProblem(report, engine_->fs())) problems.push_back(std::move(*p));
  return problems;
}

std::shared_ptr<SharedBody> Daemon::MetricsBody(bool accepts_gzip, const std::function<bool()>& client_left) {
  std::shared_ptr<const Report> report = CurrentReport();
  if (client_left && client_left()) return nullptr;
  MutexLock lock(exposition_mu_);
  const std::uint64_t generation = config_.generation();
  if (std::shared_ptr<SharedBody> current = exposition_.lock();
      current && exposition_report_.lock() == report && exposition_config_generation_ == generation) {
    return current;
  }
  MetricSink& sink = exposition_sink_;
  sink.Clear();
  for (const std::string& error : engine_->Render(*report, sink)) {
    log::Error("plug-in failed to render", {{"error", error}});
  }
  RenderProbeRounds(report->snapshot, sink);
  const auto* topology = report->snapshot.Get<Topology>();
  if (topology != nullptr && report->snapshot.Get<RdmaDevicesFacts>() != nullptr) {
    sink.Gauge("rdma_healthd_sysfs_rdma_class_present",
               "1 if <path.sysfs>/class/infiniband exists; 0: wrong --path.sysfs or RDMA core not loaded.")
        .Add({}, topology->class_dir_present ? 1 : 0);
  }
  config_.Render(sink);
  RenderHeldFiles(sink);
  sink.Gauge("rdma_healthd_build_info", "Version of rdma-healthd; the value is always 1.")
      .Add({{"version", RDMAHD_VERSION}}, 1);
  std::shared_ptr<SharedBody> body;
  if (accepts_gzip) {
    // Compressed from the sink's buffers as they are: no full text is made (a plain request
    // decompresses one), and none is kept in the pool either.
    text_pool_->DropSpare();
    GzipStream gzip(sink.SerializedSizeBound());
    sink.ForEachPiece([&gzip](std::string_view piece) { gzip.Write(piece); });
    if (std::optional<std::string> compressed = gzip.Finish()) {
      body = SharedBody::FromGzip(std::move(*compressed), gzip.size_in());
    }
  }
  if (!body) {
    // When no request still sends the last text, its buffer is the one the pool lends out.
    std::unique_ptr<std::string> text = text_pool_->Take();
    sink.SerializeTo(*text);
    body = SharedBody::FromText(text_pool_->Share(std::move(text)));
  }
  // The exposition is what is served; the sink's buffers are kept for the next scrape only while
  // small. Freed, they are given back to the system: glibc returns only the top of its heap on
  // free(), and the buffers of a big exposition, made while a collection allocates around them,
  // leave megabytes of free pages below live memory that would otherwise stay resident.
  if (sink.ClearAndReleaseAbove(kSinkBuffersKept)) malloc_trim(0);
  exposition_ = body;
  exposition_report_ = report;
  exposition_config_generation_ = generation;
  return body;
}

namespace {

constexpr const char* kPlainText = "text/plain; charset=utf-8";
// Verdicts one filtered /api/v1/checks answer may return (`limit`).
constexpr std::size_t kApiMaxLimit = 10000;

// A 400 naming the parameter (the message quotes request bytes only through QuotedArgument).
HttpResponse BadQuery(const Error& e) { return {400, kPlainText, "bad request: " + e.message + "\n"}; }

HttpResponse NoSuchDevice(std::string_view device) {
  return {404, kPlainText, "no device " + QuotedArgument(device) + " on this node\n"};
}

}  // namespace

HttpResponse Daemon::StatusPage(const HttpRequest& request) {
  // Parsed before the collection: a bad query costs nothing.
  Result<StatusPageView> view = ParseStatusPageQuery(request.query);
  if (!view.ok()) return BadQuery(view.error());
  // The report of the last collection while it is within scrape.cache_window of the request's
  // arrival (the one /metrics made), else one collection shared by every request that waits for it
  // or arrived before it: never a second.
  std::shared_ptr<const Report> report = ReportFor(request);
  if (request.ClientLeft()) return HttpResponse::ClientLeft();  // before a render
  if (!view->filter.device.empty() && !DeviceSubjects(*report, view->filter.device).exists()) {
    return NoSuchDevice(view->filter.device);
  }
  std::shared_ptr<const Config> config = report->config ? report->config : config_.Get();
  DaemonStatus status;
  status.version = RDMAHD_VERSION;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) status.hostname = host;
  status.uptime_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  status.config_source = config->source;
  std::tie(status.last_reload_ok, status.last_reload_success_unix) = config_.last_reload();
  status.sysfs_root = options_.sysfs;
  status.ready = ready_;
  for (const std::string& name : engine_->collector_names()) {
    const auto* reg = CollectorRegistry().Find(name);
    status.collectors.push_back({name, reg ? reg->description : "", config->CollectorEnabled(name)});
  }
  return HttpResponse{200, "text/html; charset=utf-8", RenderStatusPage(*report, Problems(*report), status, *view)};
}

HttpResponse Daemon::ChecksAnswer(const HttpRequest& request) {
  auto render_all = [this](const Report& report) {
    std::vector<std::string> problems = Problems(report);
    return ChecksDocument(report, CheckExitCode(report, options_.fail_on_warning, problems), problems);
  };
  if (request.query.empty()) return ApiAnswer(request, checks_document_, render_all);
  Result<std::map<std::string, std::string>> args =
      QueryArguments(request.query, {"status", "check", "device", "offset", "limit"});
  if (!args.ok()) return BadQuery(args.error());
  Result<VerdictFilter> filter = ParseVerdictFilter(*args, kApiMaxLimit);
  if (!filter.ok()) return BadQuery(filter.error());
  std::shared_ptr<const Report> report = ReportFor(request);
  if (request.ClientLeft()) return HttpResponse::ClientLeft();
  if (!filter->device.empty() && !DeviceSubjects(*report, filter->device).exists()) {
    return NoSuchDevice(filter->device);
  }
  // Per request: a filtered answer is a few verdicts, cheap to render and rarely asked twice.
  std::vector<std::string> problems = Problems(*report);
  std::string text =
      ChecksDocument(*report, CheckExitCode(*report, options_.fail_on_warning, problems), problems, *filter);
  HttpResponse r{200, "application/json", std::string()};
  r.etag = WeakEtag(text);
  r.body = std::move(text);
  return r;
}

HttpResponse Daemon::DevicesAnswer(const HttpRequest& request) {
  if (request.query.empty()) {
    return ApiAnswer(request, devices_document_, [](const Report& report) { return DevicesDocument(report); });
  }
  Result<std::map<std::string, std::string>> args = QueryArguments(request.query, {"device"});
  if (!args.ok()) return BadQuery(args.error());
  const std::string& device = args->at("device");
  if (device.empty()) return BadQuery(Error{"parameter \"device\" is empty"});
  std::shared_ptr<const Report> report = ReportFor(request);
  if (request.ClientLeft()) return HttpResponse::ClientLeft();
  if (!DeviceSubjects(*report, device).exists()) return NoSuchDevice(device);
  std::string text = DevicesDocument(*report, device);
  HttpResponse r{200, "application/json", std::string()};
  r.etag = WeakEtag(text);
  r.body = std::move(text);
  return r;
}

HttpResponse Daemon::ApiAnswer(const HttpRequest& request, ApiDocument& document,
                               const std::function<std::string(const Report&)>& render) {
  std::shared_ptr<const Report> report = ReportFor(request);
  if (request.ClientLeft()) return HttpResponse::ClientLeft();
  MutexLock lock(document.mu);
  std::shared_ptr<SharedBody> body = document.body.lock();
  if (!body || document.report.lock() != report) {
    if (request.ClientLeft()) return HttpResponse::ClientLeft();  // it may have waited for the lock
    std::string text = render(*report);
    document.etag = WeakEtag(text);
    body = SharedBody::FromText(std::make_shared<const std::string>(std::move(text)));
    document.body = body;
    document.report = report;
  }
  HttpResponse r{200, "application/json", std::move(body)};
  r.etag = document.etag;
  return r;
}

void Daemon::Reload() {
  log::Info("reloading configuration", {{"file", options_.config_file.empty() ? "<built-in defaults>"
                                                                               : options_.config_file}});
  std::string error;
  Result<std::shared_ptr<const Config>> loaded = LoadEffectiveConfig(options_);
  if (loaded.ok() && (*loaded)->no_settings) {
    // An emptied or all-commented file would otherwise reload as the built-in defaults and drop
    // every policy without a word: refused like an invalid file.
    loaded = Error{(*loaded)->source + ": the file has no settings (it is empty or only comments); " +
                   "write {} to run on the built-in defaults on purpose"};
  }
  if (config_.Apply(std::move(loaded), &error)) {
    engine_->RunProbes(config_.Get());
    ReconcileResponder(*config_.Get());
    log::Info("configuration reloaded", {{"source", config_.Get()->source}});
  } else {
    log::Error("configuration reload failed; keeping the running configuration", {{"error", error}});
  }
}

void Daemon::ReconcileResponder(const Config& config) {
  const PeerResponderPolicy& policy = config.Section<PeersPolicy>().responder;
  if (!policy.enabled) {
    if (responder_) {
      responder_.reset();
      log::Info("probe responder stopped");
    }
    return;
  }
  // Same address and port: new allow list and caps apply to the next sessions; running ones go on.
  if (responder_ && responder_->CanApplyInPlace(policy)) {
    if (Status st = responder_->Apply(policy); !st.ok())
      log::Error("probe responder: new settings refused; keeping the old ones", {{"error", st.error().message}});
    return;
  }
  responder_.reset();  // a new address or port: the old listener goes first (it may hold the port)
  Result<std::unique_ptr<ProbeResponder>> started = ProbeResponder::Start(policy);
  if (!started.ok()) {
    log::Error("cannot start the probe responder", {{"error", started.error().message}});
    return;
  }
  responder_ = std::move(*started);
}

void Daemon::Observe(const std::shared_ptr<const Report>& report) {
  // Devices first: on a node without RDMA, "no RDMA device found" is what explains the verdicts that
  // follow it (kernel modules, device nodes), so it is the first thing a newcomer reads.
  LogDeviceCountChange(*report);
  tracker_.ObserveAndLog(report);
  LogProbeRoundFailures(*report);
}

void Daemon::LogProbeRoundFailures(const Report& report) {
  const auto* facts = report.snapshot.Get<ProbeRoundFacts>();
  if (facts == nullptr) return;
  for (const ProbeRoundLog::Line& line : probe_rounds_.Observe(*facts, std::chrono::steady_clock::now())) {
    log::Warn("probe round failed", {{"probe", line.probe},
                                     {"failed_rounds", std::to_string(line.failed_rounds)},
                                     {"error", line.error}});
  }
}

void Daemon::LogDeviceCountChange(const Report& report) {
  const auto* facts = report.snapshot.Get<RdmaDevicesFacts>();
  if (facts == nullptr) return;  // devices collector disabled or failed (logged as such)
  MutexLock lock(devices_mu_);
  std::size_t n = facts->devices.size();
  if (last_device_count_ == n) return;
  last_device_count_ = n;
  if (n == 0) {
    std::optional<std::string> problem = SysfsRootProblem(report, engine_->fs());
    log::Warn("no RDMA device found; still serving the other collectors' metrics",
              {{"path", engine_->fs().Sys("class/infiniband")},
               {"reason", problem ? *problem : "no device (or none matching devices.include/exclude)"}});
    return;
  }
  std::string names;
  for (const auto& d : facts->devices) names += (names.empty() ? "" : ",") + d.name;
  log::Info("RDMA devices found", {{"count", std::to_string(n)}, {"devices", names}});
}

void Daemon::EvaluateInBackground(const std::stop_token& stop) {
  std::shared_ptr<const Report> report = engine_->Collect(config_.Get());
  if (stop.stop_requested()) return;  // shutting down: the report may be a placeholder
  Observe(report);
  LogHeldFilesBudgetOnce();
  // A value that cannot be read (an unreadable file, a failing kernel query) is worth a warning
  // when it starts failing, not on every evaluation while it stays broken.
  const CollectorErrorLog::NewErrors fresh = collector_errors_.Observe(report->snapshot.outcomes);
  for (const auto& [collector, error] : fresh.errors) {
    log::Warn("collector could not read a value", {{"collector", collector}, {"error", error}});
  }
  if (fresh.suppressed > 0) {
    log::Warn("more collector values could not be read",
              {{"count", std::to_string(fresh.suppressed)}, {"hint", "--log.level=debug lists each one"}});
  }
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

void Daemon::EvaluatePeriodically(std::stop_token stop) {
  Mutex mu;  // only to sleep until the next evaluation or a stop request
  std::condition_variable_any cv;
  MutexLock lock(mu);
  for (;;) {
    lock.unlock();
    EvaluateInBackground(stop);
    lock.lock();
    first_evaluation_done_ = true;
    cv.wait_for(lock, stop, kBackgroundEvaluationInterval, [] { return false; });
    if (stop.stop_requested()) return;
  }
}

void Daemon::StopEvaluation() {
  // Stop requested before the engine stops, so an evaluation it cuts short is not logged.
  evaluator_.request_stop();
  engine_->Stop();  // the evaluator and scrapes waiting for a collection return at once
  if (evaluator_.joinable()) evaluator_.join();
}

bool Daemon::HandleSignal(int sfd, int timeout_ms, int& exit_code) {
  pollfd pfd{sfd, POLLIN, 0};
  int n = poll(&pfd, 1, timeout_ms);
  last_loop_tick_ns_ = SteadyNs();
  if (n < 0 && errno != EINTR) {
    log::Error("poll failed", {{"error", std::strerror(errno)}});
    exit_code = 1;
    return false;
  }
  if (n <= 0 || !(pfd.revents & POLLIN)) return true;
  signalfd_siginfo si{};
  if (read(sfd, &si, sizeof si) != sizeof si) return true;
  if (si.ssi_signo == SIGHUP) {
    if (ready_) sd_notify(0, "RELOADING=1");
    Reload();
    if (ready_) sd_notify(0, "READY=1");
    return true;
  }
  log::Info("shutting down", {{"signal", strsignal(static_cast<int>(si.ssi_signo))}});
  return false;
}

// Threads: the main loop (signals, watchdog), the evaluator (background evaluation), the HTTP
// server's, and the engine's workers (topology, one per collector, one per probe). Only the
// workers ever run plug-in code; everyone else waits for them at most scrape.collection_timeout,
// and not at all after
// StopEvaluation(): SIGTERM is read within 10 ms at startup and 1 s later on, and shutdown never
// waits for a collector (main() then leaves with _exit if one is still running).
int Daemon::Run() {
  // (main() has raised the open-file limit already, for every mode.)
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
  // Whichever way Run ends, the evaluator is stopped and joined before the members it uses go.
  struct EvaluationStopper {
    Daemon* daemon;
    ~EvaluationStopper() { daemon->StopEvaluation(); }
  } stopper{this};

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
  // /metrics goes first on the HTTP workers; / and the API (RouteKind::kPage) take at most one of
  // them, and are dropped when their client has left (http_server.h, "Clients that left").
  routes["/metrics"] = {[this](const HttpRequest& request) {
    std::shared_ptr<SharedBody> body = MetricsBody(request.accepts_gzip, request.client_left);
    if (!body) return HttpResponse::ClientLeft();
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", std::move(body)};
  }};
  // The JSON API (docs/api.md): what `check --output=json` prints, and the devices at a glance.
  routes["/api/v1/checks"] = {[this](const HttpRequest& request) { return ChecksAnswer(request); }, RouteKind::kPage};
  routes["/api/v1/devices"] = {[this](const HttpRequest& request) { return DevicesAnswer(request); }, RouteKind::kPage};
  // Not inline: the page is rendered from a collection, which may take up to collection_timeout.
  routes["/"] = {[this](const HttpRequest& request) { return StatusPage(request); }, RouteKind::kPage};
  routes["/-/healthy"] = {[this] {
    // Healthy while the main loop is turning (it ticks at least every second).
    bool alive = SteadyNs() - last_loop_tick_ns_.load() < std::int64_t{10'000'000'000};
    return alive ? HttpResponse{200, "text/plain; charset=utf-8", "OK\n"}
                 : HttpResponse{503, "text/plain; charset=utf-8", "main loop stalled\n"};
  }, RouteKind::kInline};
  routes["/-/ready"] = {[this] {
    return ready_ ? HttpResponse{200, "text/plain; charset=utf-8", "OK\n"}
                  : HttpResponse{503, "text/plain; charset=utf-8", "starting\n"};
  }, RouteKind::kInline};
  const bool tls = http.web && http.web->tls;
  last_loop_tick_ns_ = SteadyNs();
  auto server = HttpServer::Start(std::move(http), std::move(routes));
  if (!server.ok()) {
    log::Error("cannot start the HTTP server", {{"error", server.error().message}});
    close(sfd);
    return 1;
  }
  http_port_ = (*server)->port();
  log::Info("listening", {{"address", options_.listen_address},
                          {"port", std::to_string((*server)->port())},
                          {"tls", tls ? "on" : "off"},
                          {"max_connections", std::to_string((*server)->max_connections())},
                          {"config", config_.Get()->source}});

  // First collection before reporting ready, so the first scrape and the log show the node's state.
  // It runs on the evaluator thread; signals are read meanwhile.
  evaluator_ = std::jthread([this](std::stop_token stop) {
    NameThisThread("evaluator");
    EvaluatePeriodically(std::move(stop));
  });
  engine_->RunProbes(config_.Get());
  ReconcileResponder(*config_.Get());
  int exit_code = 0;
  bool running = true;
  while (running && !first_evaluation_done_) running = HandleSignal(sfd, 10, exit_code);
  if (!running) {
    responder_.reset();
    StopEvaluation();  // before the server stops: scrapes waiting for a collection return now
    server->reset();
    close(sfd);
    return exit_code;
  }
  ready_ = true;
  sd_notify(0, "READY=1\nSTATUS=serving metrics");

  std::uint64_t watchdog_usec = 0;
  bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
  for (;;) {
    int timeout_ms = 1000;
    if (watchdog) timeout_ms = std::min<int>(timeout_ms, static_cast<int>(watchdog_usec / 2000));
    if (!HandleSignal(sfd, timeout_ms, exit_code)) break;
    // Fed only while no collector is stuck past its deadline: the loop itself can no longer
    // stall, so this is what tells systemd that collections still complete.
    if (watchdog && !engine_->stuck()) sd_notify(0, "WATCHDOG=1");
  }
  sd_notify(0, "STOPPING=1");
  ready_ = false;
  responder_.reset();  // ends its sessions (each within ~100 ms) and joins its threads
  StopEvaluation();  // before the server stops: scrapes waiting for a collection return now
  server->reset();
  close(sfd);
  return exit_code;
}

}  // namespace rdmahd
