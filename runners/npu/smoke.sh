#!/usr/bin/env bash
# prmg smoke test on an Ascend NPU host: activate the CANN toolkit, check it with `prmg doctor`, run the
# smoke suite on the real operator (--runner aclnn: never the emulator) under --strict (a warning fails its
# case: docs/runners.md, "What a gate on NPU hosts runs"), write JUnit XML and JSON lines.
# Then the graph-mode pass: the same cases through the aclnn API and GE's graph mode on the same inputs
# (--runner aclnn+geir, prmg's GE shim built for the toolkit), or one line saying why it is skipped.
# Exits non-zero on any failure.
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
# Extra arguments are passed to `prmg run` (e.g. --supported-modes 0,1,2,3, --timeout 120).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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
# set_env.sh scripts read unset variables; relax -u while sourcing.
set +u
# shellcheck disable=SC1090
source "$set_env"
set -u

prmg="${PRMG:-prmg}"
read -r -a cases <<< "${PRMG_CASES:-$root/cases/smoke.yaml}"
reports="${PRMG_REPORT_DIR:-reports}"
devices="${PRMG_DEVICES:-all}"
case "${PRMG_EACH_DEVICE:-yes}" in
    yes) each=(--each-device) ;;
    no) each=() ;;
    *) echo "smoke.sh: PRMG_EACH_DEVICE must be yes or no, got '$PRMG_EACH_DEVICE'" >&2; exit 2 ;;
esac
mkdir -p "$reports"

echo "== prmg doctor (toolkit from $set_env)"
$prmg doctor --runner aclnn
echo "== prmg run ${cases[*]} --runner aclnn --devices $devices ${each[*]} --strict"
$prmg run "${cases[@]}" --runner aclnn --devices "$devices" ${each[@]+"${each[@]}"} --strict --report junit \
    -o "$reports/prmg-smoke.xml" --results "$reports/prmg-smoke.jsonl" "$@"

echo "== graph mode: prmg doctor --runner aclnn+geir"
graph="$($prmg doctor --runner aclnn+geir 2>&1)" && usable=yes || usable=no
why="$(printf '%s\n' "$graph" | sed -n 's/^  NOT available: //p' | head -n 1)"
if [ "$usable" = yes ]; then
    echo "== prmg run ${cases[*]} --runner aclnn+geir --devices $devices ${each[*]} --strict"
    $prmg run "${cases[@]}" --runner aclnn+geir --devices "$devices" ${each[@]+"${each[@]}"} --strict --report junit \
        -o "$reports/prmg-smoke-graph.xml" --results "$reports/prmg-smoke-graph.jsonl" "$@"
elif [ -n "$why" ]; then                # the toolkit lacks what the GE shim needs: nothing to test here
    echo "== graph mode: SKIPPED ($why)"
else                                    # graph mode should work here and does not: a failure
    printf '%s\n' "$graph" | sed -n '/^graph mode/,$p' >&2
    exit 1
fi
