// PreadAll: the read of an open file from offset 0 under a byte cap, shared by NodeFs's whole-file
// reads and HeldFile's re-reads of held descriptors, with the wording of its errors. One concept
// apart from both: NodeFs (common/node_fs.h) opens and contains, HeldFiles (common/held_files.h)
// keeps descriptors; both read through here.
#pragma once

#include <cstddef>
#include <string>

#include "common/result.h"

namespace rdmahd {

// A cap as people write it: whole MiB in MiB, anything else in bytes.
std::string CapText(std::size_t bytes);

// Reads from offset 0 into buf, at most `max_bytes` (more is an error). A sysfs attribute is at
// most one page and is returned whole by the first read, so held sysfs descriptors stop at the
// first short read (one syscall per attribute); procfs seq_files may return less than asked before
// EOF, so whole-file reads go on until EOF. `buf` keeps its size between calls (growing only), so
// re-reads do not zero-fill a page each time; the content is the first `used` bytes. Errors are
// "read: ..." (the caller puts the path in).
Status PreadAll(int fd, std::string& buf, std::size_t& used_out, bool stop_on_short_read, std::size_t max_bytes);

// PreadAll's error `e` ("read: ...") with `path` put in ("read PATH: ...").
Error ReadError(const std::string& path, const Error& e);

}  // namespace rdmahd
