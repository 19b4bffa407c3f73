// Where tests find fixtures: the project's own under tests/fixtures, and the real captures under
// ../shared/fixtures/real (read in place, never copied into this repo).
#pragma once

#include <string>

namespace rdmahd::testing {

std::string SourceDir();                 // the project checkout
std::string ProjectFixture(const std::string& rel);  // tests/fixtures/<rel>
// ../shared/fixtures/real/<rel>; RDMAHD_REAL_FIXTURES overrides the base directory.
std::string RealFixture(const std::string& rel);
bool RealFixturesAvailable();

// A fresh temporary directory removed when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `content` to path()/rel, creating parent directories.
  void Write(const std::string& rel, const std::string& content) const;
  void MkDir(const std::string& rel) const;
  void Symlink(const std::string& target, const std::string& rel) const;

 private:
  std::string path_;
};

}  // namespace rdmahd::testing
