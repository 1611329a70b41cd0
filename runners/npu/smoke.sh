#!/usr/bin/env bash
# prmg smoke test on an Ascend NPU host: activate the CANN toolkit, check it with `prmg doctor`, run the
# smoke suite on the real operator (--runner aclnn: never the emulator) under --strict (a warning fails its
# case: docs/runners.md, "What a gate on NPU hosts runs"), write JUnit XML and JSON lines.
# Then the graph-mode pass: the same cases through the aclnn API and GE's graph mode on the same inputs
# (--runner aclnn+geir, prmg's GE shim built for the toolkit), or one line saying why it is skipped; its JUnit file
# is written either way (a pass that does not run as one skipped or error test), so that no earlier run's
# graph-mode results are left in its place.
# Exits non-zero on any failure: 1 when a case fails, 2 when the run cannot start (no toolkit; graph mode asked
# for and not available).
#
# Environment:
#   ASCEND_SET_ENV    the toolkit's set_env.sh (default: the standard locations, newest layout first)
#   PRMG              the prmg command (default: prmg on PATH)
#   PRMG_CASES        case files or folders to run, separated by spaces (default: cases/smoke.yaml of
#                     this script's repository)
#   PRMG_REPORT_DIR   where reports go (default: ./reports)
#   PRMG_DEVICES      the devices to run on (default: all, every device the runtime reports: a chip that
#                     computes wrong is seen wherever it sits, and the reports group failures by device)
#   PRMG_EACH_DEVICE  yes (default): every case runs on each of those devices (--each-device), so that a chip
#                     failing only some cases fails them; no: the cases are shared among the devices (faster for
#                     a large suite, but a chip is then tested by the cases that happened to go to it)
#   PRMG_GRAPH_MODE   auto (default): the graph-mode pass runs where graph mode is available (the toolkit has GE's
#                     headers and libraries, a C++ compiler is on PATH), else it is skipped with a line saying why;
#                     yes: it must run, exit 2 where it cannot (a host set up for graph mode that lost its compiler
#                     or GE fails the gate instead of skipping); no: it is not run
# Extra arguments are passed to `prmg run` (e.g. --supported-modes 0,1,2,3, --timeout 120); --runner, --cluster,
# --devices, -o/--output and --results are refused (exit 2): the gate runs the real operator on this host's devices
# (PRMG_DEVICES) and writes its reports where they are read (PRMG_REPORT_DIR).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
for argument in "$@"; do                # prmg refuses an option given twice (exit 2); said here with why: an extra
    case "$argument" in                 # --runner would replace the gate's own (--runner emulator: a green gate of
        --runner|--runner=*|--cluster|--cluster=*|--devices|--devices=*)     # no NPU), an extra --devices 0 its chips
            echo "smoke.sh: $argument: the gate chooses the runner itself (aclnn, then aclnn+geir) and runs on" \
                 "this host's devices (PRMG_DEVICES, default all)" >&2
            exit 2 ;;
        -o|-o*|--output|--output=*|--results|--results=*)     # the gate's JUnit or results sent elsewhere
            echo "smoke.sh: $argument: the gate writes its reports itself, in PRMG_REPORT_DIR (another -o or" \
                 "--results would leave an earlier run's files there for CI to read)" >&2
            exit 2 ;;
    esac
done
set_env="${ASCEND_SET_ENV:-}"
if [ -z "$set_env" ]; then
    for candidate in /usr/local/Ascend/cann/set_env.sh /usr/local/Ascend/ascend-toolkit/set_env.sh \
                     "$HOME/Ascend/cann/set_env.sh" "$HOME/Ascend/ascend-toolkit/set_env.sh"; do
        if [ -f "$candidate" ]; then set_env="$candidate"; break; fi
    done
fi
if [ -z "$set_env" ] || [ ! -f "$set_env" ]; then
    echo "smoke.sh: no CANN set_env.sh found; set ASCEND_SET_ENV to your toolkit's set_env.sh" >&2
    exit 2
fi
# The toolkit under test is the one set_env.sh names: a variable naming another one (the host's profile, an earlier
# job's step) is cleared first, and a set_env.sh that names none is refused (prmg would search the default places).
unset ASCEND_HOME_PATH ASCEND_TOOLKIT_HOME
# set_env.sh scripts read unset variables; relax -u while sourcing.
set +u
# shellcheck disable=SC1090
source "$set_env"
set -u
if [ -z "${ASCEND_HOME_PATH:-}${ASCEND_TOOLKIT_HOME:-}" ]; then
    echo "smoke.sh: $set_env names no toolkit (it sets neither ASCEND_HOME_PATH nor ASCEND_TOOLKIT_HOME): prmg" \
         "would search the default locations for one, not take the toolkit under test" >&2
    exit 2
