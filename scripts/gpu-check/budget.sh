# The time budget of scripts/gpu-check.sh (sourced by it; bash). Code that first meets a GPU is
# likeliest to fail by hanging, and the check runs on lent minutes: so every command runs bounded
# by what is left of the budget, less what the stages after it are promised, and whatever a
# killed command leaves behind (MPI ranks spinning on the GPU or the cores) is reaped before the
# next one, so that one hang costs its own stage, not the measurements after it nor the summary.
#
#   budget_start SECONDS LOG    the budget from now; LOG gets the budget, a line per stage and one
#                               per command cut short, tab-separated (summary.py's table of stages)
#   budget_left                 seconds left
#   stage NAME                  a new stage: the last one's time logged, then budget_stage_hook run
#                               where the caller defines one, then the new one's heading printed
#   bounded CAP RESERVE CMD...  CMD under `timeout`, for CAP seconds or what is left less RESERVE,
#                               whichever is less; not started (status 124) where what is left
#                               less RESERVE is under BUDGET_FLOOR (5) seconds; status 124 also
#                               when it ran out of time. Then, unless it ended well, budget_reap
#                               (a launcher that exits 0 has waited for its ranks).
#   budget_reap                 SIGKILL to every process whose command line matches one of
#                               BUDGET_REAP (extended regular expressions: the check's own
#                               binaries and its MPI's launcher, never anything else's)

BUDGET_FLOOR=${BUDGET_FLOOR:-5}
BUDGET_REAP=()
budget_stage=""

budget_start() {
  budget_began=$(date +%s)
  budget_deadline=$((budget_began + $1))
  budget_log=$2
  budget_stage_began=$budget_began
  printf 'budget\t%s\n' "$1" > "$budget_log"
}

budget_left() { echo $((budget_deadline - $(date +%s))); }

stage() {
  local now
  now=$(date +%s)
  [ -n "$budget_stage" ] && printf 'stage\t%s\t%d\n' "$budget_stage" $((now - budget_stage_began)) >> "$budget_log"
  declare -F budget_stage_hook >/dev/null && budget_stage_hook  # (the check ships its results, this log too)
  budget_stage=$1
  budget_stage_began=$now
  [ "$1" = end ] || printf '\n== %s (at %d s, %d s left)\n' "$1" $((now - budget_began)) $((budget_deadline - now))
}

budget_reap() {
  local pattern pid
  [ ${#BUDGET_REAP[@]} -gt 0 ] || return 0
  pattern=$(IFS='|'; echo "${BUDGET_REAP[*]}")
  if command -v pkill >/dev/null; then
    pkill -KILL -f -- "$pattern"
  else  # an image without procps: the command lines read from /proc, in one pass
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
      [ "$pid" = $$ ] && continue
      { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qE -- "$pattern" && kill -KILL "$pid" 2>/dev/null
    done
  fi
  return 0
}

bounded() {
  local cap=$1 reserve=$2 limit rc
  shift 2
  limit=$(( $(budget_left) - reserve ))
  if [ "$limit" -lt "$BUDGET_FLOOR" ]; then
    printf 'skipped\t%s\t%d\t%s\n' "$budget_stage" "$limit" "$*" | cut -c1-400 >> "$budget_log"
    echo "gpu-check: not started, the budget is spent: $*" | cut -c1-200 >&2
    return 124
  fi
  [ "$limit" -gt "$cap" ] && limit=$cap
  timeout -k 5 "$limit" "$@"
  rc=$?
  [ $rc = 0 ] || budget_reap
  if [ $rc = 124 ] || [ $rc = 137 ]; then
    printf 'timeout\t%s\t%d\t%s\n' "$budget_stage" "$limit" "$*" | cut -c1-400 >> "$budget_log"
    echo "gpu-check: stopped after ${limit} s: $*" | cut -c1-200 >&2
    return 124
  fi
  return $rc
}

# A path as an extended regular expression that matches it alone (the device's checkout may sit
# under a folder whose name holds '+' or '.').
budget_literal() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|]/\\&/g'; }
