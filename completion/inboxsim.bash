# bash completion for inboxsim: the verbs, each verb's options, and the values they take.
#
# Installed as share/bash-completion/completions/inboxsim, where bash-completion loads it the
# first time `inboxsim` is completed; `source` it by hand otherwise. It uses only bash's own
# compgen, so it works without the bash-completion package too.
#
# Written by hand, so it can drift from the CLI: tests/completion_check.sh compares every list
# here with `inboxsim --help` and `inboxsim VERB --help`, and fails on any difference.

_inboxsim_verbs="run list fuzz matrix demo explore play glossary config"
_inboxsim_global_options="--help --version --help-all"
_inboxsim_run_options="--help --seed --json --trace --html --mermaid --db-dir --quiet --verbose --step --step-on --show-rows
  --color --set"
_inboxsim_list_options="--help"
_inboxsim_campaign_options="--help --seeds --workload --swarm --set --jobs --out --json"
_inboxsim_fuzz_options="$_inboxsim_campaign_options --transfers --rate --accounts --shard --junit
  --shrink --stop-after --require-coverage"
_inboxsim_matrix_options="$_inboxsim_campaign_options --exhaustive --story --faults --fault-kinds
  --ack-wait-expiries --max-states --operator"
_inboxsim_demo_options="--help --plan --out --scenarios --color --step --step-on --quiet --verbose"
_inboxsim_explore_options="--help --faults --fault-kinds --ack-wait-expiries --max-states --jobs
  --set --continue --reduction --preemptions --operator --json --out"
_inboxsim_play_options="--help --port --listen --open --scenarios --workers --queue"
_inboxsim_glossary_options="--help"
_inboxsim_config_options="--help --json --names --values"

# Completes the value of option $1 into COMPREPLY; returns 1 when $1 takes no value.
_inboxsim_option_value() {
  local option=$1 cur=$2
  case $option in
    --color) mapfile -t COMPREPLY < <(compgen -W "auto always never" -- "$cur") ;;
    --workload) mapfile -t COMPREPLY < <(compgen -W "small standard large" -- "$cur") ;;
    --trace | --html | --mermaid | --junit | --story)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      ;;
    --db-dir | --out | --scenarios)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      ;;
    --step-on)  # event, or event kinds comma-separated
      local listed=""
      [[ $cur == *,* ]] && listed="${cur%,*},"
      mapfile -t COMPREPLY < <(compgen -P "$listed" -W "event step request publish deliver ack
        ack_lost nack requeue dead_letter confirm confirm_lost dedupe_hit dedupe_record effect
        rejected saga illegal_transition consumer_fault notification crash restart
        connection_closed index_dropped advance cleanup violation paused resumed lock_wait
        lock_granted ack_void retry error_queued publish_nacked redrive dropped index_restored
        recovered in_progress term" \
        -- "${cur##*,}")
      ;;
    # Numbers, seed ranges, shards and KEY=VALUE: nothing to offer, and no file names either.
    --fault-kinds)  # a comma-separated list: offer the kinds for the word being typed
      local listed=""
      [[ $cur == *,* ]] && listed="${cur%,*},"
      mapfile -t COMPREPLY < <(compgen -P "$listed" -W "crash drop_ack drop_connection nack
        duplicate lose_confirm publish_nack none" -- "${cur##*,}")
      ;;
    --operator) mapfile -t COMPREPLY < <(compgen -W "redrive none" -- "$cur") ;;
    --plan)  # the plans of the same binary (`demo --plan list`), and list itself
      local plans
      plans=$("${COMP_WORDS[0]:-inboxsim}" demo --plan list 2>/dev/null | sed -n -E 's/^([^ ]+)  .*/\1/p')
      mapfile -t COMPREPLY < <(compgen -W "$plans list" -- "$cur")
      ;;
    --reduction)
      local chosen=""
      [[ $cur == *,* ]] && chosen="${cur%,*},"
      mapfile -t COMPREPLY < <(compgen -P "$chosen" -W "sleep persistent dpor none" -- "${cur##*,}")
      ;;
    --require-coverage) COMPREPLY=() ;;  # probe names: `inboxsim fuzz --help` lists them
    --set)  # KEY=, the keys of the same binary (`inboxsim config --names`)
      local keys
      keys=$("${COMP_WORDS[0]:-inboxsim}" config --names 2>/dev/null)
      compopt -o nospace 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -S "=" -W "$keys" -- "$cur")
      ;;
    --seed | --seeds | --jobs | --transfers | --rate | --accounts | --shard | --shrink | \
      --stop-after | --faults | --ack-wait-expiries | --max-states | --preemptions | --port | \
      --listen | --workers | --queue)
      COMPREPLY=()
      ;;
    *) return 1 ;;
  esac
  return 0
}

