#!/bin/sh
# meson install into a temporary DESTDIR, then checks that every file a
# packager expects is there and works: the binary runs, the units point at
# the installed binary and configuration, the man page is there (what it
# says: the man-page test), the example configuration passes check-config,
# the Grafana dashboard parses (the Prometheus files: the prometheus-files
# test). Removes it all after.
#
# tests/meson.build passes, in the environment: MESON, BUILD_ROOT, VERSION
# and the installed paths BINDIR, SYSCONFDIR, UNITDIR, EXAMPLESDIR and
# MANDIR (empty when the man page is not built).
set -u

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
root=$tmp/root
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

if ! "$MESON" install -C "$BUILD_ROOT" --destdir "$root" --no-rebuild >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAIL: meson install --destdir"
  exit 1
fi
ok "meson install --destdir"

# Every file meson says it installs is there. (python3 is always there:
# meson runs on it.)
missing=$(python3 - "$BUILD_ROOT/meson-info/intro-installed.json" "$root" <<'EOF'
import json, os, sys
installed, root = sys.argv[1], sys.argv[2]
for path in sorted(json.load(open(installed)).values()):
    if not os.path.exists(root + path):
        print(path)
EOF
) || fail "cannot read meson-info/intro-installed.json"
if [ -z "$missing" ]; then ok "every file of meson introspect --installed"
else fail "not installed: $missing"; fi

# The binary.
bin=$root$BINDIR/sluice
if [ -x "$bin" ] && [ "$("$bin" version)" = "sluice $VERSION" ]; then
  ok "$BINDIR/sluice version"
else
  fail "$BINDIR/sluice is missing or 'sluice version' does not print 'sluice $VERSION'"
fi

# The units run the installed binary on the configuration under SYSCONFDIR.
for unit in sluice.service sluice@.service; do
  file=$root$UNITDIR/$unit
  case $unit in
    sluice@.service) config=$SYSCONFDIR/sluice/%i.json ;;
    *) config=$SYSCONFDIR/sluice/sluice.json ;;
  esac
  if [ ! -f "$file" ]; then
    fail "$UNITDIR/$unit is missing"
  elif ! grep -qxF "ExecStart=$BINDIR/sluice run -c $config" "$file"; then
    fail "$UNITDIR/$unit: no 'ExecStart=$BINDIR/sluice run -c $config'"
  elif grep -q '@[a-z]*@' "$file"; then
    fail "$UNITDIR/$unit: a placeholder is left: $(grep '@[a-z]*@' "$file")"
  else
    ok "$UNITDIR/$unit"
  fi
done

# The man page is installed where man looks (its content: the man-page test).
if [ -z "$MANDIR" ]; then
  echo "no man page to install: it is not built (the man-page test shows SKIP)"
elif [ -s "$root$MANDIR/man1/sluice.1" ]; then
  ok "$MANDIR/man1/sluice.1"
else
  fail "$MANDIR/man1/sluice.1 is missing"
fi

# The example configuration to start the units' file from, and the
# examples, with the variables their secrets name.
export ACME_TOKEN=token WEBHOOK_SIGNING_TOKEN=token
example=$root$SYSCONFDIR/sluice/sluice.json.example
if "$bin" check-config "$example" >"$tmp/check" 2>&1; then
  ok "$SYSCONFDIR/sluice/sluice.json.example passes check-config"
else
  fail "$SYSCONFDIR/sluice/sluice.json.example: $(cat "$tmp/check")"
fi
dir=$root$EXAMPLESDIR
before=$failures
for file in README.md webhook-delivery.json partner-api.json produce.sh produce.py produce.mjs produce-cluster.mjs \
    prometheus.yml prometheus-rules.yml grafana-dashboard.json; do
  [ -s "$dir/$file" ] || fail "$EXAMPLESDIR/$file is missing"
done
[ -x "$dir/produce.sh" ] || fail "$EXAMPLESDIR/produce.sh is not executable"
for config in webhook-delivery.json partner-api.json; do
  "$bin" check-config "$dir/$config" >"$tmp/check" 2>&1 || fail "$EXAMPLESDIR/$config: $(cat "$tmp/check")"
done
if python3 -m json.tool "$dir/grafana-dashboard.json" >/dev/null 2>"$tmp/json"; then
  ok "grafana-dashboard.json is JSON"
else
  fail "grafana-dashboard.json: $(cat "$tmp/json")"
fi
# The Prometheus files are parsed by the prometheus-files test.
[ $failures -eq "$before" ] && ok "the examples under $EXAMPLESDIR"

if [ $failures -ne 0 ]; then
  echo "installed files:"
  (cd "$root" && find . -type f | sort)
  exit 1
fi
exit 0
