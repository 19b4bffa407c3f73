// The support bundle: redaction, the link rule, the hardened extraction of hostile archives, a
// capture of a small tree with links that leave it, and bundles judged by `check --capture`
// (daemon/capture_check_test.cc holds that command's own parts).
#include "daemon/capture.h"

#include <archive.h>
#include <linux/ethtool.h>
#include <archive_entry.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collectors/ethtool_stats.h"
#include "collectors/module_eeprom.h"
#include "config/policies.h"
#include "common/node_fs.h"
#include "core/collection_engine.h"
#include "daemon/capture_archive.h"
#include "daemon/capture_check.h"
#include "daemon/check_command.h"
#include "daemon/daemon.h"
#include "daemon/libarchive_api.h"
#include "parsers/dcb_json.h"
#include "parsers/ethtool_stats.h"
#include "tests/support/test_paths.h"
#include "tests/support/test_trees.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Exists(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0;
}

// ---- Redaction -----------------------------------------------------------------------------------

TEST(CaptureRedactTest, BasicAuthHashesAndKeyPathsAreRedactedTheRestKept) {
  const std::string hash = "$2y$10$X8ktMYbWqTXfa6pZmTNXXuXBvd1OZ3hWK9QC4WzWf6W7xQ0u9tF6e";
  const std::string web = "tls_server_config:\n  cert_file: /etc/rdma-healthd/tls.crt\n"
                          "  key_file: /etc/rdma-healthd/private/tls.key\n"
                          "basic_auth_users:\n  prometheus: '" + hash + "'\n  admin: '" + hash + "x'\n";
  auto out = RedactConfigYaml(web);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_THAT(*out, Not(HasSubstr("$2y$")));
  EXPECT_THAT(*out, Not(HasSubstr("private/tls.key")));
  EXPECT_THAT(*out, HasSubstr("/etc/rdma-healthd/tls.crt"));  // not a secret: kept
  EXPECT_THAT(*out, HasSubstr("prometheus: <redacted>"));
  EXPECT_THAT(*out, HasSubstr("admin: <redacted>"));
  EXPECT_THAT(*out, HasSubstr("key_file: <redacted>"));
}

TEST(CaptureRedactTest, NestedSecretKeysAnyCaseAndConfigKept) {
  auto out = RedactConfigYaml("ports: {min_rate_gbps: 100}\npeers:\n  - {Password: hunter2, host: a}\n");
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(*out, Not(HasSubstr("hunter2")));
  EXPECT_THAT(*out, HasSubstr("min_rate_gbps: 100"));
  EXPECT_THAT(*out, HasSubstr("host: a"));
}

TEST(CaptureRedactTest, TextThatIsNotYamlIsRefusedWithoutQuotingIt) {
  auto out = RedactConfigYaml("key_file: [unclosed secret-material-123\n");
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.error().message, Not(HasSubstr("secret-material-123")));
}

// ---- The kernel's answers, written as the tools print them, read back by the capture readers ----------



// A module that answers GMODULEINFO (SFF-8636, 256 bytes) and GMODULEEEPROM with bytes 0..255.
class FakeModuleIoctl : public EthtoolIoctl {
 public:
  Status Call(const std::string& ifname, std::span<std::uint8_t> buffer) override {
    if (ifname != "ens1f0np0") return Error{"no such device", ENODEV};
    std::uint32_t cmd;
    std::memcpy(&cmd, buffer.data(), sizeof cmd);
    if (cmd == ETHTOOL_GMODULEINFO) {
      ethtool_modinfo info{};
      info.cmd = cmd;
      info.type = ETH_MODULE_SFF_8636;
      info.eeprom_len = ETH_MODULE_SFF_8636_LEN;
      EXPECT_EQ(buffer.size(), sizeof info);
      std::memcpy(buffer.data(), &info, sizeof info);
      return Status::Ok();
    }
    EXPECT_EQ(cmd, static_cast<std::uint32_t>(ETHTOOL_GMODULEEEPROM));
    ethtool_eeprom req;
    std::memcpy(&req, buffer.data(), sizeof req);
    EXPECT_EQ(req.offset, 0u);
    EXPECT_EQ(buffer.size(), sizeof req + req.len);  // the data fits the buffer given
    for (std::uint32_t i = 0; i < req.len; ++i) buffer[sizeof req + i] = static_cast<std::uint8_t>(i);
    return Status::Ok();
  }
};

TEST(CaptureFormatTest, ModuleEepromIsTheFlatDumpOfTheLengthTheModuleGives) {
  FakeModuleIoctl ioctl;
  // The capture writes what the module collector's own read gives (collectors/module_eeprom.h).
  auto dump = ReadModuleEepromIoctl(ioctl, "ens1f0np0");
  ASSERT_TRUE(dump.ok()) << dump.error().message;
  ASSERT_EQ(dump->size(), 256u);
  EXPECT_EQ(static_cast<unsigned char>((*dump)[0]), 0u);
  EXPECT_EQ(static_cast<unsigned char>((*dump)[255]), 255u);
  EXPECT_FALSE(ReadModuleEepromIoctl(ioctl, "eth9").ok());  // no module: skipped with the reason
}

// ---- The link rule ---------------------------------------------------------------------------------

