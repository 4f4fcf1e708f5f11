#!/usr/bin/env bash
# Builds main packages of one Go module version into a directory, from the Go module proxy.
# The project's Go tools (tools/go-tools.ts: the Temporal CLI and server, the Compose loader) are all
# built this way, once per machine, by the TypeScript that needs them (under a lock); safe by hand.
#   tools/go-install.sh MODULE VERSION OUTDIR PKG=NAME [PKG=NAME ...]
#   e.g. tools/go-install.sh github.com/temporalio/cli v1.5.1 .tools/bin cmd/temporal=temporal
#   tools/go-install.sh ./tools/compose-config - .tools/bin .=compose-config
# PKG is the package's folder inside the module, NAME the binary's file name. A MODULE that is a folder
# (starting with . or /) is one of ours, built with its committed go.sum (VERSION is ignored).
# Needs Go on PATH (>= the module's `go` line; Go 1.26 builds every pinned version).
set -euo pipefail

if [ $# -lt 4 ]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
module=$1 version=$2 outdir="$(mkdir -p "$3" && cd "$3" && pwd)"
shift 3

if ! command -v go >/dev/null; then
  echo "go is not on PATH: install Go >= 1.25 (tools/go-tools.ts names a prebuilt binary's variable where there is one)" >&2
  exit 127
fi

# Build into a private directory and rename at the end, so nobody ever sees a half-written binary.
mkdir -p "$outdir"
staging="$(mktemp -d "$outdir/.build.XXXXXX")"
output="$(mktemp)"
trap 'rm -rf "$staging" "$output"' EXIT

export CGO_ENABLED=0 GOTOOLCHAIN=local
if [[ $module == .* || $module == /* ]]; then
  # Our own module: its go.sum pins and verifies every dependency, so no checksum database is asked.
  echo "building ${*##*=} from $module ($(go version | cut -d' ' -f3))"
  for spec in "$@"; do
    go -C "$module" build -mod=readonly -trimpath -o "$staging/${spec##*=}" "./${spec%%=*}"
  done
  for spec in "$@"; do mv -f "$staging/${spec##*=}" "$outdir/${spec##*=}"; done
  exit 0
fi

pkgs=()
for spec in "$@"; do
  pkg=${spec%%=*}
  pkgs+=("$module/$pkg@$version")
done

echo "building ${*##*=} from $module@$version once ($(go version | cut -d' ' -f3))"
if ! GOBIN="$staging" go install "${pkgs[@]}" 2>&1 | tee "$output"; then
  # Retry only when the checksum database was unreachable; a checksum *mismatch* (SECURITY ERROR) or a
  # compile error is never papered over.
  if grep -q 'SECURITY ERROR' "$output" || ! grep -qE 'verifying (module|go\.mod)|sum\.golang\.org|sumdb' "$output"; then
    echo "building $module@$version failed" >&2
    exit 1
  fi
  # `go install pkg@version` checks every dependency against the checksum database, so skipping it for
  # the module alone is not enough. Instead fetch the module without the database and build it as the
  # main module: its own go.sum then pins and verifies every dependency.
  echo "checksum database unreachable; retrying with GONOSUMDB=$module and the module's go.sum"
  export GONOSUMDB="$module${GONOSUMDB:+,$GONOSUMDB}"
  dir="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "could not download $module@$version" >&2; exit 1; }
  for spec in "$@"; do
    (cd "$dir" && GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -o "$staging/${spec##*=}" "./${spec%%=*}")
  done
fi

# go install names a binary after its package's folder; give each the name asked for.
for spec in "$@"; do
  pkg=${spec%%=*} name=${spec##*=}
  [ -f "$staging/$name" ] || mv "$staging/$(basename "$pkg")" "$staging/$name"
done
for spec in "$@"; do
  name=${spec##*=}
  mv -f "$staging/$name" "$outdir/$name"
  echo "built $outdir/$name"
done
