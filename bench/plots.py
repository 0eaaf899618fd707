"""plots.py - the PNG plots of RESULTS.md, drawn by gnuplot: the bursty
input, gap jitter by rate, throughput, the adaptive rate against a moving
hidden limit. A plot whose scenario did not run
is not drawn; without gnuplot, none is (a note says so)."""

import os
import shutil
import subprocess


def gnuplot(script, notes):
    """Runs a gnuplot script; what went wrong goes to notes."""
    if not shutil.which("gnuplot"):
        notes.append("gnuplot is missing: no plots")
        return
    out = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        notes.append("gnuplot failed: %s" % out.stderr.strip()[:300])


def plots(res, out, workdir, notes):
    """Draws the plots of res into out (their data files into workdir);
    returns the paths of the PNGs."""
    made = []
    sh = res.get("shaping")
    if sh and sh.get("bursty"):
        b = sh["bursty"]
        png = os.path.join(out, "shaping-bursty.png")
        gnuplot("""
set terminal pngcairo size 1100,760 font ",10"
set output '%s'
set multiplot layout 2,1 title "Bursty input into one tenant shaped to %d jobs/s: %d jobs in one LPUSH every %g s"
set grid
set key top right
set xlabel "time since the first burst (s)"
set ylabel "output, jobs/s per 100 ms bin"
set yrange [0:%d]
set y2label "input, jobs/s per 100 ms bin"
set y2range [0:%d]
set y2tics
set ytics nomirror
plot '%s' using 1:2 axes x1y2 with impulses lw 4 lc rgb "#bbbbbb" title "input (right axis)", \\
     '' using 1:3 with steps lw 2 lc rgb "#1f77b4" title "output: departures (--trace-departures)", \\
     '' using 1:4 with steps lw 1 dt 2 lc rgb "#d62728" title "output: arrivals at the endpoint", \\
     %d with lines lc rgb "#2ca02c" dt 3 title "the tenant's rate"
unset y2tics
unset y2label
set ytics mirror
set ylabel "jobs so far"
set yrange [0:*]
set key top left
plot '%s' using 1:5 with steps lw 2 lc rgb "#999999" title "pushed", \\
     '' using 1:6 with steps lw 2 lc rgb "#1f77b4" title "departed", \\
     '' using 1:7 with steps lw 1 dt 2 lc rgb "#d62728" title "arrived at the endpoint"
unset multiplot
""" % (png, b["rate"], b["burst"], b["every_s"], b["rate"] * 2, b["burst"] * 10 * 1.1,
       b["data"], b["rate"], b["data"]), notes)
        made.append(png)
    if sh and sh.get("runs"):
        data = os.path.join(workdir, "jitter.dat")
        with open(data, "w") as fh:
            fh.write("# rate d_p50 d_p99 d_max e_p50 e_p99 e_max twin_p99 (us; twin: NaN if none)\n")
            for r in sh["runs"]:
                d, e = r["daemon"], r["endpoint"]
                vals = [d["jitter_p50_us"], d["jitter_p99_us"], d["jitter_max_us"],
                        e["jitter_p50_us"], e["jitter_p99_us"], e["jitter_max_us"]]
                twin = r.get("twin_jitter_p99_us")
                fh.write("%d %s %s\n" % (r["rate"], " ".join("%g" % max(0.5, v or 0) for v in vals),
                                         "%g" % max(0.5, twin) if twin is not None else "NaN"))
        png = os.path.join(out, "shaping-jitter.png")
        gnuplot("""
set terminal pngcairo size 1000,560 font ",10"
set output '%s'
set title "Gap jitter |gap - 1/rate| by rate (from a backlog; 1/s and 10/s: 20 and 5 tenants)"
set xlabel "rate (jobs/s)"
set ylabel "jitter (us)"
set logscale xy
set xrange [0.7:30000]
set yrange [5:300000]
set grid
set key top left
plot '%s' using 1:2 with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "p50, departures (trace)", \\
     '' using 1:3 with linespoints lw 2 pt 5 lc rgb "#ff7f0e" title "p99, departures (trace)", \\
     '' using 1:4 with linespoints lw 2 pt 9 lc rgb "#d62728" title "max, departures (trace)", \\
     '' using 1:5 with linespoints dt 2 pt 6 lc rgb "#1f77b4" title "p50, endpoint arrivals", \\
     '' using 1:6 with linespoints dt 2 pt 4 lc rgb "#ff7f0e" title "p99, endpoint arrivals", \\
     '' using 1:7 with linespoints dt 2 pt 8 lc rgb "#d62728" title "max, endpoint arrivals", \\
     '' using 1:8 with linespoints lw 1 pt 3 lc rgb "#9467bd" title "p99, a bare timer beside the run", \\
     500 with lines lc rgb "#2ca02c" dt 3 title "target for p99 up to 1,000/s (0.5 ms)", \\
     1e6/x with lines lc rgb "#888888" dt 4 title "one interval, 1/rate"
""" % (png, data), notes)
        made.append(png)
    tp = res.get("throughput")
    if tp:
        data = os.path.join(workdir, "throughput.dat")
        rows = [("sluice, 1 tenant", tp["one"]["rate_steady"]),
                ("sluice, 100 tenants", tp["many"]["rate_steady"])]
        fl = res.get("fleet")
        if fl:
            rows += [("fleet of %d, 1 tenant" % r["processes"], r["rate_steady"]) for r in fl["fast"]]
        if res.get("ceiling"):
            rows.append(("wrk -c50 (ceiling)", res["ceiling"]["rps"]))
        with open(data, "w") as fh:
            for i, (label, v) in enumerate(rows):
                fh.write('%d "%s" %g\n' % (i, label, v or 0))
        wrk = res["ceiling"]["rps"] if res.get("ceiling") and res["ceiling"]["rps"] else None
        extra = (', \\\n     %g with lines lc rgb "#ff7f0e" dt 2 title "0.6 of the wrk ceiling"'
                 % (0.6 * wrk)) if wrk else ""
        png = os.path.join(out, "throughput.png")
        gnuplot("""
set terminal pngcairo size 1000,520 font ",10"
set output '%s'
set title "Delivered jobs/s to a local HTTP endpoint (2 vCPUs shared by sluice, Redis, the endpoint)"
set key outside bottom center horizontal
set ylabel "jobs/s"
set style fill solid 0.7
set boxwidth 0.6
set yrange [0:*]
set grid ytics
set xtics rotate by -20
plot '%s' using 1:3:xtic(2) with boxes lc rgb "#1f77b4" notitle, \\
     '' using 1:3:(sprintf("%%.0f", $3)) with labels offset 0,1 notitle, \\
     25000 with lines lc rgb "#2ca02c" dt 3 title "target 25,000/s"%s
""" % (png, data, extra), notes)
        made.append(png)
    ad = res.get("adaptive")
    if ad and ad.get("runs"):
        made.append(adaptive_plot(ad["runs"], out, workdir, notes))
    return made


