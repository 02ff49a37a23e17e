#!/usr/bin/env bash
# Real-client interop tests (interop/, a Go module of its own): the official
# Go SDK client and, through Node.js, the official TypeScript SDK client
# against lifeline's transport. Installs the TypeScript client first.
#
# Node.js is required: a missing node fails this script (and the TypeScript
# test is told to fail, not skip), so CI can never skip a client silently.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v node >/dev/null 2>&1; then
  echo "interop: node is not on PATH; the TypeScript client test needs Node.js >= 18 with npm" >&2
  exit 1
fi
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 18 ]; then
  echo "interop: node $(node --version) is too old; @modelcontextprotocol/sdk needs Node.js >= 18" >&2
  exit 1
fi
echo "interop: node $(node --version), npm $(npm --version 2>/dev/null || echo missing), $(go version)"

bash "$root/interop/ts/install.sh"

cd "$root/interop"
export LIFELINE_INTEROP_REQUIRE_TS=1
go vet ./...
go test -race -count=1 ./...
