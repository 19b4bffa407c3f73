// The libarchive functions the support bundle uses, loaded when a bundle is first written or read.
//
// libarchive is not linked: linking it maps and relocates it and what it needs (libxml2, ICU, libbz2,
// libacl, ...) into every rdma-healthd process, resident on every node for a command an operator
// runs now and then (docs/performance.md has the figure). `rdma-healthd capture` and `check --capture` load it with dlopen;
// the daemon serving /metrics never does. The .deb depends on libarchive13 all the same.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "common/result.h"

namespace rdmahd {

// The functions by their libarchive names, typed from libarchive's own header.
#define RDMAHD_LIBARCHIVE_FUNCTIONS(X)                                                            \
  X(archive_error_string)                                                                         \
  X(archive_free)                                                                                 \
  X(archive_write_new)                                                                            \
  X(archive_write_add_filter_gzip)                                                                \
  X(archive_write_set_format_pax_restricted)                                                      \
  X(archive_write_open_fd)                                                                        \
  X(archive_write_header)                                                                         \
  X(archive_write_data)                                                                           \
  X(archive_write_close)                                                                          \
  X(archive_read_new)                                                                             \
  X(archive_read_support_filter_gzip)                                                             \
  X(archive_read_support_format_tar)                                                              \
  X(archive_read_open_fd)                                                                         \
  X(archive_read_next_header)                                                                     \
  X(archive_read_data)                                                                            \
  X(archive_entry_new)                                                                            \
  X(archive_entry_free)                                                                           \
  X(archive_entry_set_pathname)                                                                   \
  X(archive_entry_set_filetype)                                                                   \
  X(archive_entry_set_perm)                                                                       \
  X(archive_entry_set_mtime)                                                                      \
  X(archive_entry_set_uid)                                                                        \
  X(archive_entry_set_gid)                                                                        \
  X(archive_entry_set_size)                                                                       \
  X(archive_entry_set_symlink)                                                                    \
  X(archive_entry_pathname)                                                                       \
  X(archive_entry_hardlink)                                                                       \
  X(archive_entry_filetype)                                                                       \
  X(archive_entry_symlink)                                                                        \
  X(archive_entry_size_is_set)                                                                    \
  X(archive_entry_size)

struct LibArchive {
#define RDMAHD_LIBARCHIVE_MEMBER(name) decltype(&::name) name = nullptr;
  RDMAHD_LIBARCHIVE_FUNCTIONS(RDMAHD_LIBARCHIVE_MEMBER)
#undef RDMAHD_LIBARCHIVE_MEMBER
};

// The library this build was compiled against: libarchive 3.x has had soname 13 throughout.
inline constexpr const char* kLibArchiveSoname = "libarchive.so.13";
static_assert(ARCHIVE_VERSION_NUMBER >= 3000000 && ARCHIVE_VERSION_NUMBER < 4000000,
              "libarchive 3.x (libarchive.so.13) expected");

// libarchive, loaded at the first call and kept for the process; or why it cannot be (the library
// missing or without one of the functions), naming it and the package that has it.
Result<const LibArchive*> LoadLibArchive();
// The same from `soname`, loaded anew (the library itself stays loaded for the process). For tests.
Result<std::unique_ptr<const LibArchive>> LoadLibArchiveFrom(const char* soname);

}  // namespace rdmahd
