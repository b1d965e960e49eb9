#!/usr/bin/env bash
# Refreshes the JavaScript the web UI ships: Chart.js, the only script its pages need (the charts).
#
# The copied files under webui/static/webui/vendor/ are committed, so a fresh clone, the tests and a deployment
# need neither npm nor the network; nothing is fetched at run time (no CDN). Run this only to change the pinned
# version: edit the version in webui/js/package.json, run `npm install --package-lock-only` in webui/js/, then
# this script, and commit package.json, package-lock.json and the refreshed vendor files together.
#
# It runs `npm ci` (the exact versions and hashes of package-lock.json, install scripts disabled) in webui/js/
# and copies Chart.js's UMD build, which defines the global `Chart` for a plain <script> tag, with its licence
# and that of @kurkle/color, which the build bundles. webui/js/node_modules/ is not committed (.gitignore).
set -euo pipefail
cd "$(dirname "$0")/.."
js=webui/js
out=webui/static/webui/vendor/chartjs
(cd "$js" && npm ci --ignore-scripts --no-audit --no-fund)
mkdir -p "$out"
# Without its source-map comment: the map is not shipped, and a hashing static storage (collectstatic with
# ManifestStaticFilesStorage) would fail on the missing file it names.
sed '/^\/\/# sourceMappingURL=/d' "$js/node_modules/chart.js/dist/chart.umd.min.js" >"$out/chart.umd.min.js"
cp "$js/node_modules/chart.js/LICENSE.md" "$out/LICENSE.md"
cp "$js/node_modules/@kurkle/color/LICENSE.md" "$out/LICENSE-kurkle-color.md"
version=$(node -p "require('./$js/node_modules/chart.js/package.json').version")
echo "Chart.js $version copied to $out/"
