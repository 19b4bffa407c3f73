// The engine contains plug-in exceptions (a collector, check or probe that throws fails alone);
// this turns the one being handled into a message for its outcome and the log.
#pragma once

#include <exception>
#include <string>

namespace rdmahd {

// The message of the exception being handled. Call only inside a catch block.
inline std::string CurrentExceptionMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace rdmahd
