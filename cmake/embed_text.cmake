# Writes OUTPUT, the text of the source file SOURCE (a path from the source root, e.g.
# src/play/page.html) as one C++ raw string literal, which a .cpp file includes: the binary
# serves or writes the text with no file read at run time (the playground's page, the HTML
# report's style sheet and script).
file(READ ${SOURCE_ROOT}/${SOURCE} text)
string(FIND "${text}" ")inboxsim_text\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${SOURCE} contains the raw string's delimiter )inboxsim_text\"")
endif()
# The #line names the file by its place in the source tree, not the build folder (a sanitizer
# build writes the location of every string it instruments into the binary).
file(WRITE ${OUTPUT} "#line 1 \"${SOURCE}\"\nR\"inboxsim_text(${text})inboxsim_text\"\n")
