#!/usr/bin/env bash
# mermaid 11 from the npm registry under build/mermaid (git-ignored), for the test that renders
# every report's Mermaid charts in headless Chromium (tests/unit/report/test_mermaid_render.py).
# Idempotent: nothing is fetched when the bundle is there.
set -euo pipefail

dir="$(cd "$(dirname "$0")/.." && pwd)/build/mermaid"
[ -f "$dir/node_modules/mermaid/dist/mermaid.min.js" ] && exit 0
command -v npm >/dev/null || { echo "need npm (apt install npm) to install mermaid" >&2; exit 1; }
mkdir -p "$dir"
echo "installing mermaid@11 into $dir"
npm install --silent --no-audit --no-fund --prefix "$dir" mermaid@11 >/dev/null
