#!/bin/sh
# Runs one test of the sanitizers test setup (meson.build) so that a report
# from any process of the test fails it: the test program itself, and the
# kaged or kaged-fake-provider it starts. Each process writes its reports to
# a file of its own (log_path, suffixed with its process id) in a folder of
# this run; whatever is found there at the end is shown on standard error
# and, if it is a report, fails the test.
set -u

reports=$(mktemp -d "${TMPDIR:-/tmp}/kaged-sanitizers-XXXXXX") || exit 99
ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$reports/report"
UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$reports/report"
export ASAN_OPTIONS UBSAN_OPTIONS

"$@"
status=$?

for file in "$reports"/report.*; do
  [ -e "$file" ] || continue
  echo "--- sanitizer output of process ${file##*.}:" >&2
  cat "$file" >&2
  if grep -Eq 'ERROR: [A-Za-z]+Sanitizer|runtime error:|Sanitizer has encountered a fatal error' "$file" &&
     [ "$status" -eq 0 ]; then
    status=1
  fi
done
rm -rf "$reports"
exit "$status"
