#include "app/library.h"

#include <algorithm>
#include <system_error>

namespace inboxsim {

std::vector<LibraryPlace> library_places(const std::filesystem::path& executable) {
  std::vector<LibraryPlace> places;
  if (executable.empty()) {
    places.push_back({{}, "beside the binary: unknown, /proc/self/exe cannot be read"});
  } else {
    const std::filesystem::path folder =
        (executable.parent_path() / kLibraryFromBinary).lexically_normal();
    places.push_back({folder, "beside the binary " + executable.string()});
  }
  std::error_code error;
  const std::filesystem::path current = std::filesystem::current_path(error);
  places.push_back(
      {"./scenarios", error ? "the current folder" : "the current folder, " + current.string()});
  return places;
}

std::filesystem::path own_executable() {
  std::error_code error;
  std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return executable;
}

std::optional<std::filesystem::path> first_library(const std::vector<LibraryPlace>& places) {
  for (const LibraryPlace& place : places) {
    std::error_code error;
    if (!place.folder.empty() && std::filesystem::is_directory(place.folder, error)) {
      return place.folder;
    }
  }
  return std::nullopt;
}

std::string library_not_found(const std::vector<LibraryPlace>& places,
                              const std::string& how_to_name) {
  std::string looked;
  for (const LibraryPlace& place : places) {
    if (!looked.empty()) looked += "; ";
    looked += place.folder.empty() ? place.why : place.folder.string() + " (" + place.why + ")";
  }
  return "no scenario library found: looked in " + looked +
         "; expected a folder of scenario files there, or name one with " + how_to_name;
}

std::optional<std::string> scenario_files(const std::string& directory,
                                          std::vector<std::string>& files) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    std::error_code entry_error;
    if (entry.is_regular_file(entry_error) && entry.path().extension() == ".json") {
      files.push_back(entry.path().string());
    }
  }
  if (error) return directory + ": cannot read the folder: " + error.message();
  std::sort(files.begin(), files.end());
  return std::nullopt;
}

}  // namespace inboxsim
