#!/usr/bin/env bash
# inboxsim installed as a user gets it, checked from the outside:
#   install: `cmake --install BUILD --prefix P` into a scratch folder;
#   deb:     `cpack -G DEB` in BUILD, its Depends checked against what the binary links, then
#            unpacked with `dpkg -x` into a scratch root (P is ROOT/usr).
# Then, for P: the layout (binary, library, teacher's guide, docs, man page, completion), and
# `list`, `run` and `demo` run from an empty folder after P was moved elsewhere, so only the
# binary's own location can lead to the library: the source tree is out of reach (no path of it
# is compiled in, and the current folder has no ./scenarios). Then the other places looked, in
# order, and the message when none holds the library.
# Usage: bash tests/package_check.sh install|deb BUILD_DIR   (from the repository root)
set -u
mode=$1
build=$(realpath "$2")
cd "$(dirname "$0")/.." || exit 2
source_root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=check.sh
source tests/check.sh  # check, finish

# The source's library, by file name: what every installed copy must hold.
library_files=$(cd scenarios && ls -- *.json)
library_count=$(wc -l <<<"$library_files")

# ---- the package itself (deb) -----------------------------------------------------------------

# Prints the package names of a Depends field, one per line ("libc6 (>= 2.34), libx | liby").
depends_names() {
  tr ',|' '\n' <<<"$1" | sed -E 's/\(.*\)//; s/^ +//; s/ +$//' | grep -v '^$' | sort -u
}

# Prints the Debian package that provides each shared library BINARY needs, one per line.
needed_packages() {
  local binary=$1 library path owner
  for library in $(readelf -d "$binary" | sed -n -E 's/.*\(NEEDED\).*\[(.*)\]/\1/p'); do
    path=$(ldd "$binary" | awk -v l="$library" '$1 == l { print $3 }')
    # dpkg knows a file by the path its package installed it at: /lib/... on a merged /usr.
    owner=""
    [[ -n $path ]] && owner=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
    [[ -z $owner && -n $path ]] &&
      owner=$(dpkg -S "$(realpath "$path")" 2>/dev/null | head -n 1 | cut -d: -f1)
    echo "${owner:-no-package-for-$library}"
  done | sort -u
}

check_deb() {
  (cd "$build" && cpack -G DEB -B "$work/cpack" >"$work/cpack.log" 2>&1)
  check "cpack -G DEB succeeds" test $? -eq 0 || { cat "$work/cpack.log"; finish; }
  local version arch deb
  version=$("$build/inboxsim" --version | cut -d ' ' -f 2)
  arch=$(dpkg --print-architecture)
  deb="$work/cpack/inboxsim_${version}_${arch}.deb"
  check "the package is named inboxsim_VERSION_ARCH.deb" test -s "$deb" || finish
  echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes"
  check "the package's name and version" \
    test "$(dpkg-deb -f "$deb" Package Version)" = "$(printf 'Package: inboxsim\nVersion: %s' "$version")"
  local depends
  depends=$(dpkg-deb -f "$deb" Depends)
  echo "Depends: $depends"
  local names
  names=$(depends_names "$depends")
  check "Depends names SQLite's runtime library" grep -qx 'libsqlite3-0' <<<"$names"
  check "Depends names no package needed only to build" \
    test -z "$(grep -E -- '-dev$|^(cmake|g\+\+|gcc|catch2|help2man|dpkg-dev|file|libcli11|nlohmann)' <<<"$names")"
  # Every library the binary links comes from a package in Depends (dpkg-shlibdeps' job: a
  # hand-written Depends would miss one on the day the code links a new library).
  dpkg -x "$deb" "$work/root"
  check "the package unpacks with dpkg -x" test -x "$work/root/usr/bin/inboxsim" || finish
  local needed package
  needed=$(needed_packages "$work/root/usr/bin/inboxsim")
  check "the binary links shared libraries" test -n "$needed"
  for package in $needed; do
    check "$package, which the binary needs, is in Depends" grep -qx "$package" <<<"$names"
  done
  check "the package installs under /usr only" \
    test -z "$(dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -v -E '^\./$|^\./usr/')"
}

