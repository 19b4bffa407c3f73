#include "common/result.h"

#include <cstring>

namespace rdmahd {

Error Error::FromErrno(std::string what, int err) {
  what += ": ";
  what += std::strerror(err);
  return Error{std::move(what), err};
}

}  // namespace rdmahd