TEST(CaptureLinkRuleTest, RelativeLeadingClimbsWithinTheLinksDepthOnly) {
  EXPECT_TRUE(LinkTargetStaysInside("sys/class/net/eth0", "../../devices/virtual/net/eth0"));
  EXPECT_TRUE(LinkTargetStaysInside("sys/class/infiniband/mlx5_0", "../../../sys/devices/x"));
  EXPECT_TRUE(LinkTargetStaysInside("a/b", "c"));
  EXPECT_FALSE(LinkTargetStaysInside("sys/class/net/eth0", "../../../../etc"));  // above the folder
  EXPECT_FALSE(LinkTargetStaysInside("sys/l", "/etc/passwd"));                   // absolute
  EXPECT_FALSE(LinkTargetStaysInside("sys/a/l", "x/../.."));                     // ".." after a name
  EXPECT_FALSE(LinkTargetStaysInside("l", ".."));
  EXPECT_FALSE(LinkTargetStaysInside("sys/l", ""));
}

TEST(CaptureLinkRuleTest, ResolvesInsideFollowsLinks) {
  testing::TempDir dir;
  dir.Write("root/a/file", "x");
  dir.Symlink("a/file", "root/in");
  dir.Symlink("/etc", "root/out");
  dir.Symlink("../outside", "root/up");
  dir.Write("outside", "y");
  const std::string root = dir.path() + "/root";
  char real[PATH_MAX];
  ASSERT_NE(::realpath(root.c_str(), real), nullptr);
  EXPECT_TRUE(ResolvesInside(real, root + "/in"));
  EXPECT_FALSE(ResolvesInside(real, root + "/out"));
  EXPECT_FALSE(ResolvesInside(real, root + "/up"));
  EXPECT_FALSE(ResolvesInside(real, root + "/gone"));
}

// ---- Extraction of hostile archives -------------------------------------------------------------------

// Writes a .tar.gz of entries made by `add` with libarchive directly (names and types our writer
// would never produce).
void WriteTar(const std::string& path, const std::function<void(struct archive*)>& add) {
  struct archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  add(a);
  archive_write_close(a);
  archive_write_free(a);
}

void Entry(struct archive* a, const std::string& name, unsigned type, const std::string& data = "",
           const char* link = nullptr, const char* hardlink = nullptr) {
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_filetype(e, type);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, type == AE_IFREG && !hardlink ? static_cast<la_int64_t>(data.size()) : 0);
  if (link) archive_entry_set_symlink(e, link);
  if (hardlink) archive_entry_set_hardlink(e, hardlink);
  if (type == AE_IFCHR) archive_entry_set_rdev(e, makedev(1, 3));
  archive_write_header(a, e);
  if (!data.empty()) archive_write_data(a, data.data(), data.size());
  archive_entry_free(e);
}

struct ExtractCase {
  testing::TempDir dir;
  std::string tar() const { return dir.path() + "/bundle.tar.gz"; }
  std::string dest() const { return dir.path() + "/out"; }
  Status Run(const std::function<void(struct archive*)>& add, const ExtractLimits& limits = {}) {
    WriteTar(tar(), add);
    dir.MkDir("out");
    return ExtractCapture(tar(), dest(), limits);
  }
};

TEST(CaptureExtractTest, DotDotMemberIsRefusedAndNothingIsWrittenOutside) {
  ExtractCase c;
  Status s = c.Run([](struct archive* a) {
    Entry(a, "sys/ok", AE_IFREG, "1");
    Entry(a, "sys/../../escaped", AE_IFREG, "pwned");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("\"..\" component"));
  EXPECT_FALSE(Exists(c.dir.path() + "/escaped"));
}

TEST(CaptureExtractTest, AbsoluteMemberIsRefused) {
  ExtractCase c;
  const std::string target = c.dir.path() + "/abs-escaped";
  Status s = c.Run([&](struct archive* a) { Entry(a, target, AE_IFREG, "pwned"); });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("absolute path"));
  EXPECT_FALSE(Exists(target));
}

TEST(CaptureExtractTest, SymlinkEscapingIsRefused) {
  for (const char* target : {"../../../..", "/etc", "x/../../.."}) {
    ExtractCase c;
    Status s = c.Run([&](struct archive* a) { Entry(a, "sys/class/net/eth0", AE_IFLNK, "", target); });
    ASSERT_FALSE(s.ok()) << target;
    EXPECT_THAT(s.error().message, HasSubstr("points out of the capture")) << target;
    EXPECT_FALSE(Exists(c.dest() + "/sys/class/net/eth0")) << target;
  }
}

TEST(CaptureExtractTest, MemberUnderALinkIsRefused) {
  ExtractCase c;
  c.dir.MkDir("elsewhere");
  // "sys/l" -> "d" stays inside; "sys/l/x" would be written through it.
  Status s = c.Run([](struct archive* a) {
    Entry(a, "sys/d", AE_IFDIR);
    Entry(a, "sys/l", AE_IFLNK, "", "d");
    Entry(a, "sys/l/x", AE_IFREG, "through a link");
  });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("under a link"));
  EXPECT_FALSE(Exists(c.dest() + "/sys/d/x"));
}

TEST(CaptureExtractTest, OversizeMemberIsRefused) {
  ExtractCase c;
  ExtractLimits limits;
  limits.member_bytes = 1000;
  Status s = c.Run([](struct archive* a) { Entry(a, "kernel-log.txt", AE_IFREG, std::string(5000, 'a')); }, limits);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("bigger than 1000 bytes"));
}

std::string Numbered(std::string prefix, int i) {
  prefix.append(std::to_string(i));
  return prefix;
}

