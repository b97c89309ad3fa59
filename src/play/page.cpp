// The playground's page (src/play/page.html), embedded at build time: page.html.inc is the
// page as one raw string literal, written by cmake/embed_text.cmake. The definition lives
// here, in the source tree, so that nothing in the binary names the build's folders.
#include "play/server.h"

namespace inboxsim {

const char* const kPlaygroundPage =
#include "page.html.inc"
    ;

}  // namespace inboxsim
