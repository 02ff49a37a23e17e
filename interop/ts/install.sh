#!/usr/bin/env bash
# Installs the TypeScript MCP SDK pinned in package.json (and locked in
# package-lock.json) into interop/ts/node_modules, for interop/ts_test.go.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! command -v npm >/dev/null 2>&1; then
  echo "interop/ts/install.sh: npm is not on PATH (install Node.js >= 18 with npm)" >&2
  exit 1
fi
if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  npm install --no-audit --no-fund --omit-lockfile-registry-resolved
fi