TEST(CaptureExtractTest, DiskBoundCountsWholeBlocksAndStopsABomb) {
  ExtractCase c;
  ExtractLimits limits;
  limits.disk_bytes = 100000;  // 20,000 bytes cost 5 blocks + an inode: 20,736; the fifth is over
  Status s = c.Run(
      [](struct archive* a) {
        for (const char* name : {"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"}) {
          Entry(a, name, AE_IFREG, std::string(20000, '\0'));
        }
      },
      limits);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("would take more than 100000 bytes of disk where it is extracted"));
  EXPECT_EQ(testing::FolderNames(c.dest()), std::vector<std::string>{});  // refused on the headers: nothing written
}

TEST(CaptureExtractTest, MemberDiskCostIsWholeBlocksAtLeastOnePlusAnInode) {
  EXPECT_EQ(MemberDiskCost(0), 4096u + 256u);
  EXPECT_EQ(MemberDiskCost(1), 4096u + 256u);
  EXPECT_EQ(MemberDiskCost(4096), 4096u + 256u);
  EXPECT_EQ(MemberDiskCost(4097), 8192u + 256u);
}

// Issue 41 item 3: 199,999 one-byte members took 781 MiB of TMPDIR under a bound that counted
// 200 KB. Many tiny members (and folders) are counted as what they cost, refused before anything
// is written.
TEST(CaptureExtractTest, ManyTinyMembersAreRefusedOnWhatTheyCostBeforeAnythingIsWritten) {
  ExtractCase c;
  ExtractLimits limits;
  limits.disk_bytes = 1u << 20;  // 300 one-byte members: 300 bytes, but 1.2 MiB on disk
  Status s = c.Run(
      [](struct archive* a) {
        for (int i = 0; i < 300; ++i) Entry(a, Numbered("sys/f", i), AE_IFREG, "1");
      },
      limits);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("more than 1 MiB of disk"));
  EXPECT_THAT(s.error().message, HasSubstr("whole 4 KiB blocks, at least one, plus 256 bytes for its inode"));
  EXPECT_EQ(testing::FolderNames(c.dest()), std::vector<std::string>{});
  ExtractCase folders;
  s = folders.Run(
      [](struct archive* a) {
        for (int i = 0; i < 300; ++i) Entry(a, Numbered("d", i), AE_IFDIR);
      },
      limits);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("more than 1 MiB of disk"));
  EXPECT_EQ(testing::FolderNames(folders.dest()), std::vector<std::string>{});
}

TEST(CaptureExtractTest, MemberCountIsRefusedBeforeAnythingIsWritten) {
  ExtractCase c;
  ExtractLimits limits;
  limits.members = 50;
  Status s = c.Run(
      [](struct archive* a) {
        for (int i = 0; i < 60; ++i) Entry(a, Numbered("f", i), AE_IFREG, "1");
      },
      limits);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("more than 50 members"));
  EXPECT_EQ(testing::FolderNames(c.dest()), std::vector<std::string>{});
  // The defaults take what `capture` writes at most (100,000 entries and manifest.json).
  const ExtractLimits d;
  EXPECT_EQ(d.members, 100001u);
  EXPECT_GE(d.disk_bytes, (64u << 20) + d.members * MemberDiskCost(0));
}

TEST(CaptureExtractTest, DevicesAndHardLinksAreRefused) {
  {
    ExtractCase c;
    Status s = c.Run([](struct archive* a) { Entry(a, "dev/null", AE_IFCHR); });
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error().message, HasSubstr("not a regular file"));
    EXPECT_FALSE(Exists(c.dest() + "/dev/null"));
  }
  {
    ExtractCase c;
    Status s = c.Run([](struct archive* a) {
      Entry(a, "a", AE_IFREG, "x");
      Entry(a, "b", AE_IFREG, "", nullptr, "/etc/shadow");
    });
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error().message, HasSubstr("hard link"));
  }
}

TEST(CaptureExtractTest, NotAnArchiveIsAnError) {
  testing::TempDir dir;
  dir.Write("x.tar.gz", "definitely not gzip");
  dir.MkDir("out");
  EXPECT_FALSE(ExtractCapture(dir.path() + "/x.tar.gz", dir.path() + "/out").ok());
}

TEST(CaptureExtractTest, WriterRoundTripKeepsFilesFoldersAndLinks) {
  testing::TempDir dir;
  const std::string tar = dir.path() + "/b.tar.gz";
  auto w = CaptureArchiveWriter::Create(tar, 1700000000);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE((*w)->AddDir("sys/class/infiniband").ok());
  ASSERT_TRUE((*w)->AddFile("sys/devices/virtual/infiniband/rxe0/fw_ver", "0.0.0\n").ok());
  ASSERT_TRUE((*w)->AddSymlink("sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0").ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_FALSE(Exists(tar + ".partial"));
  // An existing output is never overwritten.
  EXPECT_FALSE(CaptureArchiveWriter::Create(tar, 0).ok());
  dir.MkDir("out");
  ASSERT_TRUE(ExtractCapture(tar, dir.path() + "/out").ok());
  EXPECT_EQ(Slurp(dir.path() + "/out/sys/class/infiniband/rxe0/fw_ver"), "0.0.0\n");
}

// Issue 41 item 6: a file created at the output path while the capture ran was replaced by
// rename(). Both temporaries (unnamed, and the named fallback) publish with a link that fails.
TEST(CaptureWriterTest, FileCreatedAtTheOutputDuringTheCaptureIsNeverReplaced) {
  for (auto kind : {CaptureArchiveWriter::Temp::kUnnamedIfSupported, CaptureArchiveWriter::Temp::kNamed}) {
    testing::TempDir dir;
    const std::string tar = dir.path() + "/b.tar.gz";
    auto w = CaptureArchiveWriter::Create(tar, 1700000000, kind);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE((*w)->AddFile("check.json", "{}\n").ok());
    dir.Write("b.tar.gz", "keep me");
    Status s = (*w)->Finish();
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error().message, HasSubstr("was created while the capture ran: left as it is"));
    EXPECT_EQ(Slurp(tar), "keep me");
    w->reset();
    EXPECT_EQ(testing::FolderNames(dir.path()), std::vector<std::string>{"b.tar.gz"});  // no temporary left
  }
}