# ---- an installed tree ------------------------------------------------------------------------

# The man page: gzipped, well-formed for groff, with the usual sections and every verb and
# option of the CLI.
check_man_page() {
  local page=$1/share/man/man1/inboxsim.1.gz
  check "the man page is installed gzipped" gzip -t "$page" || return
  zcat "$page" | groff -man -Tutf8 -ww -z 2>"$work/groff.err"
  check "groff reads the man page without a warning" test ! -s "$work/groff.err" ||
    cat "$work/groff.err"
  zcat "$page" | groff -man -Tascii -P -cbu 2>/dev/null >"$work/man.txt"
  local section verb option
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS ENVIRONMENT FILES; do
    check "the man page has $section" grep -qx "$section" "$work/man.txt"
  done
  check "the man page gives the exit status" grep -q "Exit status:" "$work/man.txt"
  # groff justifies lines by widening spaces, on alternating sides from one output line to the
  # next, so where a phrase gets a double space depends on every line above it (a new option
  # anywhere in --help moves it): read the phrase with runs of spaces squeezed.
  check "the man page says where the library is found" \
    grep -q "teaching library beside the binary" <(tr -s ' ' <"$work/man.txt")
  for verb in run list fuzz matrix demo; do
    check "the man page has a section for $verb" grep -qE "^ +$verb:$" "$work/man.txt"
    for option in $("$build/inboxsim" "$verb" --help | sed -n -E 's/^ +(--[a-z][a-z-]*).*/\1/p'); do
      [[ $option == --help ]] && continue
      check "the man page has $verb $option" grep -q -- "$option" "$work/man.txt"
    done
  done
}

check_layout() {
  local prefix=$1
  check "bin/inboxsim is installed" test -x "$prefix/bin/inboxsim"
  check "the library holds every scenario of the source" \
    test "$(cd "$prefix/share/inboxsim/scenarios" && ls -- *.json)" = "$library_files"
  local file
  for file in $library_files; do
    check "the installed $file is the source's" \
      cmp -s "scenarios/$file" "$prefix/share/inboxsim/scenarios/$file"
  done
  check "the teacher's guide is in share/inboxsim" \
    cmp -s docs/scenarios.md "$prefix/share/inboxsim/scenarios.md"
  check "the README is in share/doc/inboxsim" cmp -s README.md "$prefix/share/doc/inboxsim/README.md"
  check "the docs are in share/doc/inboxsim/docs, as the README links them" \
    diff -r -q docs "$prefix/share/doc/inboxsim/docs"
  check "the bash completion is in the standard folder" \
    cmp -s completion/inboxsim.bash "$prefix/share/bash-completion/completions/inboxsim"
  check_man_page "$prefix"
  # The data the program reads at run time (debug information may name the build's folders; the
  # program never reads it). A sanitizer build's report locations and type names name source
  # files by their full path, SOURCE/src/...: those are not a folder to read from; any other
  # mention of the source tree, the bare folder above all, is.
  objcopy -O binary --only-section=.rodata "$prefix/bin/inboxsim" "$work/rodata"
  check "the binary has read-only data" test -s "$work/rodata"
  check "no path of the source tree is compiled into the binary" \
    python3 - "$source_root" "$work/rodata" <<'PY'
import re, sys
root, data = sys.argv[1].encode(), open(sys.argv[2], "rb").read()
found = [data[m.start():m.start() + 60] for m in re.finditer(re.escape(root), data)
         if not data.startswith(root + b"/src/", m.start())]
for text in found[:5]:
    print("   ", text)
sys.exit(1 if found else 0)
PY
}

