#!/usr/bin/env bash
# Hostile-input probe: sends the 8 MB chat body whose unknown member is nested
# 4,000,000 arrays deep to a fresh Switchyard (master key set), once without a key
# and once with it, and prints the status, the time to answer and the process's
# peak RSS (VmHWM) for each. Each case gets its own process, so peaks do not mix.
# Usage: scripts/probe-deep-body.sh [depth]
set -euo pipefail
cd "$(dirname "$0")/.."
depth="${1:-4000000}"
tmp="$(mktemp -d)"
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/switchyard" ./cmd/switchyard
python3 - "$depth" > "$tmp/body.json" <<'PY'
import sys
d = int(sys.argv[1])
sys.stdout.write('{"model":"simulator/sim-1","messages":[{"role":"user","content":"hi"}],"x":' + "[" * d + "]" * d + "}")
PY
echo "body: $(stat -c %s "$tmp/body.json") bytes, depth $depth"
for case in "no key" "with key"; do
  SWITCHYARD_MASTER_KEY=sk-probe SWITCHYARD_DATA_DIR="$tmp" "$tmp/switchyard" \
    --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 --log-format json > "$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q '"Switchyard is serving"' "$tmp/log" && break; sleep 0.1; done
  url="$(grep -o '"http":"[^"]*"' "$tmp/log" | head -1 | cut -d'"' -f4)"
  before="$(awk '/VmHWM/{print $2}' /proc/$pid/status)"
  # The peak is sampled while the request runs, so it is known even if the process dies.
  (while peak="$(awk '/VmHWM/{print $2}' /proc/$pid/status 2>/dev/null)" && [[ -n "$peak" ]]; do echo "$peak" > "$tmp/peak"; sleep 0.05; done) &
  sampler=$!
  sleep 0.1
  auth=()
  [[ "$case" == "with key" ]] && auth=(-H "Authorization: Bearer sk-probe")
  : > "$tmp/resp"
  out="$(curl -s -o "$tmp/resp" -w '%{http_code} %{time_total}' "${auth[@]}" -H 'Expect:' \
    -H 'Content-Type: application/json' --data-binary @"$tmp/body.json" "$url/v1/chat/completions" || true)"
  sleep 0.2
  alive="no"; kill -0 "$pid" 2>/dev/null && alive="yes"
  kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
  echo "$case: status ${out% *}, ${out#* } s, peak RSS ${before} kB at start -> $(cat "$tmp/peak") kB, process alive: $alive"
  echo "  answer: $(head -c 300 "$tmp/resp")"
  [[ "$alive" == "no" ]] && echo "  log: $(grep -m1 -E 'fatal error|panic' "$tmp/log" || true)"
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
done
