#!/usr/bin/env bash
# Load figures for the site on each warehouse kind: wrk on loopback against the leaderboard, a run page and a
# deep steps page, each beside the same bytes served as a static file by the same server (WhiteNoise).
#
#   bench/load.sh [file|ducklake ...]      (default: both)
#
# file      plain DuckDB file, `manage.py serve --workers 1` (the file admits one process)
# ducklake  DuckLake, SQLite catalog + Parquet folder (the embedded default), `serve --workers $WORKERS`
#
# Env: DURATION (wrk -d, default 10s), CONNECTIONS (a list of -c values, default "8 64"), THREADS (-t, 2),
# TIMEOUT (wrk --timeout, default 10s: a request slower than that is counted as a timeout, not as a latency),
# WORKERS (3), NAMES (the pages measured, default all: leaderboard api plot plot-bench plot-api run steps), PORT (8765), PYTHON (default .venv/bin/python or python3). Data and the generated tree go to bench/out/ (ignored by git):
# `make_demo_results --runs 40 --seed 7` (a ~50 MB, 20,000-step long run), generated once, ingested per kind.
# TREE: another results tree to ingest instead (e.g. the real shape, `make_demo_results DIR --methods 90 --seed 7
# --no-long-run --trace-scale 0.05`); OUT (default bench/out): where each kind's data folder goes. The deep steps
# page is the run with the most steps, from step min(19000, its steps - 200) on. WAREHOUSE: for the ducklake kind, a
# warehouse spec ingested already (published data included) to serve instead of ingesting TREE. START_SECONDS (60):
# how long the server may take to answer after it starts (it computes the most visited pages first).
# Prints requests/s, p50 and p99 latency (ms), non-2xx answers, socket errors (connect/read/write) and timeouts per
# URL, and the ratio of each page's requests/s to its static twin. Between two wrk runs the server is drained: the
# next run starts only once a static file answers within 1 s again (a backlog left by one run must not be billed
# to the next).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
DURATION=${DURATION:-10s} CONNECTIONS=${CONNECTIONS:-8 64} THREADS=${THREADS:-2} WORKERS=${WORKERS:-3}
PORT=${PORT:-8765} TIMEOUT=${TIMEOUT:-10s} START_SECONDS=${START_SECONDS:-60}
KINDS=${*:-file ducklake}
OUT=${OUT:-bench/out}
TREE=${TREE:-}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install -y wrk)" >&2; exit 1; }
mkdir -p "$OUT"
if [ -z "$TREE" ] && { [ -z "${WAREHOUSE:-}" ] || [[ " $KINDS " == *" file "* ]]; }; then  # a kind ingests it
    TREE=$OUT/results-40-7
    [ -f "$TREE/SYNTHETIC" ] || "$PY" manage.py make_demo_results "$TREE" --runs 40 --seed 7 >/dev/null
fi

SERVER=
stop() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null; SERVER=; }
trap stop EXIT
start() {  # start the server for this kind, wait until it answers
    "$PY" manage.py serve --workers "$1" --bind "127.0.0.1:$PORT" >"$DATA/serve.log" 2>&1 &
    SERVER=$!
    for _ in $(seq $((START_SECONDS * 2))); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/runs?limit=1" && return; sleep 0.5; done
    cat "$DATA/serve.log" >&2; exit 1
}
drain() {  # wait until the server answers a static file within 1 s (at most 60 s), so runs do not overlap
    for _ in $(seq 60); do
        curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/static/bench/leaderboard.html" && return
        sleep 1
    done
    echo "server still busy after 60 s of draining" >&2
}
measure() {  # label path connections: one wrk run; prints "label req/s p50 p99 non2xx errors timeouts"
    local report
    drain
    report=$(wrk -t"$THREADS" -c"$3" -d"$DURATION" --timeout "$TIMEOUT" --latency "http://127.0.0.1:$PORT$2")
    awk -v label="$1" '
        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
        $1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) }
        /Requests\/sec/ { rps = $2 } /Non-2xx/ { bad = $NF }
        /Socket errors/ { gsub(",", ""); errors = $4 + $6 + $8; timeouts = $10 }
        END { printf "%s %.1f %.1f %.1f %d %d %d\n", label, rps, p50, p99, bad, errors, timeouts }' <<<"$report"
}

for KIND in $KINDS; do
    DATA=$OUT/$KIND
    rm -rf "$DATA" && mkdir -p "$DATA"
    export PTB_DATA_DIR=$DATA DJANGO_STATIC_ROOT=$DATA/static
    case $KIND in
        file) export PTB_WAREHOUSE=$DATA/warehouse.duckdb; N=1 ;;
        ducklake) unset PTB_WAREHOUSE; N=$WORKERS ;;  # the default: DuckLake, SQLite catalog under $DATA
        *) echo "unknown kind $KIND" >&2; exit 2 ;;
    esac
    if [ "$KIND" = ducklake ] && [ -n "${WAREHOUSE:-}" ]; then
        export PTB_WAREHOUSE=$WAREHOUSE  # ingested already (with the published data): only read here
    else
        "$PY" manage.py migrate --noinput -v0
        "$PY" manage.py import_published >/dev/null
        /usr/bin/time -f "ingest: %e s" "$PY" manage.py ingest "$TREE" --quiet 2>&1 | tail -1
    fi
    read -r LONG AFTER <<<"$("$PY" manage.py shell -c "
from traces import selectors
runs, _ = selectors.list_runs(limit=None)
long = max(runs, key=lambda r: r.step_count)
print(long.id, max(0, min(19000, long.step_count - 200)))" | tail -n1)"
    declare -A PAGES=([leaderboard]=/ [api]=/api/leaderboard [plot]=/plots/time-vs-score/ [plot-bench]=/plots/per-benchmark/
                      [plot-api]=/api/plots/per-benchmark [run]=/runs/$LONG/ [steps]=/runs/$LONG/steps?after=$AFTER)
    NAMES=${NAMES:-leaderboard api plot plot-bench plot-api run steps}
    # Capture each page's bytes, then restart so WhiteNoise (which indexes files at start) serves them.
    start "$N"
    mkdir -p "$DATA/static/bench"
    for name in $NAMES; do curl -sf "http://127.0.0.1:$PORT${PAGES[$name]}" >"$DATA/static/bench/$name.html"; done
    stop
    start "$N"
    for C in $CONNECTIONS; do
        echo "== $KIND warehouse, $N worker(s), wrk -t$THREADS -c$C -d$DURATION --timeout $TIMEOUT; long run $LONG"
        printf "%-18s %9s %9s %9s %7s %7s %8s %9s %9s\n" url req/s p50_ms p99_ms non2xx sockerr timeouts bytes vs_static
        for name in $NAMES; do
            page=$(measure "$name" "${PAGES[$name]}" "$C")
            static=$(measure "$name(static)" "/static/bench/$name.html" "$C")
            bytes=$(stat -c %s "$DATA/static/bench/$name.html")
            read -r l r p50 p99 bad err tmo <<<"$page"
            read -r sl sr sp50 sp99 sbad serr stmo <<<"$static"
            printf "%-18s %9s %9s %9s %7s %7s %8s %9s %9s\n" "${PAGES[$name]:0:18}" "$r" "$p50" "$p99" "$bad" "$err" "$tmo" \
                "$bytes" "$(awk -v a="$r" -v b="$sr" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "n/a" }')"
            printf "%-18s %9s %9s %9s %7s %7s %8s %9s\n" "static $name" "$sr" "$sp50" "$sp99" "$sbad" "$serr" "$stmo" "$bytes"
        done
    done
    stop
done
