#include "daemon/libarchive_api.h"

#include <dlfcn.h>

#include <memory>
#include <string>

#include "common/excerpt.h"

namespace rdmahd {

Result<std::unique_ptr<const LibArchive>> LoadLibArchiveFrom(const char* soname) {
  const std::string what = std::string("the support bundle needs libarchive (") + soname + "; Debian: libarchive13)";
  void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Error{what + ": " + CapMessage(why ? why : "dlopen failed", 200), ENOENT};
  }
  auto lib = std::make_unique<LibArchive>();
  const char* missing = nullptr;
#define RDMAHD_LIBARCHIVE_RESOLVE(name)                                            \
  lib->name = reinterpret_cast<decltype(&::name)>(::dlsym(handle, #name));        \
  if (lib->name == nullptr && missing == nullptr) missing = #name;
  RDMAHD_LIBARCHIVE_FUNCTIONS(RDMAHD_LIBARCHIVE_RESOLVE)
#undef RDMAHD_LIBARCHIVE_RESOLVE
  if (missing != nullptr) {
    ::dlclose(handle);
    return Error{what + ": it has no " + missing + " (too old?)", ENOSYS};
  }
  // The handle is not closed: libarchive stays loaded for the process, as if it were linked.
  return std::unique_ptr<const LibArchive>(std::move(lib));
}

Result<const LibArchive*> LoadLibArchive() {
  static const Result<std::unique_ptr<const LibArchive>> loaded = LoadLibArchiveFrom(kLibArchiveSoname);
  if (!loaded.ok()) return loaded.error();
  return loaded->get();
}

}  // namespace rdmahd
