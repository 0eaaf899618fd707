#!/usr/bin/env python3
"""The Prometheus files of examples/ parse and fit sluice.

prometheus.yml scrapes sluice's default admin address and loads
prometheus-rules.yml; every rule of that file has a name and an
expression; every sluice_* metric the rules and grafana-dashboard.json
name is one the daemon exports (a name in src/, or a histogram's
_bucket, _sum or _count series of one).

Usage: verify-prometheus.py EXAMPLES_DIR SRC_DIR. Without python3's yaml
module (Debian package python3-yaml) it exits 77: meson counts a SKIP.
"""
import json
import os
import re
import sys

try:
    import yaml
except ImportError:
    print("skip: no python3 yaml module (Debian package python3-yaml) to parse the Prometheus files")
    sys.exit(77)

examples, src = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def load_yaml(name):
    try:
        with open(os.path.join(examples, name)) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        check(False, f"{name} is YAML: {e}")
        return None
    check(isinstance(doc, dict), f"{name} is a YAML mapping")
    return doc if isinstance(doc, dict) else None


def exported_metrics():
    names = set()
    for root, _, files in os.walk(src):
        for file in files:
            if file.endswith(".c"):
                with open(os.path.join(root, file)) as f:
                    names.update(re.findall(r'"(sluice_[a-z_]+)', f.read()))
    return names


scrape = load_yaml("prometheus.yml")
if scrape:
    targets = [t for job in scrape.get("scrape_configs") or []
               for sc in job.get("static_configs") or []
               for t in sc.get("targets") or []]
    check("127.0.0.1:9464" in targets, "prometheus.yml scrapes 127.0.0.1:9464")
    check("prometheus-rules.yml" in (scrape.get("rule_files") or []),
          "prometheus.yml loads prometheus-rules.yml")

named = set()
rules = load_yaml("prometheus-rules.yml")
if rules:
    items = [r for g in rules.get("groups") or [] for r in g.get("rules") or []]
    check(len(items) > 0, f"prometheus-rules.yml has rules ({len(items)})")
    bad = [r.get("alert") or r.get("record") or repr(r) for r in items
           if not (r.get("alert") or r.get("record")) or not isinstance(r.get("expr"), str)]
    check(not bad, "every rule has a name and an expr" + (f": not {bad}" if bad else ""))
    for r in items:
        named.update(re.findall(r"\bsluice_[a-z_]+", str(r.get("expr", ""))))

try:
    with open(os.path.join(examples, "grafana-dashboard.json")) as f:
        named.update(re.findall(r"\bsluice_[a-z_]+", json.dumps(json.load(f))))
except (OSError, ValueError) as e:
    check(False, f"grafana-dashboard.json is JSON: {e}")

exported = exported_metrics()
check(len(exported) > 0, f"the metric names in {src} ({len(exported)})")
unknown = sorted(n for n in named
                 if n not in exported and re.sub(r"_(bucket|sum|count)$", "", n) not in exported)
check(not unknown, "every sluice_* metric the rules and the dashboard name exists"
      + (f": not {unknown}" if unknown else ""))
sys.exit(1 if failures else 0)
