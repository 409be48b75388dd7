# Sourced by scripts/test-python.sh and scripts/wheel.sh: making venvs.

# A fresh venv at $1, installing python3-venv first where Debian's python3
# comes without it (root or password-less sudo, as ensure-redis.sh does).
make_venv() {
    if python3 -m venv --clear "$1" 2>/dev/null; then
        return
    fi
    SUDO=()
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    fi
    if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ ${#SUDO[@]} -gt 0 ]; }; then
        echo "test-python: installing python3-venv with apt-get..." >&2
        ${SUDO[@]+"${SUDO[@]}"} apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive ${SUDO[@]+"${SUDO[@]}"} apt-get install -y -qq python3 python3-venv >/dev/null
    fi
    if ! python3 -m venv --clear "$1"; then
        echo "test-python: 'python3 -m venv' failed; install Python 3.9+ with venv support (Debian/Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    fi
}

pip_quiet() {
    "$1/bin/pip" install --quiet --disable-pip-version-check "${@:2}"
}

# $PATH without each directory that holds `cargo` or `rustc`: the PATH of
# a crawler's host without Rust.
path_without_rust() {
    local out="" dir
    local IFS=:
    for dir in $PATH; do
        if [ -n "$dir" ] && [ ! -e "$dir/cargo" ] && [ ! -e "$dir/rustc" ]; then
            out="${out:+$out:}$dir"
        fi
    done
    printf '%s\n' "$out"
}