TEST(CaptureWriterTest, LeftoverPartialOfAKilledCaptureDoesNotBlockTheNext) {
  for (auto kind : {CaptureArchiveWriter::Temp::kUnnamedIfSupported, CaptureArchiveWriter::Temp::kNamed}) {
    testing::TempDir dir;
    const std::string tar = dir.path() + "/b.tar.gz";
    dir.Write("b.tar.gz.partial", "left by a capture killed with SIGTERM");
    auto w = CaptureArchiveWriter::Create(tar, 1700000000, kind);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE((*w)->AddFile("check.json", "{}\n").ok());
    ASSERT_TRUE((*w)->Finish().ok());
    w->reset();
    EXPECT_EQ(testing::FolderNames(dir.path()), (std::vector<std::string>{"b.tar.gz", "b.tar.gz.partial"}));
    struct stat st{};
    ASSERT_EQ(::stat(tar.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    dir.MkDir("out");
    ASSERT_TRUE(ExtractCapture(tar, dir.path() + "/out").ok());
    EXPECT_EQ(Slurp(dir.path() + "/out/check.json"), "{}\n");
  }
}

TEST(CaptureWriterTest, UnfinishedNamedTemporaryIsRemoved) {
  testing::TempDir dir;
  auto w = CaptureArchiveWriter::Create(dir.path() + "/b.tar.gz", 0, CaptureArchiveWriter::Temp::kNamed);
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(testing::FolderNames(dir.path()).size(), 1u);  // b.tar.gz.partial-XXXXXX
  EXPECT_THAT(testing::FolderNames(dir.path())[0], ::testing::StartsWith("b.tar.gz.partial-"));
  w->reset();
  EXPECT_EQ(testing::FolderNames(dir.path()), std::vector<std::string>{});
}

// Issue 41 item 2: the extraction folder was left behind on SIGINT/SIGTERM. A TempDir is removed
// by the signal's handler, and the process still dies of the signal.
TEST(CaptureTempDirTest, RemovedOnSigtermAndTheProcessDiesOfIt) {
  for (int sig : {SIGTERM, SIGINT}) {
    testing::TempDir base;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::setenv("TMPDIR", base.path().c_str(), 1);
      auto t = rdmahd::TempDir::Create("rdma-healthd-capture-");
      if (!t) ::_exit(3);
      // A deep tree with many entries, as an extracted bundle has.
      std::string d = t->path();
      for (int i = 0; i < 40; ++i) {
        d += "/d" + std::to_string(i);
        ::mkdir(d.c_str(), 0755);
        for (int f = 0; f < 30; ++f) {
          const int fd = ::open((d + "/f" + std::to_string(f)).c_str(), O_CREAT | O_WRONLY, 0644);
          if (fd >= 0) ::close(fd);
        }
        if (::symlink("..", (d + "/up").c_str()) != 0) ::_exit(4);
      }
      ::raise(sig);
      ::_exit(5);  // not reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(testing::FolderNames(base.path()), std::vector<std::string>{});
  }
}





// libarchive is loaded when a bundle is made or read, not linked into the daemon.
TEST(CaptureLibArchiveTest, AMissingLibraryIsAnErrorNamingItAndItsPackage) {
  auto lib = LoadLibArchiveFrom("librdmahd-no-such-archive.so.13");
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.error().message, HasSubstr("librdmahd-no-such-archive.so.13"));
  EXPECT_THAT(lib.error().message, HasSubstr("libarchive13"));
  EXPECT_THAT(lib.error().message, HasSubstr("support bundle"));
}

TEST(CaptureLibArchiveTest, TheBuildsLibraryLoadsWithEveryFunctionAndOnce) {
  auto first = LoadLibArchive();
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto again = LoadLibArchive();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*first, *again);
  // The same library the test binary links to write hostile archives: the very same functions.
  EXPECT_EQ((*first)->archive_write_new, &::archive_write_new);
  EXPECT_EQ((*first)->archive_entry_size, &::archive_entry_size);
  auto fresh = LoadLibArchiveFrom(kLibArchiveSoname);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_EQ((*fresh)->archive_read_next_header, &::archive_read_next_header);
}

// ---- A capture of a tree with links that leave it ------------------------------------------------------

