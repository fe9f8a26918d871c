#!/usr/bin/env bash
# Run the whole Tachyon test suite: the one command for a fresh machine that
# has only python3 (Debian 12), and a quick one once everything is in place.
#
#   tools/run-tests.sh [pytest arguments...]
#   tools/run-tests.sh --prepare    # install what the suite needs, run nothing
#
# It creates .venv in the repository if missing, installs the Python
# requirements and the project (editable) into it, makes sure Node.js and
# npm exist (from Debian's packages, as root) and installs the Cypher lint's
# npm packages in tools/cypher-lint, installs Debian's prometheus for the
# telemetry tests if missing, then runs pytest on tachyon_placement/tests
# (or on the paths given) and exits with pytest's status; "no tests
# collected" (pytest's 5) is turned into a failure.
#
# The suite runs once per engine: the embedded FalkorDB, then a real Neo4j
# Community server that tools/neo4j-server.sh starts in a JVM for the run
# (built with Maven from Maven Central on first use) and stops afterwards.
#
# Environment: PYTHON (interpreter for the venv, default python3),
# TACHYON_VENV (default .venv), TACHYON_TEST_ENGINES (the engines to run
# on, default "falkordb neo4j"), TACHYON_TEST_NEO4J_URI (run the Neo4j pass
# against that server instead of starting one; TACHYON_TEST_NEO4J_USER,
# _PASSWORD, _DATABASE go with it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="${TACHYON_VENV:-$ROOT/.venv}"
LINT_DIR="$ROOT/tools/cypher-lint"
MIN_NODE_MAJOR=18

log() { echo "run-tests: $*" >&2; }
die() { log "$*"; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run: $*"
    fi
}

APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "cannot install $*: no apt-get"
    if [ "$APT_UPDATED" -eq 0 ]; then
        log "apt-get update"
        as_root apt-get update -qq >/dev/null
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

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

# --- Python: .venv with the requirements and the project -------------------

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
    || die "Python >= 3.10 needed, $PYTHON is $("$PYTHON" --version 2>&1)"

if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    log "$VENV is broken, recreating it"
    rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
        # Debian's python3 ships venv/ensurepip separately.
        rm -rf "$VENV"
        py_minor="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
        apt_install python3-venv "python${py_minor}-venv" \
            || apt_install python3-venv
        "$PYTHON" -m venv "$VENV"
    fi
fi

# pbr takes the version from git; without a commit (or without git) it needs
# to be told.
if ! git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    export PBR_VERSION="${PBR_VERSION:-0.1.0}"
fi
export SKIP_GENERATE_AUTHORS=1 SKIP_WRITE_GIT_CHANGELOG=1

PY_STAMP_FILE="$VENV/.tachyon-deps-stamp"
py_stamp="$(hash_files requirements.txt test-requirements.txt \
    doc/requirements.txt api-ref/requirements.txt setup.cfg \
    setup.py pyproject.toml -- "$ROOT" "$("$VENV/bin/python" --version 2>&1)")"
if [ "$(cat "$PY_STAMP_FILE" 2>/dev/null)" != "$py_stamp" ]; then
    log "installing Python requirements into $VENV"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    # flock: an editable install writes the checkout's egg-info, one at a
    # time (.ci/run fills other venvs from this checkout beside).
    flock "$ROOT/setup.cfg" "$VENV/bin/python" -m pip install -q \
        -r requirements.txt -r test-requirements.txt -e . \
        || die "pip install failed"
    echo "$py_stamp" > "$PY_STAMP_FILE"
fi

# --- Node.js: the Neo4j Cypher lint ------------------------------------------

node_major() {
    command -v node >/dev/null 2>&1 || { echo 0; return; }
    node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}
if [ "$(node_major)" -lt "$MIN_NODE_MAJOR" ] || ! command -v npm >/dev/null 2>&1; then
    log "Node.js >= $MIN_NODE_MAJOR and npm are needed for the Cypher lint"
    apt_install nodejs npm
    [ "$(node_major)" -ge "$MIN_NODE_MAJOR" ] \
        || die "node $(node --version 2>/dev/null || echo missing) is too old"
fi

NODE_STAMP_FILE="$LINT_DIR/node_modules/.tachyon-stamp"
node_stamp="$(hash_files "$LINT_DIR/package.json" "$LINT_DIR/package-lock.json" \
    -- "$(node --version)")"
if [ "$(cat "$NODE_STAMP_FILE" 2>/dev/null)" != "$node_stamp" ]; then
    log "installing the Cypher lint's npm packages"
    if [ -f "$LINT_DIR/package-lock.json" ]; then
        npm_cmd=ci
    else
        npm_cmd=install
    fi
    (cd "$LINT_DIR" && npm "$npm_cmd" --no-audit --no-fund --loglevel=error) \
        || die "npm $npm_cmd failed in $LINT_DIR"
    echo "$node_stamp" > "$NODE_STAMP_FILE"
fi

# --- Prometheus: the telemetry tests scrape a real one ----------------------

if ! command -v prometheus >/dev/null 2>&1; then
    log "Prometheus is needed for the telemetry tests"
    apt_install prometheus
fi

