# Writes OUTPUT, a C++ file defining inboxsim::kPlaygroundPage as the text of INPUT (the
# playground's page), so that the binary serves it with no file read at run time.
file(READ ${INPUT} page)
string(FIND "${page}" ")inboxsim_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's delimiter )inboxsim_page\"")
endif()
file(WRITE ${OUTPUT} "// Generated from src/play/page.html by src/play/embed_page.cmake: do not edit.\n#include \"play/server.h\"\nnamespace inboxsim {\nconst char* const kPlaygroundPage = R\"inboxsim_page(${page})inboxsim_page\";\n}  // namespace inboxsim\n")