TEST(CaptureCommandTest, LinksOutOfTheTreeAreNotFollowedAndSaidInTheManifest) {
  testing::TempDir dir;
  dir.Write("secret", "host-private-data\n");
  dir.Write("node/sys/devices/virtual/net/eth0/mtu", "1500\n");
  dir.Symlink("../../devices/virtual/net/eth0", "node/sys/class/net/eth0");
  dir.Symlink("../../../../../../secret", "node/sys/devices/virtual/net/eth0/operstate");  // file link out
  dir.Symlink("../../../..", "node/sys/class/net/evil");                            // folder link out
  dir.Symlink(dir.path() + "/secret", "node/sys/class/net/abs");                     // absolute
  dir.MkDir("node/sys/class/infiniband");
  dir.Write("node/proc/meminfo", "MemTotal: 1 kB\n");
  Options o;
  o.sysfs = dir.path() + "/node/sys";
  o.procfs = dir.path() + "/node/proc";
  o.capture_output = dir.path() + "/bundle.tar.gz";
  o.capture_timeout_s = 30;
  std::ostringstream out, err;
  CollectionEngine engine(MakeNodeFs(o));
  ASSERT_EQ(RunCaptureCommand(o, engine, out, err), 0) << err.str();
  dir.MkDir("x");
  const std::string x = dir.path() + "/x";
  ASSERT_TRUE(ExtractCapture(o.capture_output, x).ok());
  EXPECT_EQ(Slurp(x + "/sys/devices/virtual/net/eth0/mtu"), "1500\n");
  EXPECT_EQ(Slurp(x + "/sys/class/net/eth0/mtu"), "1500\n");  // the link kept, resolving inside
  EXPECT_FALSE(Exists(x + "/sys/devices/virtual/net/eth0/operstate"));
  EXPECT_FALSE(Exists(x + "/sys/class/net/evil"));
  EXPECT_FALSE(Exists(x + "/sys/class/net/abs"));
  EXPECT_EQ(Slurp(x + "/proc/meminfo"), "MemTotal: 1 kB\n");
  const std::string manifest = Slurp(x + "/manifest.json");
  EXPECT_THAT(manifest, HasSubstr("sys/class/net/evil"));
  EXPECT_THAT(manifest, HasSubstr("climbs out of the capture"));
  EXPECT_THAT(manifest, HasSubstr("sys/devices/virtual/net/eth0/operstate"));
  EXPECT_TRUE(Exists(x + "/check.json"));
  EXPECT_TRUE(Exists(x + "/metrics.txt"));
  // Nothing of the host's file anywhere in the bundle.
  EXPECT_THAT(Slurp(o.capture_output), Not(HasSubstr("host-private-data")));
  for (const char* f : {"/manifest.json", "/check.json", "/metrics.txt"}) {
    EXPECT_THAT(Slurp(x + f), Not(HasSubstr("host-private-data"))) << f;
  }
}

// The members of the archive at `path` by type, manifest.json left out.
struct Counted {
  std::uint64_t files = 0, folders = 0, links = 0;
};
Counted CountArchive(const std::string& path) {
  Counted c;
  struct archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_all(a);
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 16384), ARCHIVE_OK);
  archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(e);
    switch (archive_entry_filetype(e)) {
      case AE_IFREG: c.files += name != "manifest.json"; break;
      case AE_IFDIR: ++c.folders; break;
      case AE_IFLNK: ++c.links; break;
      default: break;
    }
    archive_read_data_skip(a);
  }
  archive_read_free(a);
  return c;
}

// A small generated tree: sysfs with folders and links, and a procfs of its own naming its kernel.
void WriteTree(const testing::TempDir& dir, bool with_kernel) {
  dir.Write("node/sys/devices/virtual/net/eth0/mtu", "1500\n");
  dir.Write("node/sys/devices/virtual/net/eth0/operstate", "up\n");
  dir.Symlink("../../devices/virtual/net/eth0", "node/sys/class/net/eth0");
  dir.MkDir("node/sys/class/infiniband");
  dir.Write("node/proc/meminfo", "MemTotal: 1 kB\n");
  if (with_kernel) {
    dir.Write("node/proc/sys/kernel/osrelease", "5.15.0-rdmahd-fixture\n");
    dir.Write("node/proc/sys/kernel/hostname", "gpu-node-17\n");
  }
}

nlohmann::json CaptureManifest(const testing::TempDir& dir, const Options& o) {
  std::ostringstream out, err;
  CollectionEngine engine(MakeNodeFs(o));
  EXPECT_EQ(RunCaptureCommand(o, engine, out, err), 0) << err.str();
  const std::string x = dir.path() + "/x";
  dir.MkDir("x");
  EXPECT_TRUE(ExtractCapture(o.capture_output, x).ok());
  return nlohmann::json::parse(Slurp(x + "/manifest.json"));
}

Options TreeOptions(const testing::TempDir& dir) {
  Options o;
  o.sysfs = dir.path() + "/node/sys";
  o.procfs = dir.path() + "/node/proc";
  o.capture_output = dir.path() + "/bundle.tar.gz";
  o.capture_timeout_s = 30;
  return o;
}

TEST(CaptureCommandTest, ManifestCountsFilesApartFromFoldersAndLinks) {
  testing::TempDir dir;
  WriteTree(dir, true);
  const nlohmann::json m = CaptureManifest(dir, TreeOptions(dir));
  const Counted c = CountArchive(dir.path() + "/bundle.tar.gz");
  EXPECT_GE(c.folders, 3u);
  EXPECT_GT(c.files, 3u);
  EXPECT_GE(c.links, 1u);
  EXPECT_EQ(m["files"].get<std::uint64_t>(), c.files) << m.dump(2);
  EXPECT_EQ(m["folders"].get<std::uint64_t>(), c.folders) << m.dump(2);
  EXPECT_EQ(m["links"].get<std::uint64_t>(), c.links) << m.dump(2);
  EXPECT_EQ(m["entries"].get<std::uint64_t>(), c.files + c.folders + c.links);
  EXPECT_EQ(m["limits"]["entries"], 100000);
}