# list, run and demo from an empty folder, with the installed tree moved from where it was put.
check_runs() {
  local prefix=$1 bin=$1/bin/inboxsim library=$1/share/inboxsim/scenarios
  mkdir -p "$work/elsewhere" && cd "$work/elsewhere" || exit 2
  "$bin" list >"$work/list.txt" 2>"$work/list.err"
  check "list exits 0 from another folder" test $? -eq 0 || cat "$work/list.err"
  # `list` heads each lesson block with a "# Lesson block" line; the other lines are scenarios.
  check "list finds the installed library beside the binary" \
    test "$(grep -vc '^#' "$work/list.txt")" -eq "$library_count"
  check "list names the first scenario" grep -q '^01-happy-path ' "$work/list.txt"
  "$bin" run "$library/09-crash-after-commit.json" --quiet >"$work/run.txt"
  check "run exits 0 on an installed scenario" test $? -eq 0
  "$bin" run "$library/01-happy-path.json" --json >"$work/run.json"
  check "run --json reports the scenario passed" python3 -c \
    "import json,sys; assert json.load(open(sys.argv[1]))['passed'] is True" "$work/run.json"
  "$bin" demo --quiet --out demo >"$work/demo.txt" 2>&1
  check "demo runs the whole installed library and exits 0" test $? -eq 0 || tail "$work/demo.txt"
  check "demo writes a page per scenario, the index and the explore runs' counterexamples" \
    test "$(ls demo | wc -l)" -eq $((library_count + 2)) -a -d demo/counterexamples
  check "demo's index links the pages" grep -q 'href="09-crash-after-commit.html"' demo/index.html
  # Through a symbolic link from another folder (as /usr/local/bin links often are): the
  # binary's own location is where the link points.
  mkdir -p "$work/links" && ln -s "$bin" "$work/links/inboxsim"
  check "a link to the binary finds the library too" \
    test "$("$work/links/inboxsim" list | grep -vc '^#')" -eq "$library_count"
  # --scenarios (demo) and DIR (list) override the installed library.
  mkdir -p "$work/mine" && cp "$library/09-crash-after-commit.json" "$work/mine/"
  check "list DIR reads that folder" test "$("$bin" list "$work/mine" | grep -vc '^#')" -eq 1
  "$bin" demo --scenarios "$work/mine" --quiet --out demo-mine >/dev/null
  check "demo --scenarios reads that folder" \
    test "$(ls demo-mine | tr '\n' ' ')" = "09-crash-after-commit.html index.html "
  # The library beside the binary comes before ./scenarios; without it, ./scenarios is read.
  mkdir -p scenarios && cp "$library/01-happy-path.json" scenarios/
  check "the library beside the binary comes before ./scenarios" \
    test "$("$bin" list | grep -vc '^#')" -eq "$library_count"
  mv "$library" "$work/library-away"
  check "without the installed library, ./scenarios is read" test "$("$bin" list | grep -vc '^#')" -eq 1
  rm -r scenarios
  "$bin" list >/dev/null 2>"$work/none.err"
  check "list with no library anywhere exits 2" test $? -eq 2
  check "the message names the place beside the binary" grep -qF "$library (beside the binary" "$work/none.err"
  check "the message names ./scenarios" grep -qF "./scenarios (the current folder, $work/elsewhere)" "$work/none.err"
  check "list's message says how to name a folder" grep -qF "inboxsim list DIR" "$work/none.err"
  "$bin" demo --out demo-none >/dev/null 2>"$work/none-demo.err"
  check "demo with no library anywhere exits 2" test $? -eq 2
  check "demo's message names both places and --scenarios" \
    grep -qF "looked in $library (beside the binary" "$work/none-demo.err"
  check "demo's message says how to name a folder" grep -qF "with --scenarios DIR" "$work/none-demo.err"
  cd "$source_root" || exit 2
}

case $mode in
  install)
    cmake --install "$build" --prefix "$work/stage" >"$work/install.log" 2>&1
    check "cmake --install succeeds" test $? -eq 0 || { cat "$work/install.log"; finish; }
    mv "$work/stage" "$work/moved"
    prefix=$work/moved
    ;;
  deb)
    check_deb
    mv "$work/root" "$work/moved-root"
    prefix=$work/moved-root/usr
    ;;
  *)
    echo "usage: bash tests/package_check.sh install|deb BUILD_DIR" >&2
    exit 2
    ;;
esac
check_layout "$prefix"
check_runs "$prefix"
finish
