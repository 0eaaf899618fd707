#!/bin/sh
# The manual page, as built: mandoc lints it without errors, it renders
# with its NAME line, and it names every command and option that the
# binary's --help texts list.
#
# Usage: verify-man.sh SLUICE [PAGE]. Without PAGE (the build has no man
# page: -Dman=disabled, or no scdoc with -Dman=auto) the test is skipped,
# exit 77, which meson counts as SKIP; so is the lint without mandoc,
# after the other checks have passed.
set -u
bin=$1
page=${2:-}
if [ -z "$page" ]; then
  echo "skip: the man page is not built (-Dman=disabled, or no scdoc with -Dman=auto)"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

[ -s "$page" ] || { echo "FAIL: $page is missing or empty"; exit 1; }

linted=0
if command -v mandoc >/dev/null 2>&1; then
  if mandoc -T lint -W error "$page" >"$tmp/lint" 2>&1; then
    ok "mandoc -T lint: no errors"
  else
    fail "mandoc -T lint: $(cat "$tmp/lint")"
  fi
  linted=1
  mandoc -T ascii "$page" >"$tmp/page.txt" 2>&1
elif command -v man >/dev/null 2>&1; then
  MANWIDTH=80 man -l "$page" >"$tmp/page.txt" 2>"$tmp/man.err" || fail "man -l: $(cat "$tmp/man.err")"
fi
if [ -f "$tmp/page.txt" ]; then
  if grep -q 'sluice - shape traffic' "$tmp/page.txt"; then ok "the man page renders"
  else fail "the rendered man page has no NAME line: $(head -20 "$tmp/page.txt")"; fi
fi

# The roff source, fonts removed: scdoc never breaks a source line, so
# each command and option is found whole.
sed 's/\\f[BIRP]//g' "$page" >"$tmp/page.roff"
before=$failures
commands=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$commands" ] || fail "no commands in 'sluice --help'"
for command in $commands; do
  grep -qE "^(sluice )?$command( |,|\$)" "$tmp/page.roff" || fail "the man page has no entry for '$command'"
done
for command in "" run check-config push stats dlq script version; do
  # shellcheck disable=SC2086
  for option in $("$bin" $command --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
    grep -qF -- "$option" "$tmp/page.roff" || fail "the man page does not mention sluice $command $option"
  done
done
[ $failures -eq "$before" ] && ok "the man page names every command and option of --help"

[ $failures -eq 0 ] || exit 1
if [ $linted -eq 0 ]; then
  echo "skip: no mandoc (Debian package mandoc) to lint the page"
  exit 77
fi
exit 0
