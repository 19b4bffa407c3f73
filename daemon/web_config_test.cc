#include "daemon/web_config.h"

#include <gtest/gtest.h>

namespace rdmahd {
namespace {
}  // namespace
}  // namespace rdmahd
