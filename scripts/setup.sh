#!/usr/bin/env bash
# Installs what inboxsim needs from Debian's packages (only what is missing) and builds it in
# Release into ./build. Run as root on a fresh Debian machine; safe to run again.
# Extra CMake flags can be passed in INBOXSIM_CMAKE_FLAGS, extra packages (CI's clang) in
# INBOXSIM_EXTRA_PACKAGES.
set -euo pipefail
cd "$(dirname "$0")/.."

# libcpp-httplib-dev is the playground's HTTP server (`inboxsim play`). The last line is for the
# man page and the .deb: help2man makes the page at build time, groff
# checks it, and cpack needs dpkg-shlibdeps (dpkg-dev) and file to work out the Depends.
packages=(cmake make g++ pkg-config libsqlitecpp-dev libsqlite3-dev libcli11-dev nlohmann-json3-dev
          catch2 libcpp-httplib-dev sqlite3 python3
          help2man groff-base dpkg-dev file)
# shellcheck disable=SC2206
packages+=(${INBOXSIM_EXTRA_PACKAGES:-})
# For the broker conformance tests only (a private RabbitMQ node and rabbitmq-c to talk to it; a
# private nats-server with JetStream and libnats, its C client): where they cannot be installed,
# those tests are skipped and everything else builds and runs.
optional_packages=(rabbitmq-server librabbitmq-dev nats-server libnats-dev)

missing_of() {
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || echo "$package"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_optional < <(missing_of "${optional_packages[@]}")
if [ "${#missing[@]}" -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "${#missing_optional[@]}" -gt 0 ]; then
  echo "Installing: ${missing_optional[*]}"
  { [ "${#missing[@]}" -gt 0 ] || apt-get update -qq; } &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing_optional[@]}" >/dev/null ||
    echo "Could not install ${missing_optional[*]}: the live broker conformance tests (RabbitMQ, nats-server) will be skipped"
fi

# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${INBOXSIM_CMAKE_FLAGS:-} >/dev/null
cmake --build build -j"$(nproc)"
