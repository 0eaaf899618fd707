"""machine.py - the facts of the machine and the checkout that RESULTS.md
names beside the figures: CPU, memory, kernel, versions, the commit."""

import subprocess
import time


def dirty(porcelain):
    """" (uncommitted changes in A, B and N more)" from `git status
    --porcelain` output, "" when there is none."""
    # "XY PATH" lines; the first may have lost its leading space to strip()
    files = [parts[1] for parts in (line.split(None, 1) for line in porcelain.splitlines())
             if len(parts) == 2]
    if not files:
        return ""
    more = " and %d more" % (len(files) - 5) if len(files) > 5 else ""
    return " (uncommitted changes in %s%s)" % (", ".join(files[:5]), more)


def facts(sluice):
    """The machine and the checkout; sluice: the path of the daemon."""
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "?"
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "nproc": sh("nproc"),
        "cpu": cpu,
        "memory": "%.1f GiB" % (mem_kib / 1048576),
        "kernel": sh("uname -sr"),
        "os": sh(". /etc/os-release && echo \"$PRETTY_NAME\""),
        "redis": sh("redis-server --version"),
        "libcurl": sh("dpkg-query -W -f='${Version}' libcurl4 2>/dev/null"),
        "libevent": sh("dpkg-query -W -f='${Version}' libevent-2.1-7 2>/dev/null"),
        "hiredis": sh("dpkg-query -W -f='${Version}' libhiredis0.14 2>/dev/null"),
        "wrk": sh("dpkg-query -W -f='${Version}' wrk 2>/dev/null"),
        "cc": sh("cc --version | head -1"),
        "sluice": sh("'%s' version" % sluice),
        "commit": sh("git rev-parse --short HEAD") + dirty(sh("git status --porcelain "
                                                              "--untracked-files=no")),
        "buildtype": "release (meson --buildtype=release: -O3, no debug info)",
    }
