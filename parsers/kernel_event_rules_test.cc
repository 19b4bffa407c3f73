#include "parsers/kernel_event_rules.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "parsers/pcie_aer.h"
#include "tests/support/test_files.h"

namespace rdmahd {
namespace {

const KernelEventClassifier& Builtin() {
  static const KernelEventClassifier classifier = [] {
    auto c = KernelEventClassifier::Create(BuiltinKernelEventRules());
    EXPECT_TRUE(c.ok()) << c.error().message;
    return std::move(*c);
  }();
  return classifier;
}

std::optional<KernelEvent> ClassifyLine(std::string_view line, SavedLogFormat format = SavedLogFormat::kDmesg) {
  auto record = ParseSavedLogLine(line, format);
  if (!record) return std::nullopt;
  return Builtin().Classify(*record);
}

// Every record of a corpus file, classified; the lines without an event give an empty name.
std::vector<std::optional<KernelEvent>> ClassifyFile(const std::string& rel) {
  const std::string text = testing::ReadRealFixture(rel);
  const SavedLogFormat format = DetectSavedLogFormat(text);
  std::vector<std::optional<KernelEvent>> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (auto r = ParseSavedLogLine(std::string_view(text).substr(start, nl - start), format)) {
      out.push_back(Builtin().Classify(*r));
    }
    start = nl + 1;
  }
  return out;
}

struct Want {
  std::string name;
  KernelEventSeverity severity;
  std::string pci, number, text;
};

void ExpectEvent(const std::optional<KernelEvent>& e, const Want& w) {
  ASSERT_TRUE(e.has_value()) << "no event, wanted " << w.name;
  EXPECT_EQ(e->name, w.name);
  EXPECT_EQ(e->severity, w.severity) << w.name << ": " << KernelEventSeverityName(e->severity);
  EXPECT_EQ(e->pci_address, w.pci) << w.name;
  EXPECT_EQ(e->number, w.number) << w.name;
  EXPECT_EQ(e->text, w.text) << w.name;
}

using S = KernelEventSeverity;

TEST(KernelEventRulesTest, AccessRegFailuresOfCorpus04And05AreLowSeverityCommandFailures) {
  const auto events = ClassifyFile("corpus/04_dmesg_mlx5_access_reg_failed_node_exporter_3434.txt");
  ASSERT_EQ(events.size(), 4u);
  ExpectEvent(events[0], {"command_failed", S::kInfo, "0000:05:00.0", "0x9a6171", "ACCESS_REG"});
  ExpectEvent(events[2], {"command_failed", S::kInfo, "0000:05:00.1", "0x9a6171", "ACCESS_REG"});
  EXPECT_EQ(events[0]->monotonic_us, std::optional<std::uint64_t>(11176517416));
  EXPECT_EQ(events[0]->driver, "mlx5_core");
  const auto journal = ClassifyFile("corpus/05_journal_mlx5_access_reg_failed_gpud_1164.txt");
  ASSERT_EQ(journal.size(), 1u);  // gpud's own line is not the kernel's
  ExpectEvent(journal[0], {"command_failed", S::kInfo, "0000:d2:00.0", "0x9a6171", "ACCESS_REG"});
}

TEST(KernelEventRulesTest, ProbeFailuresOfCorpus59And60) {
  for (const char* file : {"corpus/59_dmesg_mlx5_core_probe_failed_handle_hca_cap_cx4lx_tinycore9.txt",
                           "corpus/60_dmesg_mlx5_core_probe_failed_cx4121_rpext129.txt"}) {
    SCOPED_TRACE(file);
    const auto events = ClassifyFile(file);
    std::map<std::string, KernelEvent> by_name;
    std::size_t quiet = 0;
    for (const auto& e : events) {
      if (e) {
        by_name[e->name] = *e;
      } else {
        ++quiet;
      }
    }
    EXPECT_EQ(by_name.size(), 2u);
    EXPECT_GE(quiet, 2u);  // "firmware version", "handle_hca_cap failed": no event of their own
    const std::string pci = std::string(file).find("/59_") != std::string::npos ? "0000:03:00.0" : "0000:01:00.0";
    ExpectEvent(by_name["probe_failed"], {"probe_failed", S::kCritical, pci, "-22", ""});
    ExpectEvent(by_name["mlx5_load_failed"], {"mlx5_load_failed", S::kCritical, pci, "-22", ""});
  }
}

TEST(KernelEventRulesTest, AerNewFormatOfCorpus61) {
  const auto events = ClassifyFile("corpus/61_dmesg_aer_corrected_physical_layer_new_format_generic_popos751.txt");
  ASSERT_EQ(events.size(), 11u);
  ExpectEvent(events[0], {"aer_corrected", S::kInfo, "0000:00:1d.0", "", "Physical Layer"});
  EXPECT_FALSE(events[1].has_value());  // "device [8086:a330] error status/mask=...": details
  ExpectEvent(events[2], {"aer_error_bit", S::kInfo, "0000:00:1d.0", "0", "RxErr"});
  ExpectEvent(events[3], {"aer_received", S::kInfo, "0000:03:00.0", "", "Corrected"});
  ExpectEvent(events[7], {"aer_corrected", S::kInfo, "0000:03:00.0", "", "Physical Layer"});
  EXPECT_EQ(events[7]->driver, "nvme");
  EXPECT_FALSE(events[10].has_value());
}

TEST(KernelEventRulesTest, AerCorrectableWordingOfCorpus62) {
  const auto events = ClassifyFile("corpus/62_dmesg_T_aer_correctable_severity_kernel6x_generic_dasharo815.txt");
  ASSERT_EQ(events.size(), 14u);
  ExpectEvent(events[1], {"aer_error_bit", S::kInfo, "0000:06:00.0", "0", "RxErr"});  // "RxErr   (First)"
  ExpectEvent(events[3], {"aer_error_bit", S::kInfo, "0000:06:00.0", "12", "Timeout"});
  ExpectEvent(events[4], {"aer_received", S::kInfo, "0000:06:00.0", "", "Correctable"});
  ExpectEvent(events[6], {"aer_corrected", S::kInfo, "0000:00:1d.3", "", "Data Link Layer"});
  EXPECT_EQ(events[6]->realtime_s, std::optional<std::int64_t>(1756498192));
}

TEST(KernelEventRulesTest, AerOldFormatOfCorpus63) {
  const auto events = ClassifyFile("corpus/63_dmesg_aer_old_format_id_receiver_error_generic_geerling64.txt");
  ASSERT_EQ(events.size(), 8u);
  ExpectEvent(events[0], {"aer_corrected", S::kInfo, "0000:00:1d.0", "", "Physical Layer"});
  ExpectEvent(events[2], {"aer_error_bit", S::kInfo, "0000:00:1d.0", "0", "Receiver Error"});
  EXPECT_EQ(CanonicalAerErrorName(events[2]->text), "RxErr");
  // The old "received: id=00e8" names the source by requester id, not by address: the event keeps
  // the id and the reporting port.
  ExpectEvent(events[3], {"aer_received", S::kInfo, "0000:00:1d.0", "00e8", "Corrected"});
}

// Corpus 68 as published: the author wrapped the kernel line over two lines, so neither half is
// the event; the line rejoined is.
TEST(KernelEventRulesTest, ModulePowerBudgetEventOfCorpus68) {
  const std::string text = testing::ReadRealFixture("corpus/68_ethtool_S_err_lanes_and_port_module_power_budget_cx6dx_blog.txt");
  const std::size_t first = text.find("mlx5_core 0000:81:00.0");
  ASSERT_NE(first, std::string::npos);
  const std::size_t wrap = text.find('\n', first);
  const std::size_t end = text.find('\n', wrap + 1);
  const std::string head = text.substr(first, wrap - first);
  std::string tail = text.substr(wrap + 1, (end == std::string::npos ? text.size() : end) - wrap - 1);
  EXPECT_FALSE(ClassifyLine(head, SavedLogFormat::kPlain).has_value());
  EXPECT_FALSE(ClassifyLine(tail, SavedLogFormat::kPlain).has_value());
  tail.erase(0, tail.find_first_not_of(' '));
  ExpectEvent(ClassifyLine(head + " " + tail, SavedLogFormat::kPlain),
              {"module_error", S::kWarning, "0000:81:00.0", "0", "Cable error, Power budget exceeded"});
}

TEST(KernelEventRulesTest, EfaCommandFailureOfCorpus72) {
  const auto events = ClassifyFile("corpus/72_dmesg_efa_failed_process_command_alloc_pd_awsofinccl22.txt");
  ASSERT_EQ(events.size(), 2u);
  ExpectEvent(events[0], {"efa_command_failed", S::kWarning, "", "1", "ALLOC_PD"});
  EXPECT_EQ(events[0]->ib_device, "efa_0");
  EXPECT_FALSE(events[1].has_value());
}

// mlx5 firmware health, as health.c and events.c print it (lines written from those formats).
TEST(KernelEventRulesTest, Mlx5FirmwareHealthAndThermal) {
  const std::string p = "[  131.207015] mlx5_core 0000:41:00.0: ";
  ExpectEvent(ClassifyLine(p + "temp_warn:170:(pid 0): High temperature on sensors with bit set 0 1"),
              {"mlx5_temperature_warning", S::kWarning, "0000:41:00.0", "", "0 1"});
  ExpectEvent(ClassifyLine(p + "poll_health:471:(pid 0): device's health compromised - reached miss count"),
              {"mlx5_health_compromised", S::kCritical, "0000:41:00.0", "", ""});
  ExpectEvent(ClassifyLine(p + "print_health_info:421:(pid 0): synd 0x10: High temperature"),
              {"mlx5_health_syndrome", S::kCritical, "0000:41:00.0", "0x10", "High temperature"});
  ExpectEvent(ClassifyLine(p + "poll_health:478:(pid 0): Fatal error 1 detected"),
              {"mlx5_fw_fatal", S::kCritical, "0000:41:00.0", "1", ""});
  ExpectEvent(ClassifyLine(p + "health recovery flow aborted, PCI reads still not working"),
              {"mlx5_health_recovery_aborted", S::kCritical, "0000:41:00.0", "", ""});
  // Not health events: the rest of the health buffer, and a command's syndrome.
  EXPECT_FALSE(ClassifyLine(p + "print_health_info:422:(pid 0): ext_synd 0x0000").has_value());
  EXPECT_FALSE(ClassifyLine(p + "print_health_info:410:(pid 0): assert_var[0] 0x00000073").has_value());
  // Newer kernels: the severity is the firmware's, as a kernel log level.
  const std::string q = "[  10.0] mlx5_core 0000:41:00.1: print_health_info:430:(pid 0): Health issue observed, ";
  ExpectEvent(ClassifyLine(q + "High temperature, severity(4) WARNING:"),
              {"mlx5_health_issue", S::kWarning, "0000:41:00.1", "4", "High temperature"});
  ExpectEvent(ClassifyLine(q + "FW assert, severity(2) CRITICAL:"),
              {"mlx5_health_issue", S::kCritical, "0000:41:00.1", "2", "FW assert"});
  ExpectEvent(ClassifyLine(q + "unrecognized error, severity(6) INFO:"),
              {"mlx5_health_issue", S::kInfo, "0000:41:00.1", "6", "unrecognized error"});
}

TEST(KernelEventRulesTest, CommandsModulesSlotPowerLinksAndOtherDrivers) {
  ExpectEvent(ClassifyLine("[  257.137072] mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) "
                           "timeout. Will cause a leak of a command resource"),
              {"command_timeout", S::kWarning, "0000:56:00.0", "", "ACCESS_REG"});
  ExpectEvent(ClassifyLine("[  9.0] mlx5_core 0000:56:00.0: cmd[0]: MANAGE_PAGES(0x108) Async, timeout. Will cause a "
                           "leak of a command resource"),
              {"command_timeout", S::kWarning, "0000:56:00.0", "", "MANAGE_PAGES"});
  ExpectEvent(ClassifyLine("[    8.951695] mlx5_core 0000:63:00.1: Port module event: module 1, Cable unplugged"),
              {"module_unplugged", S::kWarning, "0000:63:00.1", "1", ""});
  ExpectEvent(ClassifyLine("[    8.9] mlx5_core 0000:5c:00.0: Port module event[error]: module 0, Cable error, High "
                           "Temperature"),
              {"module_error", S::kWarning, "0000:5c:00.0", "0", "Cable error, High Temperature"});
  ExpectEvent(ClassifyLine("[ 2.0] mlx5_core 0000:12:00.0: mlx5_pcie_event:299:(pid 10): Detected insufficient power on "
                           "the PCIe slot (27W)."),
              {"pcie_slot_power_insufficient", S::kWarning, "0000:12:00.0", "27", ""});
  ExpectEvent(ClassifyLine("[ 3.0] mlx5_core 0000:03:00.0: probe with driver mlx5_core failed with error -110"),
              {"probe_failed", S::kCritical, "0000:03:00.0", "-110", ""});
  auto down = ClassifyLine("[ 4.0] mlx5_core 0000:af:00.0 ens1f0np0: Link down");
  ExpectEvent(down, {"link_down", S::kWarning, "0000:af:00.0", "", ""});
  EXPECT_EQ(down->netdev, "ens1f0np0");
  ExpectEvent(ClassifyLine("[ 5.0] mlx5_core 0000:af:00.0 ens1f0np0: Link up"), {"link_up", S::kInfo, "0000:af:00.0", "", ""});
  ExpectEvent(ClassifyLine("[ 6.0] bnxt_en 0000:3b:00.0 eno1np0: NIC Link is Down"),
              {"link_down", S::kWarning, "0000:3b:00.0", "", ""});
  ExpectEvent(ClassifyLine("[ 7.0] bnxt_en 0000:3b:00.0 eno1np0: Firmware fatal reset event received"),
              {"bnxt_fw_fatal_reset", S::kCritical, "0000:3b:00.0", "", ""});
  ExpectEvent(ClassifyLine("[ 8.0] pcieport 0000:00:01.0: AER: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), "
                           "type=Transaction Layer, (Requester ID)"),
              {"aer_nonfatal", S::kWarning, "0000:00:01.0", "", "Transaction Layer"});
  ExpectEvent(ClassifyLine("[ 9.0] mlx5_core 0000:af:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
                           "type=Inaccessible, (Unregistered Agent ID)"),
              {"aer_fatal", S::kCritical, "0000:af:00.0", "", "Inaccessible"});
  // Ordinary lines are not events.
  for (const char* quiet : {"[   18.780940] IPv6: ADDRCONF(NETDEV_CHANGE): enp65s0f1: link becomes ready",
                            "[    5.376443] mlx5_core 0000:01:00.0: firmware version: 14.32.1010",
                            "[  204.791086] mlx5_core 0000:41:00.0: E-Switch: Disable: mode(LEGACY), nvfs(0)"}) {
    EXPECT_FALSE(ClassifyLine(quiet).has_value()) << quiet;
  }
}

TEST(KernelEventRulesTest, KmsgDeviceNamesTheEventWhenTheMessageDoesNot) {
  auto r = ParseKmsgRecord("3,77,5,-;Fatal error 3 detected\n SUBSYSTEM=pci\n DEVICE=+pci:0000:af:00.1\n");
  ASSERT_TRUE(r.ok());
  auto e = Builtin().Classify(*r);
  ExpectEvent(e, {"mlx5_fw_fatal", S::kCritical, "0000:af:00.1", "3", ""});
  EXPECT_EQ(e->sequence, std::optional<std::uint64_t>(77));
}

TEST(KernelEventRulesTest, ExcerptIsEscapedAndBounded) {
  std::string msg = "mlx5_core 0000:05:00.0: ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2), syndrome "
                    "(0x1), err(-22) \x1b[31mred\n fake line \xe2\x80\xae";
  msg.append(500, 'z');
  KernelLogRecord r;
  r.message = msg;
  auto e = Builtin().Classify(r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->excerpt.find('\x1b'), std::string::npos);
  EXPECT_EQ(e->excerpt.find('\n'), std::string::npos);
  EXPECT_NE(e->excerpt.find("\\x1b[31mred\\n"), std::string::npos) << e->excerpt;
  EXPECT_LT(e->excerpt.size(), 2 * KernelEventClassifier::kExcerptBytes);
  for (unsigned char c : e->excerpt) EXPECT_TRUE(c >= 0x20 && c < 0x7F) << e->excerpt;
}

TEST(KernelEventRulesTest, UserRulesRunOnTheSameEngine) {
  std::vector<KernelEventRule> rules = BuiltinKernelEventRules();
  rules.push_back({"irdma_reset", S::kCritical, R"(irdma.*Requesting a reset \(err=(?P<num>-?\d+)\))"});
  auto c = KernelEventClassifier::Create(rules);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rule_count(), BuiltinKernelEventRules().size() + 1);
  auto r = ParseSavedLogLine("[1.0] irdma 0000:3b:00.1: irdma_x: Requesting a reset (err=-5)", SavedLogFormat::kDmesg);
  ASSERT_TRUE(r.has_value());
  auto e = c->Classify(*r);
  ExpectEvent(e, {"irdma_reset", S::kCritical, "0000:3b:00.1", "-5", ""});
  // A user rule never shadows a built-in one: order is priority.
  r = ParseSavedLogLine("[1.0] mlx5_core 0000:41:00.0: Fatal error 1 detected", SavedLogFormat::kDmesg);
  EXPECT_EQ(c->Classify(*r)->name, "mlx5_fw_fatal");
}

