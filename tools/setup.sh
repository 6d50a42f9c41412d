#!/usr/bin/env bash
# Set up vkml's development environment in the repository root, idempotently.
#
#   tools/setup.sh runtime   # .venv with vkml and its runtime dependencies (for `make demo`)
#   tools/setup.sh test      # the same plus the test extra: pytest, hypothesis, torch, ruff (`make test`)
#
# Steps: a Vulkan loader and driver (apt-get as root, otherwise a hint: the CPU backend works
# without them), Python >= 3.11 with venv, .venv, then `pip install -e .[extra]`. A stamp in
# .venv keyed by a hash of pyproject.toml and this script makes a run with nothing to do cost
# a few milliseconds. Set PYTHON to pick the interpreter that creates .venv (default python3).
set -euo pipefail

profile="${1:-test}"
case "$profile" in
runtime | test) ;;
*)
    echo "usage: tools/setup.sh [runtime|test]" >&2
    exit 2
    ;;
esac

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo_root/.venv"
python_cmd="${PYTHON:-python3}"
# pyproject leaves torch unpinned so that any recent torch satisfies a user's own environment.
# Here it is pinned: this project's machines keep the CPU wheel of 2.13.0 on disk (pip's
# find-links), whereas an unpinned `torch` would resolve to a newer multi-GB CUDA build.
torch_pin="torch==2.13.0"

is_root() { [ "$(id -u)" = 0 ]; }

apt_updated=""
apt_install() {
    # apt-get update once per run, only when something is really installed.
    if [ -z "$apt_updated" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

have_vulkan_loader() {
    local lib
    # Globs first (no process to start); ldconfig knows any other library folder.
    for lib in /usr/lib/*/libvulkan.so.1 /usr/lib64/libvulkan.so.1 /usr/lib/libvulkan.so.1 \
        /lib/*/libvulkan.so.1 /usr/local/lib/libvulkan.so.1; do
        [ -e "$lib" ] && return 0
    done
    local ldconfig
    ldconfig="$(command -v ldconfig || echo /sbin/ldconfig)"
    [ -x "$ldconfig" ] && "$ldconfig" -p 2>/dev/null | grep -q 'libvulkan\.so\.1 '
}

have_vulkan_icd() {
    local icd
    for icd in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; do
        [ -e "$icd" ] && return 0
    done
    return 1
}

ensure_vulkan_driver() {
    if have_vulkan_loader && have_vulkan_icd; then
        return 0
    fi
    local packages=(libvulkan1 mesa-vulkan-drivers)
    if is_root && command -v apt-get >/dev/null; then
        echo "setup: no Vulkan loader or driver found; installing ${packages[*]} with apt-get"
        if ! apt_install "${packages[@]}"; then
            echo "setup: WARNING: apt-get could not install ${packages[*]}; only the CPU backend will work" >&2
        fi
    else
        echo "setup: no Vulkan loader or driver found; vkml's CPU backend still works. For Vulkan run:" >&2
        echo "    sudo apt-get install -y ${packages[*]}" >&2
    fi
}

ensure_python_with_venv() {
    if ! command -v "$python_cmd" >/dev/null; then
        if is_root && command -v apt-get >/dev/null && [ "$python_cmd" = python3 ]; then
            apt_install python3 python3-venv
        else
            echo "setup: $python_cmd not found; install Python >= 3.11 (sudo apt-get install -y python3 python3-venv)" >&2
            exit 1
        fi
    fi
    if ! "$python_cmd" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "setup: vkml needs Python >= 3.11, but $python_cmd is $("$python_cmd" -V 2>&1);" \
            "run again with PYTHON=python3.11 (or newer)" >&2
        exit 1
    fi
    # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package.
    if ! "$python_cmd" -c 'import ensurepip, venv' 2>/dev/null; then
        if is_root && command -v apt-get >/dev/null && [ "$python_cmd" = python3 ]; then
            apt_install python3-venv
        else
            echo "setup: $python_cmd cannot create a venv; run: sudo apt-get install -y python3-venv" >&2
            exit 1
        fi
    fi
}

# The stamp names what was installed and from which recipe; any edit to either redoes the install.
recipe_hash="$(cat "$repo_root/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
stamp_is_current() { # profile
    [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.vkml-setup-$1" 2>/dev/null)" = "$recipe_hash" ]
}

ensure_vulkan_driver

# The test profile installs a superset of the runtime one, so its stamp satisfies both.
if stamp_is_current test || stamp_is_current "$profile"; then
    exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
    ensure_python_with_venv
    echo "setup: creating $venv"
    # --clear: a .venv whose interpreter is gone is rebuilt rather than half-reused.
    "$python_cmd" -m venv --clear "$venv"
fi

if [ "$profile" = test ]; then
    requirements=(-e "$repo_root[test]" "$torch_pin")
else
    requirements=(-e "$repo_root")
fi
echo "setup: installing ${requirements[*]} into .venv (quick when all is there already)"
# -qq: errors only; this machine's pip config adds a warning per package about absent local indexes.
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet --quiet "${requirements[@]}"
echo "$recipe_hash" >"$venv/.vkml-setup-$profile"
echo "setup: done"