TEST(CaptureCommandTest, ATreeThatIsNotTheLiveNodeDoesNotClaimThisMachinesKernel) {
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  {
    testing::TempDir dir;
    WriteTree(dir, /*with_kernel=*/true);
    const nlohmann::json m = CaptureManifest(dir, TreeOptions(dir));
    EXPECT_FALSE(m["live"].get<bool>());
    // The tree's own word for its kernel and name.
    EXPECT_EQ(m["versions"]["kernel_release"], "5.15.0-rdmahd-fixture");
    EXPECT_EQ(m["hostname"], "gpu-node-17");
    EXPECT_TRUE(m["versions"]["machine"].is_null());
    EXPECT_THAT(m["kernel_source"].get<std::string>(), HasSubstr("the tree's procfs"));
    EXPECT_THAT(m.dump(), Not(HasSubstr(std::string("\"") + u.version + "\"")));
  }
  {
    testing::TempDir dir;
    WriteTree(dir, /*with_kernel=*/false);
    const nlohmann::json m = CaptureManifest(dir, TreeOptions(dir));
    EXPECT_TRUE(m["versions"]["kernel_release"].is_null()) << m.dump(2);
    EXPECT_TRUE(m["versions"]["kernel_version"].is_null()) << m.dump(2);
    EXPECT_TRUE(m["hostname"].is_null()) << m.dump(2);
    EXPECT_THAT(m["kernel_source"].get<std::string>(), HasSubstr("unknown"));
    EXPECT_THAT(m.dump(), Not(HasSubstr(std::string("\"") + u.release + "\"")));
  }
  {
    // The tree's sysfs with this machine's /proc: whose kernel that is says nothing of the tree's.
    testing::TempDir dir;
    WriteTree(dir, /*with_kernel=*/true);
    Options o = TreeOptions(dir);
    o.procfs = "/proc";
    const nlohmann::json m = CaptureManifest(dir, o);
    EXPECT_TRUE(m["versions"]["kernel_release"].is_null()) << m.dump(2);
    EXPECT_THAT(m["kernel_source"].get<std::string>(), HasSubstr("this machine's /proc"));
  }
}

// The flags that read the project's fixture node `rel` (tests/fixtures/rel: sys, proc, dcb, dev)
// for a capture of it.
Options FixtureNodeFlags(const std::string& rel) {
  const std::string node = testing::ProjectFixture(rel);
  Options o;
  o.sysfs = node + "/sys";
  o.procfs = node + "/proc";
  o.dcb_dir = node + "/dcb";
  o.dev = node + "/dev";
  o.capture_timeout_s = 30;
  return o;
}

// `rdma-healthd capture` of `o` into o.capture_output: its exit code, its stderr a test failure.
int CaptureBundle(const Options& o) {
  std::ostringstream out, err;
  CollectionEngine engine(MakeNodeFs(o));
  const int code = RunCaptureCommand(o, engine, out, err);
  if (code != 0) ADD_FAILURE() << err.str();
  return code;
}

TEST(CaptureCommandTest, ABundleJudgedNamesFilesInItNotItsDeletedFolder) {
  testing::TempDir dir;
  const std::string node = testing::ProjectFixture("host/device-readiness");
  Options made = FixtureNodeFlags("host/device-readiness");
  made.kmsg = node + "/dmesg.txt";
  made.config_file = node + "/config.yaml";
  made.capture_output = dir.path() + "/bundle.tar.gz";
  ASSERT_EQ(CaptureBundle(made), 0);
  for (const char* output : {"json", "table", "summary"}) {
    SCOPED_TRACE(output);
    Options o;
    o.check_capture = made.capture_output;
    o.output = output;
    auto opened = OpenCaptureForCheck(o);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    const std::string root = opened->path();
    ASSERT_EQ(ExtractedCaptureRoot(o), root);
    std::ostringstream out, err;
    CollectionEngine engine(MakeNodeFs(o));
    const int code = RunCheckCommand(o, engine, out, err);
    EXPECT_TRUE(code == 0 || code == 1) << err.str();
    const std::string printed = out.str();
    EXPECT_THAT(printed, Not(HasSubstr(root))) << printed;
    EXPECT_THAT(printed, Not(HasSubstr("rdma-healthd-capture-"))) << printed;
    if (std::string(output) == "json") {
      const auto j = nlohmann::json::parse(printed);
      EXPECT_EQ(j["config"], "config/config.yaml");
    }
  }
  EXPECT_EQ(BundleRelative("/t/b/kernel-log.txt; /t/b; /t/bx/y", "/t/b"), "kernel-log.txt; the bundle; /t/bx/y");
}

// A bundle's own config is data about the captured node: a pid_file it names (here a secret of
// the machine that judges the bundle) is read inside the extraction, never on this machine, and
// nothing of the file reaches the verdicts (issue 41, item 1).
TEST(CaptureCheckTest, ABundlesConfigNamesNoFileOfTheMachineThatJudgesIt) {
  testing::TempDir dir;
  dir.Write("secret.txt", "root:$6$ANALYSTSECRET:19000:0:99999:7:::\n");
  dir.Write("config.yaml", "host:\n  workloads:\n    - name: job\n      pid_file: " + dir.path() + "/secret.txt\n");
  Options made = FixtureNodeFlags("host/device-readiness");
  made.config_file = dir.path() + "/config.yaml";
  made.capture_output = dir.path() + "/bundle.tar.gz";
  ASSERT_EQ(CaptureBundle(made), 0);
  Options o;
  o.check_capture = made.capture_output;
  o.output = "json";
  auto opened = OpenCaptureForCheck(o);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const std::string root = opened->path();
  auto config = LoadEffectiveConfig(o);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const auto& workloads = (*config)->Section<WorkloadsPolicy>().workloads;
  ASSERT_EQ(workloads.size(), 1u);
  EXPECT_EQ(workloads[0].pid_file, root + dir.path() + "/secret.txt");  // under the extraction
  std::ostringstream out, err;
  CollectionEngine engine(MakeNodeFs(o));
  RunCheckCommand(o, engine, out, err);
  EXPECT_THAT(out.str() + err.str(), Not(HasSubstr("ANALYSTSECRET")));
  EXPECT_THAT(out.str() + err.str(), Not(HasSubstr("root:$6$")));
  // A config the analyst names is this machine's own: its paths stay as written.
  Options own = o;
  own.config_file = made.config_file;
  own.config_captured_root.clear();
  auto own_config = LoadEffectiveConfig(own);
  ASSERT_TRUE(own_config.ok()) << own_config.error().message;
  EXPECT_EQ((*own_config)->Section<WorkloadsPolicy>().workloads.at(0).pid_file, dir.path() + "/secret.txt");
}


