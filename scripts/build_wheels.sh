#!/usr/bin/env bash
# Builds the release artefacts into dist/ and checks them, with no container: abi3 wheels
# for manylinux_2_28 on x86_64 and aarch64 (maturin links through zig, which targets
# glibc 2.28 from any host), plus the sdist. Checks: `auditwheel show` reports the
# manylinux tag of each wheel, `twine check --strict` passes, the wheels and the sdist
# carry both license files, the host's wheel installs into a fresh virtualenv and runs the
# CPU demo, and the sdist builds into a wheel that does the same.
# The release workflow (.github/workflows/release.yml) runs the same steps on CI.
#
#   scripts/build_wheels.sh                  # both targets
#   CUDNN_RS_WHEEL_TARGETS=x86_64-unknown-linux-gnu scripts/build_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."

policy=manylinux_2_28
read -r -a targets <<<"${CUDNN_RS_WHEEL_TARGETS:-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu}"
# Build tools, pinned, in a virtualenv of their own (under target/, which git ignores).
tools=${CUDNN_RS_WHEEL_TOOLS:-target/wheel-tools}
work=target/wheel-check
python=${PYTHON:-python3}

step() { printf '\n== %s\n' "$*"; }
fail() { echo "build_wheels: $*" >&2; exit 1; }

step "build tools in $tools"
[ -x "$tools/bin/python" ] || "$python" -m venv "$tools"
"$tools/bin/python" -m pip install -q --disable-pip-version-check \
    maturin==1.16.0 ziglang==0.15.2 auditwheel==6.8.2 twine==7.0.0
# maturin finds zig through the ziglang package of the `python3` first on PATH.
export PATH="$PWD/$tools/bin:$PATH"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || fail "no version in Cargo.toml"
rm -rf dist "$work"
mkdir -p dist "$work"

not_built=()
for target in "${targets[@]}"; do
    arch=${target%%-*}
    step "wheel for $target ($policy)"
    installed=$(rustup target list --installed)
    if ! grep -qx "$target" <<<"$installed" && ! rustup target add "$target"; then
        # Offline, or no rustup: build the other targets, then fail at the end.
        echo "build_wheels: rustup could not add $target; not building its wheel" >&2
        not_built+=("$target (rustup target add failed)")
        continue
    fi
    maturin build --release --zig --compatibility "$policy" --target "$target" -o dist
    wheel="dist/cudnn_rs-$version-cp311-abi3-${policy}_$arch.whl"
    [ -f "$wheel" ] || fail "expected $wheel; dist/ holds: $(ls dist)"
    report=$(auditwheel show "$wheel" | tr '\n' ' ')
    echo "$report"
    grep -q "consistent with the following platform tag: \"${policy}_$arch\"" <<<"$report" ||
        fail "auditwheel does not place $wheel at ${policy}_$arch"
    listing=$("$tools/bin/python" -m zipfile -l "$wheel")
    for f in LICENSE-MIT LICENSE-APACHE; do
        grep -q "dist-info/licenses/$f" <<<"$listing" || fail "$wheel lacks $f"
    done
done

step "sdist"
maturin sdist -o dist
sdist="dist/cudnn_rs-$version.tar.gz"
[ -f "$sdist" ] || fail "expected $sdist"
# Listed first: `grep -q` stopping early would fail the pipeline with SIGPIPE.
contents=$(tar tzf "$sdist")
for f in LICENSE-MIT LICENSE-APACHE; do
    grep -qx "cudnn_rs-$version/$f" <<<"$contents" || fail "$sdist lacks $f"
done

step "twine check --strict"
twine check --strict dist/*

# Runs the installed package outside the source tree: version, import, CPU demo.
smoke() {
    local venv=$1
    (cd "$work" && "$venv/bin/python" -c "
import cudnn_rs
assert cudnn_rs.__version__ == '$version', cudnn_rs.__version__
print('cudnn_rs', cudnn_rs.__version__, 'imports')
" && "$venv/bin/python" -m cudnn_rs demo)
}

host_arch=$(uname -m)
host_wheel="dist/cudnn_rs-$version-cp311-abi3-${policy}_$host_arch.whl"
if [ -f "$host_wheel" ]; then
    step "the $host_arch wheel in a fresh virtualenv"
    "$python" -m venv "$work/wheel-venv"
    "$work/wheel-venv/bin/pip" install -q --disable-pip-version-check "$host_wheel"
    smoke "$PWD/$work/wheel-venv"
fi

step "the sdist built into a wheel in a fresh virtualenv"
"$python" -m venv "$work/sdist-venv"
# A target directory of its own, kept between runs, so a second run need not recompile.
CARGO_TARGET_DIR="$PWD/target/sdist-build" \
    "$work/sdist-venv/bin/pip" install -q --disable-pip-version-check "$sdist"
smoke "$PWD/$work/sdist-venv"

step "built"
ls -l dist
if [ "${#not_built[@]}" -gt 0 ]; then
    fail "not built: ${not_built[*]}"
fi
