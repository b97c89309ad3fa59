// The HTML report's style sheet and script (src/report/report_page.css and report_page.js),
// embedded at build time as raw string literals by cmake/embed_text.cmake. The definitions live
// here, in the source tree, so that nothing in the binary names the build's folders.
#include "report/html_parts.h"

namespace inboxsim::html {

const char* const kReportStyle =
#include "report_page.css.inc"
    ;

const char* const kReportScript =
#include "report_page.js.inc"
    ;

}  // namespace inboxsim::html
