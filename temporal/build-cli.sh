#!/usr/bin/env bash
# Builds the Temporal CLI (which embeds the dev server) from Go modules into <repo>/.tools/bin/temporal.
# Called once by temporal/cli.ts (under a lock) when no CLI is found; safe to run by hand.
# v1.5.1 is the last tag installable with `go install` (DESIGN §3). Needs Go >= 1.24 on PATH.
#   TEMPORAL_CLI_GOBIN     where to put the binary (default <repo>/.tools/bin)
#   TEMPORAL_CLI_VERSION   module version (default v1.5.1)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
gobin="${TEMPORAL_CLI_GOBIN:-$repo/.tools/bin}"
version="${TEMPORAL_CLI_VERSION:-v1.5.1}"
pkg="github.com/temporalio/cli/cmd/temporal@$version"

if ! command -v go >/dev/null; then
  echo "go is not on PATH: install Go >= 1.24, or set TEMPORAL_CLI to an existing temporal binary" >&2
  exit 127
fi

# Build into a private directory and rename at the end, so nobody ever sees a half-written binary.
mkdir -p "$gobin"
staging="$(mktemp -d "$gobin/.build.XXXXXX")"
output="$(mktemp)"
trap 'rm -rf "$staging" "$output"' EXIT

echo "building the Temporal CLI once, this takes a few minutes ($pkg, $(go version | cut -d' ' -f3))"
export CGO_ENABLED=0 GOTOOLCHAIN=local
if ! GOBIN="$staging" go install "$pkg" 2>&1 | tee "$output"; then
  # Retry only when the checksum database was unreachable; a checksum *mismatch* (SECURITY ERROR) or a
  # compile error is never papered over.
  if grep -q 'SECURITY ERROR' "$output" || ! grep -qE 'verifying (module|go\.mod)|sum\.golang\.org|sumdb' "$output"; then
    echo "building the Temporal CLI failed" >&2
    exit 1
  fi
  # `go install pkg@version` checks every dependency against the checksum database, so skipping it for
  # the CLI module alone is not enough (measured). Instead fetch the CLI module without the database and
  # build it as the main module: its own go.sum then pins and verifies every dependency.
  echo "checksum database unreachable; retrying with GONOSUMDB=github.com/temporalio/cli and the module's go.sum"
  export GONOSUMDB="github.com/temporalio/cli${GONOSUMDB:+,$GONOSUMDB}"
  dir="$(go mod download -json "github.com/temporalio/cli@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "could not download github.com/temporalio/cli@$version" >&2; exit 1; }
  (cd "$dir" && GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -o "$staging/temporal" ./cmd/temporal)
fi

mv -f "$staging/temporal" "$gobin/temporal"
echo "built $gobin/temporal"