TEST(KernelEventRulesTest, RefusesBadRulesNamingThem) {
  struct Case {
    KernelEventRule rule;
    std::string says;
  };
  const Case cases[] = {
      {{"Bad-Name", S::kInfo, "x"}, "rule 2 (\"Bad-Name\"): a name is 1-64 of a-z 0-9 _"},
      {{"", S::kInfo, "x"}, "a name is 1-64"},
      {{"first", S::kInfo, "y"}, "rule 2 (\"first\"): the name is used by an earlier rule"},
      {{"empty", S::kInfo, ""}, "rule 2 (\"empty\"): empty pattern"},
      {{"unclosed", S::kInfo, "(abc"}, "rule 2 (\"unclosed\"): missing )"},
      {{"backref", S::kInfo, R"((a)\1)"}, "rule 2 (\"backref\"): invalid escape"},
      {{"group", S::kInfo, "(?P<pcie>x)"}, "capture group \"pcie\" is not one of pci, dev, netdev, num, text"},
      {{"long", S::kInfo, std::string(2000, 'a')}, "pattern of 2000 bytes, at most 1024"},
      {{"late", S::kInfo, "(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)(l)(m)(n)(o)(?P<num>p)"},
       "capture group \"num\" is group 16, past the 15th"},
      {{"nested", S::kInfo, "((((a{100}){100}){100}){100})"}, "rule 2 (\"nested\"): invalid repetition size"},
      {{"huge", S::kInfo, [] {
          std::string p;  // 140 000 instructions: over the 1 MiB budget
          for (int i = 0; i < 140; ++i) p += "a{1000}";
          return p;
        }()},
       "rule 2 (\"huge\"): pattern too complex"},
  };
  for (const Case& c : cases) {
    auto made = KernelEventClassifier::Create({{"first", S::kInfo, "x"}, c.rule});
    ASSERT_FALSE(made.ok()) << c.says;
    EXPECT_NE(made.error().message.find(c.says), std::string::npos) << made.error().message;
    EXPECT_EQ(made.error().errno_value, EINVAL);
  }
  std::vector<KernelEventRule> too_many;
  for (int i = 0; i < 300; ++i) {
    std::string name = "r";
    name += std::to_string(i);
    too_many.push_back({name, S::kInfo, "x"});
  }
  auto made = KernelEventClassifier::Create(too_many);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("300 rules, at most 256"), std::string::npos) << made.error().message;
}

}  // namespace
}  // namespace rdmahd