// ---- What the flags name (issue 41, item 5) -------------------------------------------------------
// `capture` carries a file a flag names only as the kind of file the flag means, written from what
// was parsed: a private key, a password file or a folder of anything given by mistake (or by a
// hostile wrapper script) never reaches a bundle that crosses machines.

// Every byte of every regular file of the bundle at `path`, manifest.json included.
std::string BundleBytes(const testing::TempDir& dir, const std::string& path) {
  const std::string x = dir.path() + "/bundle-x";
  std::filesystem::remove_all(x);
  std::filesystem::create_directories(x);
  EXPECT_TRUE(ExtractCapture(path, x).ok());
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(x)) {
    if (e.is_regular_file() && !e.is_symlink()) all += e.path().string().substr(x.size()) + "\n" + Slurp(e.path()) + "\n";
  }
  return all;
}

nlohmann::json BundleManifest(const testing::TempDir& dir, const std::string& path) {
  const std::string x = dir.path() + "/bundle-m";
  std::filesystem::remove_all(x);
  std::filesystem::create_directories(x);
  EXPECT_TRUE(ExtractCapture(path, x).ok());
  return nlohmann::json::parse(Slurp(x + "/manifest.json"));
}

// The manifest's skip reason for `member`, "" when it is not skipped.
std::string SkipReason(const nlohmann::json& m, const std::string& member) {
  for (const auto& s : m["skipped"]) {
    if (s["path"] == member) return s["reason"].get<std::string>();
  }
  return "";
}

constexpr const char* kPrivateKey =
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC-KEYMATERIAL-4f2a\n-----END PRIVATE KEY-----\n";

TEST(CaptureFlagsTest, APrivateKeyGivenAsTheWebConfigIsNotCarried) {
  testing::TempDir dir;
  dir.Write("server.key", kPrivateKey);
  Options o = FixtureNodeFlags("host/device-readiness");
  o.web_config_file = dir.path() + "/server.key";  // one YAML scalar: it once "redacted" to itself
  o.capture_output = dir.path() + "/bundle.tar.gz";
  ASSERT_EQ(CaptureBundle(o), 0);
  const std::string bytes = BundleBytes(dir, o.capture_output);
  EXPECT_THAT(bytes, Not(HasSubstr("KEYMATERIAL")));
  EXPECT_THAT(bytes, Not(HasSubstr("PRIVATE KEY")));
  const nlohmann::json m = BundleManifest(dir, o.capture_output);
  EXPECT_THAT(SkipReason(m, "config/web-config.yaml"), HasSubstr("left out: it does not load as a web config"));
}

TEST(CaptureFlagsTest, AWebConfigIsCarriedAsItsSettingsWithNoSecret) {
  testing::TempDir dir;
  dir.Write("server.crt", "-----BEGIN CERTIFICATE-----\nMIIB-CERTBYTES\n-----END CERTIFICATE-----\n");
  dir.Write("server.key", kPrivateKey);
  dir.Write("web.yml",
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n"
            "basic_auth_users:\n  alice: $2y$10$HASHOFALICEHASHOFALICEHASHOFALICEHASHOFALICEHASHOFALI\n");
  Options o = FixtureNodeFlags("host/device-readiness");
  o.web_config_file = dir.path() + "/web.yml";
  o.capture_output = dir.path() + "/bundle.tar.gz";
  ASSERT_EQ(CaptureBundle(o), 0);
  const std::string bytes = BundleBytes(dir, o.capture_output);
  for (const char* secret : {"KEYMATERIAL", "PRIVATE KEY", "HASHOFALICE", "CERTBYTES"}) {
    EXPECT_THAT(bytes, Not(HasSubstr(secret))) << secret;
  }
  const std::string x = dir.path() + "/x";
  dir.MkDir("x");
  ASSERT_TRUE(ExtractCapture(o.capture_output, x).ok());
  const YAML::Node web = YAML::LoadFile(x + "/config/web-config.yaml");
  EXPECT_EQ(web["tls_server_config"]["cert_file"].as<std::string>(), dir.path() + "/server.crt");
  EXPECT_EQ(web["tls_server_config"]["key_file"].as<std::string>(), "<redacted>");
  EXPECT_EQ(web["tls_server_config"]["min_version"].as<std::string>(), "TLS13");
  EXPECT_EQ(web["basic_auth_users"]["alice"].as<std::string>(), "<redacted>");
}

TEST(CaptureFlagsTest, AKmsgFlagNamingAnyOtherFileCarriesNothingOfIt) {
  testing::TempDir dir;
  dir.Write("shadow", "root:$6$ROOTHASH.x:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n");
  Options o = FixtureNodeFlags("host/device-readiness");
  o.kmsg = dir.path() + "/shadow";
  o.capture_output = dir.path() + "/bundle.tar.gz";
  ASSERT_EQ(CaptureBundle(o), 0);
  EXPECT_THAT(BundleBytes(dir, o.capture_output), Not(HasSubstr("ROOTHASH")));
  const nlohmann::json m = BundleManifest(dir, o.capture_output);
  EXPECT_THAT(SkipReason(m, "kernel-log.txt"), HasSubstr("no line is a kernel log record with its prefix"));
}

