// A request the playground refuses: the HTTP status, what was expected, and where in the
// request (a JSON pointer, RFC 6901; empty for the whole request).
#pragma once

#include <string>

namespace inboxsim {

struct PlayError {
  int status = 400;
  std::string error;
  std::string where;
};

}  // namespace inboxsim
