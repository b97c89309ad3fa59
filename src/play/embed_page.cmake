# Writes OUTPUT, the text of INPUT (the playground's page) as one C++ raw string literal, which
# src/play/page.cpp includes: the binary serves the page with no file read at run time.
file(READ ${INPUT} page)
string(FIND "${page}" ")inboxsim_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter )inboxsim_page\"")
endif()
# The #line names the page by its place in the source tree, not the build folder (a sanitizer
# build writes the location of every string it instruments into the binary).
file(WRITE ${OUTPUT} "#line 1 \"src/play/page.html\"\nR\"inboxsim_page(${page})inboxsim_page\"\n")
