#!/usr/bin/env bash
# Installs the pinned tools Switchyard's build and tests need, once, into a cache
# directory reused across runs and clones; then prints the PATH to use.
#   eval "$(scripts/tools.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."

BIN="${SWITCHYARD_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard/bin}"
mkdir -p "$BIN"

# module path@version  binary
TOOLS=(
  "google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 protoc-gen-go"
  "google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2 protoc-gen-go-grpc"
  "github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@v0.6.1-0.20240319094008-0393e58bdf10 protoc-gen-go-vtproto"
  "github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@v2.33.0 protoc-gen-grpc-gateway"
  "github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@v2.33.0 protoc-gen-openapiv2"
  "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4 grpcurl"
  # helm lint / helm template check deploy/helm (a cold build takes ~6 min; cached after)
  "helm.sh/helm/v3/cmd/helm@v3.22.0 helm"
)
for entry in "${TOOLS[@]}"; do
  read -r pkg bin <<<"$entry"
  version="${pkg##*@}"
  if [[ -x "$BIN/$bin" ]] && go version -m "$BIN/$bin" 2>/dev/null | grep -q "$version"; then
    continue
  fi
  echo "installing $pkg" >&2
  GOBIN="$BIN" GOFLAGS=-mod=mod go install "$pkg" >&2
done

# curl runs the README's examples in the tests.
if ! command -v curl >/dev/null; then
  echo "installing curl (apt-get)" >&2
  (apt-get update -qq && apt-get install -y -qq curl) >&2
fi

# redis-server: the real Redis the shared-state tests start (internal/redistest).
if ! command -v redis-server >/dev/null; then
  echo "installing redis-server (apt-get)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null) >&2
fi

# PostgreSQL: the real Postgres the usage ledger's store tests start (internal/pgtest: initdb + pg_ctl
# in a temp dir on a free loopback port); the package's own cluster, if it starts one, is not used.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  echo "installing postgresql (apt-get)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
fi

# buf (prebuilt, from npm) and the Node OpenAI SDK for the end-to-end tests. Node 20 or newer
# (package.json's engines; .npmrc's engine-strict makes npm refuse a package that wants more).
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if (( node_major < 20 )); then
  echo "Switchyard's tests need Node.js 20 or newer (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
stamp="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ ! -x node_modules/.bin/buf ]] || [[ "$(cat node_modules/.switchyard-stamp 2>/dev/null)" != "$stamp" ]]; then
  echo "installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=warn >&2
  echo "$stamp" > node_modules/.switchyard-stamp
fi

echo "export PATH=\"$PWD/node_modules/.bin:$BIN:\$PATH\" BUF_CACHE_DIR=\"\${BUF_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard/buf}\""
