// Where `list` and `demo` look for the teaching library when none is named (app/library.h).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "app/library.h"

using inboxsim::first_library;
using inboxsim::library_not_found;
using inboxsim::library_places;
using inboxsim::LibraryPlace;

TEST_CASE("the library is looked for beside the binary, then in ./scenarios", "[library]") {
  const std::vector<LibraryPlace> places = library_places("/opt/tools/bin/inboxsim");
  REQUIRE(places.size() == 2);
  // The install layout: bin/inboxsim and share/inboxsim/scenarios/ under one prefix.
  REQUIRE(places[0].folder == "/opt/tools/share/inboxsim/scenarios");
  REQUIRE(places[1].folder == "./scenarios");
}

TEST_CASE("a binary whose own path is unknown still looks in ./scenarios", "[library]") {
  const std::vector<LibraryPlace> places = library_places("");
  REQUIRE(places.size() == 2);
  REQUIRE(places[0].folder.empty());
  REQUIRE(places[1].folder == "./scenarios");
  REQUIRE_THAT(library_not_found(places, "--scenarios DIR"),
               Catch::Contains("beside the binary: unknown, /proc/self/exe cannot be read") &&
                   Catch::Contains("./scenarios (the current folder"));
}

TEST_CASE("the first place that is a folder is the library", "[library]") {
  // One folder per process: other test runs may share the machine's temporary folder.
  const std::filesystem::path root = std::filesystem::temp_directory_path() /
                                     ("inboxsim-test-library-" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "second");
  std::ofstream(root / "a-file") << "not a folder";
  const std::vector<LibraryPlace> places = {{{}, "unknown"},
                                            {root / "missing", "missing"},
                                            {root / "a-file", "a file"},
                                            {root / "second", "second"},
                                            {root, "third"}};
  REQUIRE(first_library(places) == root / "second");
  REQUIRE_FALSE(first_library({places[0], places[1], places[2]}).has_value());
  std::filesystem::remove_all(root);
}

TEST_CASE("the message names every place looked and how to name one", "[library]") {
  const std::string message =
      library_not_found({{"/p/share/inboxsim/scenarios", "beside the binary /p/bin/inboxsim"},
                         {"./scenarios", "the current folder, /home/t"}},
                        "inboxsim list DIR");
  REQUIRE(message ==
          "no scenario library found: looked in /p/share/inboxsim/scenarios (beside the binary "
          "/p/bin/inboxsim); ./scenarios (the current folder, /home/t); expected a folder of "
          "scenario files there, or name one with inboxsim list DIR");
}