fi

prmg="${PRMG:-prmg}"
read -r -a cases <<< "${PRMG_CASES:-$root/cases/smoke.yaml}"
reports="${PRMG_REPORT_DIR:-reports}"
devices="${PRMG_DEVICES:-all}"
case "${PRMG_EACH_DEVICE:-yes}" in
    yes) each=(--each-device) ;;
    no) each=() ;;
    *) echo "smoke.sh: PRMG_EACH_DEVICE must be yes or no, got '$PRMG_EACH_DEVICE'" >&2; exit 2 ;;
esac
graph_mode="${PRMG_GRAPH_MODE:-auto}"
case "$graph_mode" in
    auto|yes|no) ;;
    *) echo "smoke.sh: PRMG_GRAPH_MODE must be auto, yes or no, got '$graph_mode'" >&2; exit 2 ;;
esac
mkdir -p "$reports"

# The graph-mode pass's JUnit file when it does not run: one test, skipped or (it should have run) an error, saying why.
graph_junit() {
    local kind="$1" why counts='skipped="1" errors="0"'
    why="$(printf '%s' "$2" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g')"
    [ "$kind" = skipped ] || counts='skipped="0" errors="1"'
    cat > "$reports/prmg-smoke-graph.xml" <<XML
<?xml version="1.0" encoding="utf-8"?>
<testsuites tests="1" failures="0" $counts>
  <testsuite name="prmg graph mode" tests="1" failures="0" $counts>
    <testcase classname="prmg.smoke" name="graph mode (--runner aclnn+geir)"><$kind message="$why"/></testcase>
  </testsuite>
</testsuites>
XML
}

rm -f "$reports/prmg-smoke-graph.xml"      # an earlier run's: this run's graph-mode pass writes its own, or none when
                                           # the aclnn pass fails first
echo "== prmg doctor (toolkit from $set_env)"
$prmg doctor --runner aclnn
if [ "$graph_mode" != no ]; then        # asked before the aclnn pass: a host that must run graph mode and cannot
    echo "== graph mode: prmg doctor --runner aclnn+geir"            # fails before anything runs
    graph="$($prmg doctor --runner aclnn+geir 2>&1)" && usable=yes || usable=no
    why="$(printf '%s\n' "$graph" | sed -n 's/^  NOT available: //p' | head -n 1)"
    if [ "$usable" = no ] && [ -n "$why" ] && [ "$graph_mode" = yes ]; then
        echo "smoke.sh: graph mode is asked for (PRMG_GRAPH_MODE=yes) but not available: $why" >&2
        graph_junit error "not available: $why"
        exit 2
    fi
fi
echo "== prmg run ${cases[*]} --runner aclnn --devices $devices ${each[*]} --strict"
$prmg run "${cases[@]}" --runner aclnn --devices "$devices" ${each[@]+"${each[@]}"} --strict --report junit \
    -o "$reports/prmg-smoke.xml" --results "$reports/prmg-smoke.jsonl" "$@"

if [ "$graph_mode" = no ]; then
    echo "== graph mode: SKIPPED (PRMG_GRAPH_MODE=no)"
    graph_junit skipped "PRMG_GRAPH_MODE=no"
elif [ "$usable" = yes ]; then
    echo "== prmg run ${cases[*]} --runner aclnn+geir --devices $devices ${each[*]} --strict"
    $prmg run "${cases[@]}" --runner aclnn+geir --devices "$devices" ${each[@]+"${each[@]}"} --strict --report junit \
        -o "$reports/prmg-smoke-graph.xml" --results "$reports/prmg-smoke-graph.jsonl" "$@"
elif [ -n "$why" ]; then                # the toolkit lacks what the GE shim needs (PRMG_GRAPH_MODE=auto): skipped
    echo "== graph mode: SKIPPED ($why)"
    graph_junit skipped "$why"
else                                    # graph mode should work here and does not: a failure
    failure="$(printf '%s\n' "$graph" | sed -n '/^graph mode/,$p')"
    printf '%s\n' "$failure" >&2
    graph_junit error "$failure"
    exit 1
fi
