#!/usr/bin/env bash
# expect_links.sh TEXT... -- COMMAND...
# Runs COMMAND (the training loop, which prints the links of the first rank
# of each host) and passes only where it succeeds and its output holds every
# TEXT: the kinds of link the job must have used, so a job that quietly fell
# back to another transport fails. Exit 77 (skipped) passes through.
set -uo pipefail
texts=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
  texts+=("$1")
  shift
done
if [[ $# -lt 2 ]]; then
  echo "usage: expect_links.sh TEXT... -- COMMAND..." >&2
  exit 2
fi
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[[ $rc -ne 0 ]] && exit "$rc"
for text in "${texts[@]}"; do
  if ! grep -qF -- "$text" "$log"; then
    echo "expect_links: no link line holds '$text'"
    exit 1
  fi
done
