#!/usr/bin/env bash
# Local pre-commit checks: the layout (swift format, .swift-format), warnings as errors, module boundaries, the
# Canonical import rule, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if grep -n "^\s*\(public \|internal \|@_implementationOnly \)\?import " Sources/Canonical/*.swift; then
    echo "Sources/Canonical must import nothing" >&2; exit 1
fi
swift format lint --strict --recursive --parallel Package.swift Sources Tests Fuzz
scripts/sql-texts --check >/dev/null || { scripts/sql-texts; exit 1; }
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
swift test
