#include "tests/support/test_paths.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace rdmahd::testing {

std::string SourceDir() { return RDMAHD_SOURCE_DIR; }

std::string ProjectFixture(const std::string& rel) { return SourceDir() + "/tests/fixtures/" + rel; }

static std::string RealBase() {
  if (const char* env = std::getenv("RDMAHD_REAL_FIXTURES"); env && *env) return env;
  return SourceDir() + "/../shared/fixtures/real";
}

std::string RealFixture(const std::string& rel) { return RealBase() + "/" + rel; }

bool RealFixturesAvailable() { return fs::is_directory(RealBase()); }

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "rdmahd-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

void TempDir::Write(const std::string& rel, const std::string& content) const {
  fs::path p = fs::path(path_) / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
}

void TempDir::MkDir(const std::string& rel) const { fs::create_directories(fs::path(path_) / rel); }

void TempDir::Symlink(const std::string& target, const std::string& rel) const {
  fs::path p = fs::path(path_) / rel;
  fs::create_directories(p.parent_path());
  fs::create_symlink(target, p);
}

}  // namespace rdmahd::testing