TEST(CaptureFlagsTest, ASavedKernelLogCarriesItsRecordsAndNothingElse) {
  testing::TempDir dir;
  const std::string record = "[  12.925245] mlx5_core 0000:03:00.0: mlx5_fw_fatal_reporter_err_work:721: health recovery";
  dir.Write("dmesg.txt", record + "\nroot:$6$ROOTHASH.x:19000:0:99999:7:::\n" + record + "\n");
  dir.Write("kmsg.txt", "3,1,12925245,-;mlx5_core 0000:03:00.0: fatal\n SUBSYSTEM=pci\n DEVICE=+pci:0000:03:00.0\n"
                        " SECRET=ROOTHASH\nroot:ROOTHASH\n");
  for (const char* file : {"dmesg.txt", "kmsg.txt"}) {
    SCOPED_TRACE(file);
    Options o = FixtureNodeFlags("host/device-readiness");
    o.kmsg = dir.path() + "/" + file;
    o.capture_output = dir.path() + "/" + file + ".tar.gz";
    ASSERT_EQ(CaptureBundle(o), 0);
    const std::string x = dir.path() + "/" + file + "-x";
    dir.MkDir(std::string(file) + "-x");
    ASSERT_TRUE(ExtractCapture(o.capture_output, x).ok());
    const std::string carried = Slurp(x + "/kernel-log.txt");
    EXPECT_THAT(carried, Not(HasSubstr("root:"))) << carried;
    if (std::string(file) == "dmesg.txt") {
      EXPECT_EQ(carried, record + "\n" + record + "\n");
    } else {
      // The record's own KEY=VALUE lines follow it (a value the kernel wrote is its to write).
      EXPECT_EQ(carried, "3,1,12925245,-;mlx5_core 0000:03:00.0: fatal\n SUBSYSTEM=pci\n DEVICE=+pci:0000:03:00.0\n"
                         " SECRET=ROOTHASH\n");
    }
    const nlohmann::json m = nlohmann::json::parse(Slurp(x + "/manifest.json"));
    EXPECT_THAT(m["notes"].dump(), HasSubstr("kernel-log.txt: 1 lines of --path.kmsg that are not"));
  }
}

TEST(CaptureFlagsTest, ADcbFolderCarriesOnlyTheFilesTheDaemonReadsAsParsed) {
  testing::TempDir dir;
  const std::string node = testing::ProjectFixture("host/device-readiness");
  const std::string dcb = dir.path() + "/dcb";
  std::filesystem::copy(node + "/dcb", dcb, std::filesystem::copy_options::recursive);
  dir.Write("dcb/id_rsa", std::string(kPrivateKey));
  dir.Write("dcb/ens1f0np0/notes.txt", "SECRET-NOTE\n");
  dir.Write("dcb/ens1f1np1/ethtool-a.txt", std::string(kPrivateKey));  // not `ethtool -a` output
  dir.Write("outside/pfc.json", "{\"pfc_cap\":8,\"prio_pfc\":[{\"prio\":0,\"enabled\":false}],\"SECRET\":\"OUTSIDE\"}\n");
  dir.Symlink("../outside", "dcb/ens9");
  Options o = FixtureNodeFlags("host/device-readiness");
  o.config_file = node + "/config.yaml";  // RoCE on priority 3: the DCB files decide verdicts
  o.dcb_dir = dcb;
  o.capture_output = dir.path() + "/bundle.tar.gz";
  ASSERT_EQ(CaptureBundle(o), 0);
  const std::string bytes = BundleBytes(dir, o.capture_output);
  for (const char* secret : {"KEYMATERIAL", "PRIVATE KEY", "SECRET-NOTE", "OUTSIDE", "id_rsa", "notes.txt"}) {
    EXPECT_THAT(bytes, Not(HasSubstr(secret))) << secret;
  }
  const nlohmann::json m = BundleManifest(dir, o.capture_output);
  EXPECT_THAT(SkipReason(m, "dcb/ens1f1np1/ethtool-a.txt"), HasSubstr("left out: not `ethtool -a` output"));
  EXPECT_THAT(m["notes"].dump(), HasSubstr("3 other entries there left out"));

  // What the daemon judges from the carried files is what it judges from the folder.
  auto verdicts = [](Options flags) {
    flags.output = "json";
    std::ostringstream out, err;
    CollectionEngine engine(MakeNodeFs(flags));
    RunCheckCommand(flags, engine, out, err);
    std::map<std::string, std::string> v;
    const auto doc = nlohmann::json::parse(out.str(), nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << out.str() << err.str();
    if (doc.is_discarded()) return v;
    for (const auto& x : doc["verdicts"]) {
      const std::string subject = x["subject"];
      if (subject.rfind("ens1f0np0", 0) == 0) v[x["check"].get<std::string>() + " " + subject] = x.dump();
    }
    return v;
  };
  Options judged;
  judged.check_capture = o.capture_output;
  judged.config_file = node + "/config.yaml";
  auto opened = OpenCaptureForCheck(judged);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const auto from_bundle = verdicts(judged);
  Options direct = FixtureNodeFlags("host/device-readiness");
  direct.config_file = node + "/config.yaml";
  const auto from_node = verdicts(direct);
  EXPECT_GE(from_node.size(), 5u);
  EXPECT_EQ(from_bundle, from_node);
}
}  // namespace
}  // namespace rdmahd
