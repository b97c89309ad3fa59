// The playground's page (src/play/page.html), embedded at build time: play_page.inc is the
// page as one raw string literal, written by src/play/embed_page.cmake. The definition lives
// here, in the source tree, so that nothing in the binary names the build's folders.
#include "play/server.h"

namespace inboxsim {

const char* const kPlaygroundPage =
#include "play_page.inc"
    ;

}  // namespace inboxsim
