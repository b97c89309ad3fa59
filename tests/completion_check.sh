#!/usr/bin/env bash
# The bash completion is written by hand, so it is checked against the CLI itself: completing
# `inboxsim <TAB>` must offer exactly the verbs and options of `inboxsim --help`, completing
# `inboxsim VERB --<TAB>` exactly the options of `inboxsim VERB --help`, and an option with a
# fixed set of values (`--color TEXT:{auto,always,never}`) exactly those values. Then a few
# completions a user relies on: file names for `run`, scenario names for `demo`, `--opt=value`.
# Usage: bash tests/completion_check.sh PATH_TO_INBOXSIM PATH_TO_COMPLETION
#        (run from the repository root: `demo` completes the names of ./scenarios)
set -u
bin=$(realpath "$1")
completion=$2
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=../completion/inboxsim.bash
source "$completion" || exit 2
# shellcheck source=check.sh
source tests/check.sh  # check, finish

# Prints what completing the command line WORD... offers (the last word is the one being
# completed, possibly empty), one per line, sorted.
complete_line() {
  COMP_WORDS=("$bin" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _inboxsim
  printf '%s\n' "${COMPREPLY[@]}" | sort
}

# Prints the long options (and -h as --help) a help text lists, one per line, sorted.
help_options() {
  sed -n -E 's/^ +(-[a-zA-Z], )?(--[a-z][a-z-]*).*/\2/p' | sort -u
}

# Prints the verbs of `inboxsim --help`: the first word of each line under "Subcommands:".
help_verbs() {
  sed -n '/^Subcommands:/,/^$/p' | sed -n -E 's/^ +([a-z]+) .*/\1/p' | sort
}

same() {  # same WHAT EXPECTED ACTUAL: equal, or the difference shown
  if [[ "$2" == "$3" ]]; then return 0; fi
  echo "$1: < only the CLI has, > only the completion offers"
  diff <(echo "$2") <(echo "$3") | grep '^[<>]' | sed 's/^/    /'
  return 1
}

help=$("$bin" --help)
verbs=$(help_verbs <<<"$help")
check "inboxsim --help lists the nine verbs" test "$(wc -w <<<"$verbs")" -eq 9
expected=$({ echo "$verbs"; help_options <<<"$help"; } | sort)
check "inboxsim <TAB> offers every verb and global option" \
  same "verbs and global options" "$expected" "$(complete_line "")"

for verb in $verbs; do
  verb_help=$("$bin" "$verb" --help)
  options=$(help_options <<<"$verb_help")
  check "$verb: inboxsim $verb --help lists options" test -n "$options"
  check "$verb: every option of the CLI is completed, and no other" \
    same "inboxsim $verb --<TAB>" "$options" "$(complete_line "$verb" "--")"
  # An option that takes a value (its help shows a TYPE after the name) must have its values
  # completed (or nothing offered), never verbs, options or files meant for something else.
  while read -r option type; do
    takes_value=no
    [[ -n $type ]] && takes_value=yes
    completes_value=no
    _inboxsim_option_value "$option" "" && completes_value=yes
    check "$verb $option: a value is completed exactly when the option takes one" \
      same "inboxsim $verb $option <TAB> completes a value" "$takes_value" "$completes_value"
  done < <(sed -n -E 's/^ +(-[a-zA-Z], )?(--[a-z][a-z-]*)( [A-Z]+)?.*/\2\3/p' <<<"$verb_help")
  # Options whose values CLI11 checks against a set print it as TYPE:{a,b,c}.
  while read -r option values; do
    expected=$(tr ',' '\n' <<<"$values" | sort)
    check "$verb $option: every value of the CLI is completed" \
      same "inboxsim $verb $option <TAB>" "$expected" "$(complete_line "$verb" "$option" "")"
  done < <(sed -n -E 's/^ +(--[a-z-]+) [A-Z]+:\{([a-z,]+)\}.*/\1 \2/p' <<<"$verb_help")
done
# A completion list with an option the CLI does not have would have failed above; so would one
# missing a verb. The value lists must have been found at all:
check "the help shows the --color values" grep -q -- '--color TEXT:{auto,always,never}' \
  <<<"$("$bin" run --help)"

check "a verb completes from its start" same "inboxsim ru" "run" "$(complete_line "ru")"
check "an option completes from its start" \
  same "inboxsim fuzz --sh" "$(printf '%s\n' --shard --shrink)" "$(complete_line fuzz --sh)"
check "--color=VALUE completes" \
  same "inboxsim run --color=al" "always" "$(complete_line run --color = al)"
check "run completes scenario files" \
  same "inboxsim run scenarios/09" "scenarios/09-crash-after-commit.json" \
  "$(complete_line run scenarios/09)"
check "an option taking a number offers nothing" \
  same "inboxsim fuzz --jobs" "" "$(complete_line fuzz --jobs "")"
check "--set completes the keys of inboxsim config, each with its =" \
  same "inboxsim run --set account.inbox_" "$(printf '%s\n' account.inbox_unique= account.inbox_window_ms=)" \
  "$(complete_line run --set account.inbox_)"
check "--set KEY= completes the key's values" \
  same "inboxsim run --set broker.queue_type=" "$(printf '%s\n' classic quorum)" \
  "$(complete_line run --set broker.queue_type =)"
check "--set KEY=VA completes from the value's start" \
  same "inboxsim explore --set account.inbox=ext" \
  "$(printf '%s\n' external-after external-atomic external-before)" \
  "$(complete_line explore --set account.inbox = ext)"
check "a number key offers no value" \
  same "inboxsim run --set broker.prefetch=" "" "$(complete_line run --set broker.prefetch =)"
kinds=$("$bin" run scenarios/01-happy-path.json --step-on flux 2>&1 | sed -n -E 's/.*comma-separated: //p' |
  tr -d ' ' | tr ',' '\n' | sort)
check "--step-on offers every event kind the CLI knows, and event" \
  same "inboxsim run --step-on" "$(printf '%s\n' $kinds event | sort)" "$(complete_line run --step-on "")"
check "config completes its keys" \
  same "inboxsim config transfer.d" "$(printf '%s\n' transfer.dedupe transfer.dedupe_key)" \
  "$(complete_line config transfer.d)"
names_10=$(ls scenarios | sed -n -E 's/^(1[0-9][^.]*)\.json$/\1/p' | sort)
check "demo completes scenario names from inboxsim list" test -n "$names_10"
check "demo completes scenario names from inboxsim list" \
  same "inboxsim demo 1" "$names_10" "$(complete_line demo 1)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp scenarios/01-happy-path.json scenarios/09-crash-after-commit.json "$work/"
check "demo completes the names of the --scenarios folder" \
  same "inboxsim demo --scenarios DIR" "$(printf '%s\n' 01-happy-path 09-crash-after-commit)" \
  "$(complete_line demo --scenarios "$work" "")"

finish
