# The Rust toolchain for the two README commands (sourced, not run). On a fresh Debian machine there is
# no cargo, and Debian's own rustc is older than the workspace's rust-version (1.80), so the toolchain
# comes from rustup, with the C linker and download tools from apt-get. Nothing happens when cargo is
# already there.

ensure_rust() {
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
    command -v cargo >/dev/null && return 0
    echo "cargo not found: installing the Rust toolchain with rustup (https://rustup.rs)" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
    local packages=()
    command -v curl >/dev/null || packages+=(curl ca-certificates)
    command -v cc >/dev/null || packages+=(gcc libc6-dev)
    if [ ${#packages[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
                "${packages[@]}" || return 1
    fi
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
        sh -s -- -y --profile minimal --component rustfmt,clippy >&2 || return 1
    export PATH="$HOME/.cargo/bin:$PATH"
    command -v cargo >/dev/null
}
