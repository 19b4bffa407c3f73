#include "daemon/daemon.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectors/rdma_devices.h"
#include "tests/support/blocking_collector.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::TempDir;

// One RoCE-less RDMA port with one hw counter, and an empty DCB capture folder so the build
// machine's netlink never answers.
Daemon MakeDaemon(const TempDir& dir, std::chrono::milliseconds cache_window) {
  dir.Write("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  dir.Write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "1785\n");
  dir.Write("dcb/.keep", "");
  Options options;
  options.sysfs = dir.path() + "/sys";
  options.procfs = dir.path() + "/proc";
  options.dcb_dir = dir.path() + "/dcb";
  auto config = std::make_shared<Config>();
  config->scrape_cache_window = cache_window;
  return Daemon(options, config);
}

constexpr const char* kSeries =
    "rdma_port_hw_counters_total{device=\"mlx5_0\",port=\"1\",counter=\"out_of_buffer\"} ";

TEST(DaemonMetricsTest, OverlappingScrapesWithinTheCacheWindowShareOneText) {
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(10'000));
  std::shared_ptr<SharedBody> sending = daemon.MetricsBody(false);
  std::shared_ptr<const std::string> first = sending->Text();
  std::shared_ptr<const std::string> second = daemon.Metrics();
  EXPECT_EQ(first.get(), second.get());
  EXPECT_NE(first->find(std::string(kSeries) + "1785\n"), std::string::npos) << *first;
}

TEST(DaemonMetricsTest, ATextStillHeldIsNeverWrittenOver) {
  // A scrape still sending its text while the next collection renders: the new text must go to a
  // new buffer. Once nobody holds the old one, its buffer is reused.
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(0));
  std::shared_ptr<const std::string> held = daemon.Metrics();
  const std::string copy = *held;

  dir.Write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "7\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::shared_ptr<const std::string> fresh = daemon.Metrics();
  EXPECT_NE(fresh.get(), held.get());
  EXPECT_EQ(*held, copy);
  EXPECT_NE(fresh->find(std::string(kSeries) + "7\n"), std::string::npos) << *fresh;

  const std::string* fresh_address = fresh.get();
  held.reset();
  fresh.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::shared_ptr<const std::string> next = daemon.Metrics();
  EXPECT_EQ(next.get(), fresh_address);  // nobody held it: rendered into the same buffer
  EXPECT_NE(next->find(std::string(kSeries) + "7\n"), std::string::npos);
}


// Prometheus asks for gzip: the exposition is then compressed from the sink and holds no text. A
// plain request in the cache window shares it and gets the text that compresses to those bytes.
TEST(DaemonMetricsTest, AGzipScrapeKeepsOnlyTheCompressedExposition) {
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(10'000));
  std::shared_ptr<SharedBody> gzipped = daemon.MetricsBody(true);
  EXPECT_FALSE(gzipped->text_in_memory());
  std::shared_ptr<const std::string> gzip = gzipped->Gzipped();
  ASSERT_NE(gzip, nullptr);

  std::shared_ptr<SharedBody> plain = daemon.MetricsBody(false);
  EXPECT_EQ(plain.get(), gzipped.get());
  std::shared_ptr<const std::string> text = plain->Text();
  ASSERT_NE(text, nullptr);
  EXPECT_NE(text->find(std::string(kSeries) + "1785\n"), std::string::npos) << *text;
  EXPECT_EQ(text->size(), plain->text_size());
  EXPECT_EQ(Gzip(*text), *gzip);  // the bytes the whole text compresses to
  const std::string copy = *text;
  text.reset();
  EXPECT_FALSE(gzipped->text_in_memory());  // the plain request's text went with it
  EXPECT_EQ(*daemon.Metrics(), copy);
  EXPECT_EQ(daemon.MetricsBody(true)->Gzipped(), gzip);
}

// The exposition lives while a request holds it, not until the next scrape: at 1,000 devices its
// compressed bytes are 1.9 MB that an idle daemon would keep. A request after the last one ended,
// still in the cache window, is rendered again from the same report, so its bytes are the same.
TEST(DaemonMetricsTest, AnExpositionLivesOnlyWhileARequestHoldsIt) {
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(10'000));
  std::shared_ptr<SharedBody> first = daemon.MetricsBody(true);
  const std::string text = *first->Text();
  const std::weak_ptr<SharedBody> watched = first;
  first.reset();
  EXPECT_TRUE(watched.expired());

  dir.Write("sys/class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer", "7\n");
  std::shared_ptr<SharedBody> again = daemon.MetricsBody(true);
  EXPECT_EQ(*again->Text(), text);  // the same report: no collection in the window
  EXPECT_NE(text.find(std::string(kSeries) + "1785\n"), std::string::npos) << text;
  EXPECT_EQ(daemon.MetricsBody(false).get(), again.get());  // still held: shared
}

// A plain scrape first: the exposition is its text, as before, and a gzip request in the window
// gets that text compressed.
TEST(DaemonMetricsTest, APlainScrapeKeepsTheTextAndGzipCompressesIt) {
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(10'000));
  std::shared_ptr<SharedBody> plain = daemon.MetricsBody(false);
  EXPECT_TRUE(plain->text_in_memory());
  std::shared_ptr<SharedBody> gzipped = daemon.MetricsBody(true);
  EXPECT_EQ(gzipped.get(), plain.get());
  ASSERT_NE(gzipped->Gzipped(), nullptr);
  EXPECT_EQ(*gzipped->Gzipped(), Gzip(*plain->Text()));
}

// Scrapes at once within the cache window, whichever encoding they ask for, share one exposition.
TEST(DaemonMetricsTest, ConcurrentScrapesInTheWindowShareOneExposition) {
  TempDir dir;
  Daemon daemon = MakeDaemon(dir, std::chrono::milliseconds(10'000));
  std::vector<std::shared_ptr<SharedBody>> bodies(8);
  std::vector<std::thread> scrapes;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    scrapes.emplace_back([&, i] { bodies[i] = daemon.MetricsBody(i % 2 == 0); });
  }
  for (auto& t : scrapes) t.join();
  for (const auto& body : bodies) EXPECT_EQ(body.get(), bodies[0].get());
  std::vector<std::shared_ptr<const std::string>> texts(8);
  scrapes.clear();
  for (std::size_t i = 0; i < texts.size(); ++i) {
    scrapes.emplace_back([&, i] { texts[i] = bodies[i]->Text(); });
  }
  for (auto& t : scrapes) t.join();
  for (const auto& text : texts) EXPECT_EQ(text.get(), texts[0].get());
}

// Sysfs root without an RDMA class (a wrong --path.sysfs): still served, and said so.
TEST(DaemonMetricsTest, SysfsRootWithoutRdmaClassIsExported) {
  TempDir dir;
  Daemon good = MakeDaemon(dir, std::chrono::milliseconds(0));
  EXPECT_NE(good.Metrics()->find("\nrdma_healthd_sysfs_rdma_class_present 1\n"), std::string::npos);

  Options options;
  options.sysfs = dir.path() + "/nonexistent";
  options.procfs = dir.path() + "/nonexistent";
  options.dcb_dir = dir.path() + "/dcb";
  Daemon wrong(options, std::make_shared<Config>());
  std::shared_ptr<const std::string> text = wrong.Metrics();
  EXPECT_NE(text->find("\nrdma_healthd_sysfs_rdma_class_present 0\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("\nrdma_devices_found 0\n"), std::string::npos);
}

TEST(DaemonMetricsTest, SysfsRootProblemNamesTheRoot) {
  Report report;
  NodeFs fs("/nonexistent", "/proc");
  EXPECT_EQ(SysfsRootProblem(report, fs), std::nullopt);  // devices collector did not run
  report.snapshot.Put(RdmaDevicesFacts{});
  report.snapshot.Put(Topology{});  // class/infiniband absent
  EXPECT_EQ(SysfsRootProblem(report, fs),
            "/nonexistent/class/infiniband does not exist: --path.sysfs=/nonexistent is not a sysfs tree, "
            "or the RDMA core (ib_core) was not loaded where it was captured");
  // On the live /sys there is no tree to doubt: only the module.
  EXPECT_EQ(SysfsRootProblem(report, NodeFs("/sys", "/proc")),
            "/sys/class/infiniband does not exist: the RDMA core (ib_core) is not loaded");
  Topology present;
  present.class_dir_present = true;  // loaded, no device: not a problem of the root
  report.snapshot.Put(present);
  EXPECT_EQ(SysfsRootProblem(report, fs), std::nullopt);
}

// A probe whose every round throws.
class BrokenProbe : public Probe {
 public:
  std::chrono::milliseconds Interval(const Config&) const override { return std::chrono::milliseconds(5); }
  void RunRound(const ProbeContext&, ProbeBoard&) override { throw std::runtime_error("probe state corrupt"); }
  void Render(const Snapshot&, MetricSink&) const override {}
};

// A probe round that throws is on /metrics (its success 0, its failed rounds counted) and in the
// log, with what it threw.
TEST(DaemonMetricsTest, AThrowingProbeRoundIsExportedAndLogged) {
  EnginePlugins plugins;
  plugins.probes.push_back({"test_broken", std::make_unique<BrokenProbe>()});
  auto engine = std::make_unique<CollectionEngine>(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  auto config = std::make_shared<Config>();
  config->scrape_cache_window = std::chrono::milliseconds(0);
  engine->RunProbes(config);
  Daemon daemon(Options{}, config, std::move(engine));

  ::testing::internal::CaptureStderr();
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (text.find("rdma_healthd_probe_failed_rounds_total{probe=\"test_broken\"}") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    text = *daemon.Metrics();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(text.find("rdma_healthd_probe_success{probe=\"test_broken\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rdma_healthd_probe_rounds_total{probe=\"test_broken\"} "), std::string::npos) << text;
  EXPECT_NE(log.find("msg=\"probe round failed\" probe=test_broken failed_rounds="), std::string::npos) << log;
  EXPECT_NE(log.find("error=\"probe state corrupt\""), std::string::npos) << log;
}

// A daemon (HTTP on 127.0.0.1:0) whose only collector is stuck until the test opens the gate, run
// on its own thread with the daemon's signals blocked, as main() runs it.
class StuckDaemon {
 public:
  explicit StuckDaemon(std::chrono::milliseconds collection_timeout,
                       std::optional<std::chrono::milliseconds> cache_window = std::nullopt)
      : gate_(std::make_shared<testing::Gate>()) {
    EnginePlugins plugins;
    plugins.collectors.push_back({"test_stuck", std::make_unique<testing::BlockingCollector>(gate_)});
    auto engine = std::make_unique<CollectionEngine>(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
    Options options;
    options.listen_address = "127.0.0.1:0";
    auto config = std::make_shared<Config>();
    config->collection_timeout = collection_timeout;
    if (cache_window) config->scrape_cache_window = *cache_window;
    // Blocked in every thread Run starts, so the signal sent to Run's thread waits for its signalfd.
    sigset_t daemon_signals, old_mask;
    sigemptyset(&daemon_signals);
    sigaddset(&daemon_signals, SIGHUP);
    sigaddset(&daemon_signals, SIGTERM);
    sigaddset(&daemon_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &daemon_signals, &old_mask);
    daemon_ = std::make_unique<Daemon>(options, config, std::move(engine));
    done_ = exit_code_.get_future();
    run_ = std::thread([this] { exit_code_.set_value(daemon_->Run()); });
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  }
  ~StuckDaemon() {
    gate_->Open();  // whatever still waits (a test that failed) ends
    if (run_.joinable()) run_.join();
  }

  testing::Gate& gate() { return *gate_; }
  Daemon& daemon() { return *daemon_; }

  // Sends SIGTERM to Run's thread; the seconds Run took to return, or nullopt after 5 s.
  std::optional<double> Terminate() {
    const auto sent = std::chrono::steady_clock::now();
    pthread_kill(run_.native_handle(), SIGTERM);
    if (done_.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return std::nullopt;
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    EXPECT_EQ(done_.get(), 0);
    run_.join();
    return took;
  }

  // Destroying the daemon does not wait for the collector; once released, the worker frees it.
  void DestroyThenRelease() {
    const auto start = std::chrono::steady_clock::now();
    daemon_.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    gate_->Open();
    EXPECT_TRUE(gate_->WaitFor([&] { return gate_->collector_destroyed; }));
  }

 private:
  std::shared_ptr<testing::Gate> gate_;
  std::unique_ptr<Daemon> daemon_;
  std::promise<int> exit_code_;
  std::future<int> done_;
  std::thread run_;
};

// SIGTERM while the first collection is stuck (its deadline 30 s away) and a scrape waits for it:
// Run returns within a second, the scrape too, and nothing waits for the collector.
TEST(DaemonShutdownTest, SigtermWhileTheFirstCollectionIsStuckStopsPromptly) {
  StuckDaemon d(std::chrono::seconds(30));
  ASSERT_TRUE(d.gate().WaitFor([&] { return d.gate().entered == 1; }));
  std::promise<void> scraped;
  std::future<void> scrape_done = scraped.get_future();
  std::thread scrape([&] {
    d.daemon().Metrics();
    scraped.set_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  std::optional<double> took = d.Terminate();
  ASSERT_TRUE(took.has_value()) << "Run did not return within 5 s of SIGTERM";
  EXPECT_LT(*took, 1.0);
  EXPECT_EQ(d.daemon().busy_collector(), "test_stuck");  // main() leaves with _exit
  const bool answered = scrape_done.wait_for(std::chrono::seconds(1)) == std::future_status::ready;
  EXPECT_TRUE(answered) << "the waiting scrape was not answered at shutdown";
  if (!answered) d.gate().Open();  // lets the scrape's thread end
  scrape.join();
  d.DestroyThenRelease();
}

// The same once serving: the collection missed its deadline, the HTTP server and the evaluator
// run. Run returns within the HTTP server's own shutdown time.
TEST(DaemonShutdownTest, SigtermWhileServingWithAStuckCollectorStopsPromptly) {
  StuckDaemon d(std::chrono::milliseconds(200));
  ASSERT_TRUE(d.gate().WaitFor([&] { return d.gate().entered == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the deadline: serving
  const auto scrape = std::chrono::steady_clock::now();
  std::shared_ptr<const std::string> text = d.daemon().Metrics();  // answered at once
  EXPECT_LT(std::chrono::steady_clock::now() - scrape, std::chrono::milliseconds(100));
  EXPECT_NE(text->find("rdma_healthd_collector_success{collector=\"test_stuck\"} 0\n"), std::string::npos);
  EXPECT_NE(text->find("rdma_healthd_collection_timeouts_total{collector=\"test_stuck\"} 1\n"), std::string::npos);

  std::optional<double> took = d.Terminate();
  ASSERT_TRUE(took.has_value()) << "Run did not return within 5 s of SIGTERM";
  EXPECT_LT(*took, 4.0);
  EXPECT_EQ(d.daemon().busy_collector(), "test_stuck");
  d.DestroyThenRelease();
}

// The daemon serving the roce/pfc-off fixture, its policy read from `config_file`, run on its own
// thread with the daemon's signals blocked, as main() runs it.
class FixtureDaemon {
 public:
  explicit FixtureDaemon(const std::string& config_file) {
    Options options;
    options.listen_address = "127.0.0.1:0";
    options.sysfs = testing::ProjectFixture("roce/pfc-off/sys");
    options.procfs = testing::ProjectFixture("roce/pfc-off/proc");
    options.dcb_dir = testing::ProjectFixture("roce/pfc-off/dcb");
    options.config_file = config_file;
    Result<std::shared_ptr<const Config>> config = LoadEffectiveConfig(options);
    if (!config.ok()) throw std::runtime_error(config.error().message);
    sigset_t daemon_signals, old_mask;
    sigemptyset(&daemon_signals);
    sigaddset(&daemon_signals, SIGHUP);
    sigaddset(&daemon_signals, SIGTERM);
    sigaddset(&daemon_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &daemon_signals, &old_mask);
    daemon_ = std::make_unique<Daemon>(options, *config);
    run_ = std::thread([this] { daemon_->Run(); });
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  }
  ~FixtureDaemon() {
    pthread_kill(run_.native_handle(), SIGTERM);
    run_.join();
  }

  void Hup() { pthread_kill(run_.native_handle(), SIGHUP); }

  // Scrapes until the exposition holds `line` (a whole line, its newline included); the last
  // exposition either way.
  std::string ScrapeUntil(const std::string& line) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      text = *daemon_->Metrics();
      if (text.find(line) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return text;
  }
  // A scrape from a collection that starts after this call (past the scrape cache window).
  std::string FreshScrape() {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return *daemon_->Metrics();
  }

 private:
  std::unique_ptr<Daemon> daemon_;
  std::thread run_;
};

constexpr const char* kPolicy =
    "ports:\n"
    "  require_active: true\n"
    "roce:\n"
    "  priority: 3\n"
    "  dscp: 26\n"
    "  trust: dscp\n"
    "  min_mtu: 4200\n";
// ens1f0np0 has PFC off on priority 3 (tests/fixtures/roce/pfc-off).
constexpr const char* kPfcFailed =
    "rdma_check_status{check=\"roce_pfc_priority\",subject=\"ens1f0np0\",status=\"failed\"} 1\n";
constexpr const char* kReloadFailed = "rdma_healthd_config_last_reload_successful 0\n";
constexpr const char* kReloadOk = "rdma_healthd_config_last_reload_successful 1\n";

// A config file cut mid-write (by an editor, or a config manager that does not rename into place)
// ends right after a key. A SIGHUP then must not swap in a config without the RoCE policy: the
// reload fails (logged with the file, line and key), the running policy stays, and so does the
// failed PFC verdict it finds. A complete file reloads again.
TEST(DaemonReloadTest, AConfigCutMidWriteKeepsTheRunningPolicy) {
  TempDir dir;
  const std::string file = dir.path() + "/config.yaml";
  dir.Write("config.yaml", kPolicy);
  FixtureDaemon d(file);
  std::string text = d.ScrapeUntil(kPfcFailed);
  ASSERT_NE(text.find(kPfcFailed), std::string::npos) << text;
  ASSERT_NE(text.find(kReloadOk), std::string::npos) << text;

  struct Cut {
    std::string text, logged;
  };
  const std::vector<Cut> cuts = {
      {"ports:\n  require_active: true\nroce:", file + ":3:1: roce: has no value, and nothing follows it"},
      {"ports:\n  require_active: true\nroce:\n  priority:",
       file + ":4:3: roce.priority: has no value, and nothing follows it"},
  };
  for (const Cut& cut : cuts) {
    if (&cut != &cuts.front()) {  // the complete file again: it reloads
      dir.Write("config.yaml", kPolicy);
      d.Hup();
      ASSERT_NE(d.ScrapeUntil(kReloadOk).find(kReloadOk), std::string::npos);
    }

    dir.Write("config.yaml", cut.text);
    ::testing::internal::CaptureStderr();
    d.Hup();
    text = d.ScrapeUntil(kReloadFailed);
    // The reload's status is published a moment before its log line is written (ConfigStore::Apply,
    // then the log): give the line that moment (a TSan build takes longer than a scrape).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(text.find(kReloadFailed), std::string::npos) << cut.text;
    EXPECT_THAT(log, ::testing::HasSubstr("configuration reload failed; keeping the running configuration"));
    EXPECT_THAT(log, ::testing::HasSubstr(cut.logged)) << cut.text;
    EXPECT_THAT(log, ::testing::HasSubstr("(a file cut mid-write?)"));
    text = d.FreshScrape();
    EXPECT_NE(text.find(kPfcFailed), std::string::npos) << "the PFC verdict was dropped after: " << cut.text;
  }
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

// GET `path` (HTTP/1.0) from the daemon on 127.0.0.1:port; what came back within 10 s.
std::string HttpGet(int port, const std::string& path) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "connect failed";
  const std::string request = "GET " + path + " HTTP/1.0\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string answer;
  char buf[16384];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return answer;
}

// Requests to / and the API whose client closed while they waited (behind a page stuck in a
// collection) never reach the collectors: with no scrape cache, each one run would be a collection.
TEST(DaemonHttpTest, PageRequestsWhoseClientLeftAreNeverCollected) {
  StuckDaemon d(std::chrono::seconds(30), /*cache_window=*/std::chrono::milliseconds(0));
  ASSERT_TRUE(d.gate().WaitFor([&] { return d.gate().entered == 1; }));  // the first evaluation, stuck
  const int port = d.daemon().http_port();
  ASSERT_NE(port, 0);
  std::string held;
  std::thread waiting([&] { held = HttpGet(port, "/api/v1/checks"); });  // waits for that collection
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  constexpr int kLeft = 20;
  for (int i = 0; i < kLeft; ++i) {
    int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    const std::string request = std::string("GET ") + (i % 2 ? "/" : "/api/v1/checks") + " HTTP/1.1\r\nHost: x\r\n\r\n";
    (void)!write(fd, request.data(), request.size());
    close(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // read and queued behind the first
  d.gate().Open();
  waiting.join();
  EXPECT_NE(held.find("HTTP/1.1 200 OK"), std::string::npos) << held.substr(0, 200);
  // Queued after the ones that left: when it is answered, each of them was taken.
  std::string after = HttpGet(port, "/api/v1/checks");
  EXPECT_NE(after.find("HTTP/1.1 200 OK"), std::string::npos) << after.substr(0, 200);
  {
    std::lock_guard lock(d.gate().mu);
    EXPECT_EQ(d.gate().entered, 2) << "collections: the first, the request after; none for the " << kLeft
                                   << " that left";
  }
  std::optional<double> took = d.Terminate();
  ASSERT_TRUE(took.has_value());
  d.DestroyThenRelease();
}

}  // namespace
}  // namespace rdmahd