# Completes the VALUE of `--set KEY=VALUE` into COMPREPLY, from `inboxsim config KEY --values`;
# returns 1 when the word being completed is not one. bash breaks the word at "=": "KEY=" arrives
# as KEY "=" (cur "="), and "KEY=VA" as KEY "=" VA.
_inboxsim_set_value() {
  local key before cur=${COMP_WORDS[COMP_CWORD]}
  if [[ $cur == = ]]; then
    key=${COMP_WORDS[COMP_CWORD - 1]} before=${COMP_WORDS[COMP_CWORD - 2]} cur=""
  elif [[ ${COMP_WORDS[COMP_CWORD - 1]} == = ]]; then
    key=${COMP_WORDS[COMP_CWORD - 2]} before=${COMP_WORDS[COMP_CWORD - 3]}
  else
    return 1
  fi
  [[ $before == --set ]] || return 1
  local values
  values=$("${COMP_WORDS[0]:-inboxsim}" config "$key" --values 2>/dev/null)
  mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
  return 0
}

# Completes the scenario names `demo` takes, from `inboxsim list` of the same binary and the
# same --scenarios folder as the command line being typed.
_inboxsim_scenario_names() {
  local cur=$1 directory="" i
  for ((i = 2; i < COMP_CWORD; i++)); do
    [[ ${COMP_WORDS[i]} == --scenarios ]] && directory=${COMP_WORDS[i + 1]}
  done
  local names
  # `list` heads each lesson block with a "# Lesson block" line: only the other lines name files.
  names=$("${COMP_WORDS[0]}" list ${directory:+"$directory"} 2>/dev/null | grep -v '^#' |
    cut -d ' ' -f 1)
  mapfile -t COMPREPLY < <(compgen -W "$names" -- "$cur")
}

_inboxsim() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  COMPREPLY=()
  # "--color=al" arrives as "--color" "=" "al" (bash breaks words at "=").
  if [[ $cur == = ]]; then
    cur=""
  elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  fi
  local verb="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ " $_inboxsim_verbs " == *" ${COMP_WORDS[i]} "* ]]; then
      verb=${COMP_WORDS[i]}
      break
    fi
  done
  ((COMP_CWORD >= 3)) && _inboxsim_set_value && return 0
  _inboxsim_option_value "$prev" "$cur" && return 0
  if [[ -z $verb ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$_inboxsim_verbs $_inboxsim_global_options" -- "$cur")
    return 0
  fi
  if [[ $cur == -* ]]; then
    local options_name="_inboxsim_${verb}_options"
    mapfile -t COMPREPLY < <(compgen -W "${!options_name}" -- "$cur")
    return 0
  fi
  case $verb in
    run | explore)  # scenario files, and folders to find them in
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -X '!*.json' -- "$cur"; compgen -d -- "$cur")
      ;;
    list)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      ;;
    demo) _inboxsim_scenario_names "$cur" ;;
    config)  # the keys
      local keys
      keys=$("${COMP_WORDS[0]}" config --names 2>/dev/null)
      mapfile -t COMPREPLY < <(compgen -W "$keys" -- "$cur")
      ;;
    glossary)  # the terms of one word (a term of several is typed in quotes)
      local terms
      terms=$("${COMP_WORDS[0]}" glossary 2>/dev/null | sed -n -E 's/^([^ ]+)( \(also:.*)?$/\1/p')
      mapfile -t COMPREPLY < <(compgen -W "$terms" -- "$cur")
      ;;
    play)  # a story of the library by name, or a scenario file
      compopt -o filenames 2>/dev/null
      _inboxsim_scenario_names "$cur"
      mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -X '!*.json' -- "$cur")
      ;;
  esac
  return 0
}

complete -F _inboxsim inboxsim
