#!/usr/bin/env bash
# Interoperability tests: Tachyon served as a real process on loopback,
# driven by the real clients from PyPI (nova's placement client, the
# `openstack` CLI with osc-placement). See interop/conftest.py.
#
#   interop/run.sh [pytest arguments...]
#   interop/run.sh --prepare    # only create and fill the venvs
#
# Installs the clients into interop/.venv (once; again only when
# interop/requirements.txt or the interpreter changes). The server runs from
# TACHYON_SERVER_PYTHON if set (tox sets it to its own env), else from the
# repository's .venv, which is created and filled as tools/run-tests.sh does
# (same stamp file) if it is missing or stale.
#
# Environment: PYTHON (interpreter for the venvs, default python3),
# TACHYON_SERVER_PYTHON, TACHYON_VENV (default .venv), INTEROP_VENV (default
# interop/.venv), INTEROP_TARGET (tachyon, default; or placement: the
# upstream reference, to check the tests themselves), INTEROP_KEEP (keep the
# server's work directory and log), INTEROP_RESULTS (write a JSON summary).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INTEROP="$ROOT/interop"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
CLIENT_VENV="${INTEROP_VENV:-$INTEROP/.venv}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

log() { echo "interop: $*" >&2; }
die() { log "$*"; exit 1; }

hash_files() {
    # sha256 of the named files' contents plus any extra words given after --
    local files=() extra=()
    while [ $# -gt 0 ]; do
        if [ "$1" = "--" ]; then shift; extra=("$@"); break; fi
        files+=("$1"); shift
    done
    { cat "${files[@]}" 2>/dev/null; printf '%s\n' "${extra[@]}"; } \
        | sha256sum | cut -d' ' -f1
}

APT_UPDATED=0
apt_install() {
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    if [ "$APT_UPDATED" -eq 0 ]; then
        "${sudo[@]}" apt-get update -qq >/dev/null
        APT_UPDATED=1
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "$@" >/dev/null
}

make_venv() {
    local venv="$1"
    if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c 'import sys' 2>/dev/null; then
        log "$venv is broken, recreating it"
        rm -rf "$venv"
    fi
    [ -x "$venv/bin/python" ] && return 0
    log "creating $venv"
    if ! "$PYTHON" -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        command -v apt-get >/dev/null 2>&1 || die "$PYTHON has no venv module"
        local py_minor
        py_minor="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
        apt_install python3-venv "python${py_minor}-venv" \
            || apt_install python3-venv
        "$PYTHON" -m venv "$venv"
    fi
}

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found"

# --- the server's environment -------------------------------------------------

if [ -z "${TACHYON_SERVER_PYTHON:-}" ]; then
    SERVER_VENV="${TACHYON_VENV:-$ROOT/.venv}"
    make_venv "$SERVER_VENV"
    if ! git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
        export PBR_VERSION="${PBR_VERSION:-0.1.0}"
    fi
    export SKIP_GENERATE_AUTHORS=1 SKIP_WRITE_GIT_CHANGELOG=1
    # Same stamp as tools/run-tests.sh, so either one installs for both.
    stamp_file="$SERVER_VENV/.tachyon-deps-stamp"
    stamp="$(hash_files requirements.txt test-requirements.txt \
        doc/requirements.txt api-ref/requirements.txt setup.cfg \
        setup.py pyproject.toml -- "$ROOT" "$("$SERVER_VENV/bin/python" --version 2>&1)")"
    if [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
        log "installing Tachyon and its requirements into $SERVER_VENV"
        # flock: an editable install writes the checkout's egg-info, one
        # at a time (nova_functional/run.sh --prepare may run beside).
        flock "$ROOT/setup.cfg" "$SERVER_VENV/bin/python" -m pip install -q \
            -r requirements.txt -r test-requirements.txt -e . \
            || die "pip install (server) failed"
        echo "$stamp" > "$stamp_file"
    fi
    export TACHYON_SERVER_PYTHON="$SERVER_VENV/bin/python"
fi
[ -x "$TACHYON_SERVER_PYTHON" ] || die "TACHYON_SERVER_PYTHON=$TACHYON_SERVER_PYTHON is not executable"

# --- the clients' environment -------------------------------------------------

make_venv "$CLIENT_VENV"
stamp_file="$CLIENT_VENV/.interop-stamp"
stamp="$(hash_files "$INTEROP/requirements.txt" -- "$("$CLIENT_VENV/bin/python" --version 2>&1)")"
if [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
    log "installing the clients (nova, python-openstackclient, osc-placement) into $CLIENT_VENV"
    "$CLIENT_VENV/bin/python" -m pip install -q -r "$INTEROP/requirements.txt" \
        || die "pip install (clients) failed"
    PYTHONWARNINGS=ignore "$CLIENT_VENV/bin/python" -c 'import nova.scheduler.client.report, osc_placement' \
        || die "the clients do not import"
    [ -x "$CLIENT_VENV/bin/openstack" ] || die "no openstack CLI in $CLIENT_VENV"
    echo "$stamp" > "$stamp_file"
fi
log "clients: $("$CLIENT_VENV/bin/python" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(nova|osc-placement|python-openstackclient|keystoneauth1)==' | tr '\n' ' ')"

# --- Keystone's environment ---------------------------------------------------

KEYSTONE_VENV="${INTEROP_KEYSTONE_VENV:-$INTEROP/.keystone-venv}"
make_venv "$KEYSTONE_VENV"
stamp_file="$KEYSTONE_VENV/.interop-stamp"
stamp="$(hash_files "$INTEROP/keystone-requirements.txt" -- "$("$KEYSTONE_VENV/bin/python" --version 2>&1)")"
if [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
    log "installing Keystone into $KEYSTONE_VENV"
    "$KEYSTONE_VENV/bin/python" -m pip install -q -r "$INTEROP/keystone-requirements.txt" \
        || die "pip install (keystone) failed"
    [ -x "$KEYSTONE_VENV/bin/keystone-manage" ] || die "no keystone-manage in $KEYSTONE_VENV"
    echo "$stamp" > "$stamp_file"
fi
export INTEROP_KEYSTONE_PYTHON="$KEYSTONE_VENV/bin/python"

# --- Prometheus: the telemetry step scrapes a real one ---------------------------

# Without it that step is skipped; .ci/run runs the interop before
# tools/run-tests.sh, which would install it only then.
if ! command -v prometheus >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    log "installing Prometheus (Debian's package) for the telemetry step"
    apt_install prometheus || die "apt-get install prometheus failed"
fi

# --- run ------------------------------------------------------------------------

# With --prepare, stop here: runs started together afterwards (.ci/run's
# one per engine) then share venvs that are complete, instead of each
# installing into them at the same time.
if [ "${1:-}" = "--prepare" ]; then
    log "venvs ready"
    exit 0
fi

set +e
(cd "$INTEROP" && "$CLIENT_VENV/bin/python" -m pytest "$@")
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    log "pytest collected no tests: failing"
    rc=1
fi
exit "$rc"
