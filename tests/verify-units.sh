#!/bin/sh
# systemd-analyze verify on each unit given; any word from it fails the
# test, since it only warns (exit 0) about many mistakes. Without
# systemd-analyze (Debian package systemd) the test is skipped: exit 77,
# which meson counts as SKIP.
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "skip: no systemd-analyze (Debian package systemd) to verify the units"
  exit 77
fi
status=0
for unit in "$@"; do
  out=$(systemd-analyze verify --man=no "$unit" 2>&1) || status=1
  if [ -n "$out" ]; then
    printf '%s\n' "$out"
    status=1
  fi
  [ $status -eq 0 ] && echo "ok: $unit"
done
exit $status
