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
export CGO_ENABLED=0 GOTOOLCHAIN=local GOBIN="$staging"
if ! go install "$pkg" 2>&1 | tee "$output"; then
  # Only an unreachable checksum database justifies skipping it for this one module; the module's own
  # go.sum still pins every dependency. A checksum *mismatch* (SECURITY ERROR) is never bypassed.
  if grep -q 'SECURITY ERROR' "$output" || ! grep -qE 'sum\.golang\.org|checksum database|GONOSUMDB|verifying module' "$output"; then
    echo "building the Temporal CLI failed" >&2
    exit 1
  fi
  echo "checksum database unreachable; retrying with GONOSUMDB=github.com/temporalio/cli"
  GONOSUMDB="github.com/temporalio/cli${GONOSUMDB:+,$GONOSUMDB}" GOFLAGS="${GOFLAGS:-} -mod=mod" go install "$pkg"
fi

mv -f "$staging/temporal" "$gobin/temporal"
echo "built $gobin/temporal"
