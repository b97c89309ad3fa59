#!/usr/bin/env bash
# Installs what inboxsim needs from Debian's packages (only what is missing) and builds it in
# Release into ./build. Run as root on a fresh Debian machine; safe to run again.
# Extra CMake flags can be passed in INBOXSIM_CMAKE_FLAGS, extra packages (CI's clang) in
# INBOXSIM_EXTRA_PACKAGES.
set -euo pipefail
cd "$(dirname "$0")/.."

# The last line is for the man page and the .deb: help2man makes the page at build time, groff
# checks it, and cpack needs dpkg-shlibdeps (dpkg-dev) and file to work out the Depends.
packages=(cmake make g++ libsqlitecpp-dev libsqlite3-dev libcli11-dev nlohmann-json3-dev catch2
          sqlite3 python3
          help2man groff-base dpkg-dev file)
# shellcheck disable=SC2206
packages+=(${INBOXSIM_EXTRA_PACKAGES:-})
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${INBOXSIM_CMAKE_FLAGS:-} >/dev/null
cmake --build build -j"$(nproc)"