# --- HAProxy: the API nodes test puts Debian's in front of three APIs ------

if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
    log "HAProxy is needed for the API nodes test"
    apt_install haproxy
fi

# --- MariaDB: the import tests read a real Placement's database -------------

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    log "MariaDB is needed for the import tests"
    apt_install mariadb-server
fi

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    log "PostgreSQL is needed for the import tests"
    apt_install postgresql
fi

# --- shellcheck: the devstack plugin is checked with it ---------------------

if ! command -v shellcheck >/dev/null 2>&1; then
    log "shellcheck is needed for the devstack plugin's test"
    apt_install shellcheck
fi

# --- curl: the documentation's examples (the README's tour) use it ---------

if ! command -v curl >/dev/null 2>&1; then
    log "curl is needed for the documentation's examples"
    apt_install curl
fi

# --- pytest, once per engine ------------------------------------------------

# --prepare: everything above, no test (.ci/run installs while it waits on
# other downloads).
if [ "${1:-}" = "--prepare" ]; then
    log "prepared"
    exit 0
fi

# Run the whole suite unless a test path was given.
default_paths=(tachyon_placement/tests)
for arg in "$@"; do
    case "$arg" in
        -*) ;;
        *) if [ -e "${arg%%::*}" ]; then default_paths=(); break; fi ;;
    esac
done

NEO4J_STATE=""
stop_neo4j() {
    if [ -n "$NEO4J_STATE" ]; then
        TACHYON_NEO4J_DIR="$NEO4J_STATE" "$ROOT/tools/neo4j-server.sh" stop \
            >/dev/null 2>&1 || true
        rm -rf "$NEO4J_STATE"
        NEO4J_STATE=""
    fi
}
trap stop_neo4j EXIT

run_pytest() {
    local rc
    set +e
    "$VENV/bin/python" -m pytest "${default_paths[@]}" "$@"
    rc=$?
    set -e
    if [ "$rc" -eq 5 ]; then
        log "pytest collected no tests: failing"
        rc=1
    fi
    return "$rc"
}

# TACHYON_TEST_SIDE_BY_SIDE=1: the engines' passes run at the same time
# (each pytest waits on its engine's server much of the time: on 2 cores
# 19 minutes together against 27 one after the other), each with a
# --basetemp of its own (pytest prunes its numbered temporary directories
# of other runs), their outputs printed afterwards in the engines' order.
if [ "${TACHYON_TEST_SIDE_BY_SIDE:-0}" = 1 ]; then
    side_logs="$(mktemp -d /tmp/tachyon-run-tests-XXXXXX)"
    pids=()
    engines=(${TACHYON_TEST_ENGINES:-falkordb neo4j})
    first=1
    for engine in "${engines[@]}"; do
        paths=()
        if [ "$first" -eq 0 ] && [ "${default_paths[*]}" = "tachyon_placement/tests" ]; then
            paths=(tachyon_placement/tests/functional)
        fi
        first=0
        TACHYON_TEST_ENGINES="$engine" TACHYON_TEST_SIDE_BY_SIDE=0 \
            bash "$ROOT/tools/run-tests.sh" "${paths[@]}" \
            --basetemp="$side_logs/tmp-$engine" "$@" \
            >"$side_logs/$engine.log" 2>&1 &
        pids+=($!)
    done
    overall=0
    for index in "${!engines[@]}"; do
        wait "${pids[$index]}" || overall=1
    done
    for engine in "${engines[@]}"; do
        log "=== the pass on $engine"
        cat "$side_logs/$engine.log"
    done
    rm -rf "$side_logs"
    exit "$overall"
fi

overall=0
passes=0
for engine in ${TACHYON_TEST_ENGINES:-falkordb neo4j}; do
    # The unit tests touch no engine: once, with the first engine, when
    # the whole suite runs on several (two minutes of each later pass).
    if [ "$passes" -gt 0 ] && [ "${default_paths[*]}" = "tachyon_placement/tests" ]; then
        default_paths=(tachyon_placement/tests/functional)
    fi
    passes=$((passes + 1))
    case "$engine" in
        falkordb)
            log "engine: embedded FalkorDB"
            (unset TACHYON_TEST_NEO4J_URI; run_pytest "$@") || overall=1
            ;;
        neo4j)
            if [ -z "${TACHYON_TEST_NEO4J_URI:-}" ]; then
                NEO4J_STATE="$(mktemp -d /tmp/tachyon-neo4j-XXXXXX)"
                export TACHYON_NEO4J_DIR="$NEO4J_STATE"
                export TACHYON_NEO4J_PORT
                TACHYON_NEO4J_PORT="$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
                TACHYON_TEST_NEO4J_URI="$("$ROOT/tools/neo4j-server.sh" start)" \
                    || die "could not start Neo4j"
                export TACHYON_TEST_NEO4J_URI
                export TACHYON_TEST_NEO4J_CONTROL="$ROOT/tools/neo4j-server.sh"
            fi
            log "engine: Neo4j at $TACHYON_TEST_NEO4J_URI"
            run_pytest "$@" || overall=1
            ;;
        *) die "unknown engine in TACHYON_TEST_ENGINES: $engine" ;;
    esac
done
exit "$overall"