def adaptive_plot(runs, out, workdir, notes):
    """adaptive.png: one panel per run (without, then with the endpoint's
    X-RateLimit headers): delivered per 0.5 s, the effective rate, the
    hidden limit."""
    panels = []
    for i, r in enumerate(runs):
        data = os.path.join(workdir, "adaptive-%d.dat" % i)
        with open(data, "w") as fh:
            fh.write("# s delivered/s effective/s limit/s (NaN: not sampled yet)\n")
            for t, delivered, effective, limit in r["series"]:
                fh.write("%g %g %s %g\n" % (t, delivered,
                                             "NaN" if effective is None else "%g" % effective, limit))
        title = ("with the endpoint's X-RateLimit headers" if r["headers"] else
                 "without rate-limit headers")
        panels.append("""
set title "%s: %d 429s of %d requests (%.2f%%)"
plot '%s' using 1:4 with steps lw 2 dt 2 lc rgb "#d62728" title "hidden limit (the endpoint's token bucket)", \\
     '' using 1:2 with steps lw 1 lc rgb "#1f77b4" title "delivered (200s at the endpoint, per 0.5 s)", \\
     '' using 1:3 with lines lw 2 lc rgb "#2ca02c" title "effective rate (adaptive_rate in Redis)"
""" % (title, r["refused"], r["requests"], 100 * (r["refused_fraction"] or 0), data))
    png = os.path.join(out, "adaptive.png")
    gnuplot("""
set terminal pngcairo noenhanced size 1100,%d font ",10"
set output '%s'
set multiplot layout %d,1 title "One tenant with \\"adaptive\\": {\\"min\\": 5, \\"max\\": 200} (file rate 50/s, 1 daemon) against a hidden limit of 100, 40, 80 jobs/s"
set grid
set key top right
set xlabel "time since the daemon started (s)"
set ylabel "jobs/s"
set yrange [0:130]
%s
unset multiplot
""" % (380 * len(runs), png, len(runs), "".join(panels)), notes)
    return png
