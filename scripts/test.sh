#!/usr/bin/env bash
# The whole test suite: installs what it needs, checks the protos and generated
# code, vets, and runs every test (Go unit and end-to-end, Node SDK, grpcurl) with -race.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/tools.sh)"

echo "== buf lint"
buf lint

echo "== gen/ and clients/typescript/gen match a fresh buf generate"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp -r proto third_party buf.yaml buf.gen.yaml buf.gen.ts.yaml "$tmp/"
ln -s "$PWD/node_modules" "$tmp/node_modules"
(cd "$tmp" && buf generate && buf generate --template buf.gen.ts.yaml)
diff -r gen "$tmp/gen" || { echo "gen/ is stale: run 'make generate' and commit the result" >&2; exit 1; }
diff -r clients/typescript/gen "$tmp/clients/typescript/gen" ||
  { echo "clients/typescript/gen is stale: run 'make generate' and commit the result" >&2; exit 1; }

echo "== TypeScript client types (tsc)"
tsc -p clients/typescript

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^gen/'))
if [ -n "$unformatted" ]; then
  echo "not gofmt'd (run gofmt -w):"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...

echo "== Helm chart: helm lint, helm template decoded strictly as Kubernetes objects (deploy/helm/chartcheck)"
(cd deploy/helm/chartcheck && go vet ./... && go test -count=1 ./...)

echo "== buffers mapped outside the Go heap (a -race build lends heap slices instead: its detector sees only Go memory)"
go test -count=1 ./internal/bufpool

echo "== allocation ceilings that rest on sync.Pool (a -race build's pool drops a quarter of what is put back)"
go test -count=1 -run 'AllocationCeiling' ./internal/codec

echo "== go test -race"
go test -race -count=1 "$@" ./...
