#!/usr/bin/env bash
# The site under load while runs arrive: wrk with CONNECTIONS clients on the leaderboard for DURATION while
# `manage.py ingest` stores a second results tree (~100 agent runs) into the same DuckLake warehouse; then how long
# a static file takes to answer right after the burst.
#
#   bench/ingest_under_load.sh            (after bench/load.sh ducklake, whose warehouse and static twin it reuses)
#
# Env: DURATION (30s), CONNECTIONS (64), THREADS (2), TIMEOUT (10s), WORKERS (3), PORT (8766), PYTHON, URL (/),
# RUNS (100: agent runs of the second tree, make_demo_results --runs RUNS --seed 8, generated once).
# Prints every HTTP status wrk saw with its count (503s are deliberate: load shed; any other 5xx is a failure),
# socket errors and timeouts, the ingest's report line and wall time, and the static file's time after the burst.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
DURATION=${DURATION:-30s} CONNECTIONS=${CONNECTIONS:-64} THREADS=${THREADS:-2} TIMEOUT=${TIMEOUT:-10s}
WORKERS=${WORKERS:-3} PORT=${PORT:-8766} URL=${URL:-/} RUNS=${RUNS:-100}
OUT=bench/out
DATA=$OUT/ducklake
TREE=$OUT/results-$RUNS-8
command -v wrk >/dev/null || { echo "needs wrk (apt-get install -y wrk)" >&2; exit 1; }
[ -d "$DATA/ducklake" ] || { echo "run bench/load.sh ducklake first (it fills $DATA)" >&2; exit 1; }
[ -f "$TREE/SYNTHETIC" ] || "$PY" manage.py make_demo_results "$TREE" --runs "$RUNS" --seed 8 >/dev/null
export PTB_DATA_DIR=$DATA DJANGO_STATIC_ROOT=$DATA/static
unset PTB_WAREHOUSE

"$PY" manage.py serve --workers "$WORKERS" --bind "127.0.0.1:$PORT" >"$DATA/serve-ingest.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT
for _ in $(seq 120); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/api/runs?limit=1" && break; sleep 0.5; done

SCRIPT=$(mktemp --suffix=.lua)
cat >"$SCRIPT" <<'LUA'
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) statuses = {} end
function response(status, headers, body) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do total[k] = (total[k] or 0) + v end
  end
  for k, v in pairs(total) do io.write(string.format("status %s: %d\n", k, v)) end
end
LUA
echo "== $(uptime)"
echo "== wrk -t$THREADS -c$CONNECTIONS -d$DURATION --timeout $TIMEOUT $URL, while: manage.py ingest $TREE"
START=$(date +%s.%N)
( /usr/bin/time -f "ingest wall: %e s" "$PY" manage.py ingest "$TREE" --quiet 2>&1 | tail -2 ) >"$DATA/ingest-under-load.txt" &
INGEST=$!
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --timeout "$TIMEOUT" --latency -s "$SCRIPT" "http://127.0.0.1:$PORT$URL" \
    | grep -E "Requests/sec|Socket errors|Non-2xx|50%|99%|status|requests in"
curl -s -o /dev/null -w "static file right after the burst: %{http_code} in %{time_total} s\n" \
    "http://127.0.0.1:$PORT/static/bench/leaderboard.html"
wait $INGEST
cat "$DATA/ingest-under-load.txt"
awk -v s="$START" -v e="$(date +%s.%N)" 'BEGIN { printf "ingest + burst took %.1f s\n", e - s }'
echo "== $(uptime)"
rm -f "$SCRIPT"
