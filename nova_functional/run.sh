#!/usr/bin/env bash
# Nova's own functional tests as a client suite of Tachyon: Nova 34.0.0's
# fixtures, fake virt driver and scheduler, with Tachyon's WSGI app in the
# place of Placement's (nova_functional/tachyon_in_placement.py), and the
# tests of Tachyon's Nova scheduler weigher written in that framework
# (nova_functional/test_*.py).
#
#   nova_functional/run.sh [--target tachyon|placement] [--workers N] [SUITE...]
#   nova_functional/run.sh --prepare     # only create and fill the venv
#   nova_functional/run.sh --bench herd|order  # nova_functional/bench_*.py
#
# SUITE: a Nova test module or test id under nova.tests.functional (e.g.
# test_report_client, libvirt.test_reshape, test_servers.ServersTest), or
# "weigher" (Tachyon's tests in this directory; weigher.TelemetryTest one
# class of them), or "regressions-placement" (Nova's regression modules
# that look at Placement); default: the CI subset
# (see CI_SUITES).  Each suite runs under stestr and its counts are
# printed; with --target placement the same tests run on Placement's own
# app (the reference: a test that passes there and fails on Tachyon is a
# bug of Tachyon's).  Exit status: 0 when every suite passed.
#
# The venv (nova_functional/.venv, NOVA_FUNCTIONAL_VENV) is built from the
# package indexes: nova_functional/requirements.txt and this repository
# (editable); again only when those or the interpreter change.
# Environment: PYTHON (default python3), TACHYON_TEST_NEO4J_URI (run on that
# Neo4j server instead of an embedded FalkorDB per worker; one worker),
# NOVA_FUNCTIONAL_RESULTS (a file each suite's counts are appended to, one
# line of JSON per suite).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HERE="$ROOT/nova_functional"
PYTHON="${PYTHON:-python3}"
VENV="${NOVA_FUNCTIONAL_VENV:-$HERE/.venv}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
CI_SUITES=(weigher test_report_client test_servers_provider_tree
           libvirt.test_reshape libvirt.test_pci_in_placement)

log() { echo "nova-functional: $*" >&2; }
die() { log "$*"; exit 1; }

target=tachyon
workers=2
prepare_only=0
bench=""
suites=()
while [ $# -gt 0 ]; do
    case "$1" in
        --target) target="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        --prepare) prepare_only=1; shift ;;
        --bench) bench="$2"; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) suites+=("$1"); shift ;;
    esac
done
case "$target" in tachyon|placement) ;; *) die "--target: tachyon or placement" ;; esac
[ ${#suites[@]} -gt 0 ] || suites=("${CI_SUITES[@]}")
[ -z "${TACHYON_TEST_NEO4J_URI:-}" ] || workers=1

# --- the venv ------------------------------------------------------------------

if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV" || die "$PYTHON -m venv failed (Debian: apt-get install python3-venv)"
fi
if ! git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    export PBR_VERSION="${PBR_VERSION:-0.1.0}"
fi
export SKIP_GENERATE_AUTHORS=1 SKIP_WRITE_GIT_CHANGELOG=1
stamp="$( { cat "$HERE/requirements.txt" "$ROOT/requirements.txt" "$ROOT/setup.cfg"; \
            "$VENV/bin/python" --version; } | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$stamp" ]; then
    log "installing Nova 34.0.0, its test requirements and Tachyon into $VENV"
    "$VENV/bin/pip" install -q -U pip >/dev/null
    # The requirements first (minutes of downloads, side by side with
    # interop/run.sh --prepare in .ci/run), then Tachyon itself: an
    # editable install writes the checkout's egg-info: one at a time across
    # the scripts (flock on setup.cfg, as interop/ and tools/run-tests.sh).
    "$VENV/bin/pip" install -q -r "$HERE/requirements.txt" -r "$ROOT/requirements.txt" \
        >"$VENV/pip.log" 2>&1 || { tail -n 40 "$VENV/pip.log" >&2; die "pip install failed"; }
    flock "$ROOT/setup.cfg" "$VENV/bin/pip" install -q --no-deps -e "$ROOT" \
        >>"$VENV/pip.log" 2>&1 || { tail -n 40 "$VENV/pip.log" >&2; die "pip install -e failed"; }
    echo "$stamp" > "$VENV/.stamp"
fi
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# Nova's test configuration looks for api-paste.ini under $state_path
# (its package's parent directory); the wheel installs it under the venv.
if [ ! -f "$site/etc/nova/api-paste.ini" ]; then
    mkdir -p "$site/etc/nova"
    cp "$VENV/etc/nova/api-paste.ini" "$site/etc/nova/api-paste.ini"
fi
# Every Python process of the venv (stestr's workers) swaps Placement's
# app for Tachyon's when TACHYON_NOVA_SWAP=1, before Nova's tests import.
cat > "$site/tachyon_nova_swap.pth" <<EOF
$HERE
import swap_hook; swap_hook.install()
EOF
[ "$prepare_only" -eq 0 ] || exit 0

# --- the herd bench (by hand: figures for the bench results page) -------------

if [ -n "$bench" ]; then
    export TACHYON_NOVA_SWAP=1 OS_TEST_TIMEOUT=3600 PYTHONDONTWRITEBYTECODE=1
    results="${NOVA_FUNCTIONAL_RESULTS:-$(mktemp /tmp/tachyon-bench-XXXXXX.jsonl)}"
    case "$bench" in
        herd)
            for mode in nova weigher placed_load; do
                log "herd bench: $mode"
                (cd "$HERE" && HERD_MODE="$mode" HERD_RESULTS="$results" \
                    "$VENV/bin/python" -m testtools.run bench_herd.HerdBench.test_herd) \
                    || die "herd bench ($mode) failed"
            done ;;
        order)
            (cd "$HERE" && ORDER_RESULTS="$results" \
                "$VENV/bin/python" -m testtools.run bench_order) \
                || die "order bench failed" ;;
        *) die "--bench: herd or order" ;;
    esac
    "$VENV/bin/python" "$HERE/bench_$bench.py" "$results"
    exit 0
fi

# --- the suites ----------------------------------------------------------------

if [ "$target" = tachyon ]; then
    export TACHYON_NOVA_SWAP=1
else
    export TACHYON_NOVA_SWAP=0
fi
# Nova's tox settings for its functional tests.
export OS_STDOUT_CAPTURE=1 OS_STDERR_CAPTURE=1 OS_TEST_TIMEOUT=160 \
    PYTHONDONTWRITEBYTECODE=1 LANGUAGE=en_US LC_ALL=C.UTF-8
work="$(mktemp -d /tmp/tachyon-nova-functional-XXXXXX)"
trap 'rm -rf "$work"' EXIT

rc=0
for suite in "${suites[@]}"; do
    if [ "$target" = placement ] && [ "${suite%%.*}" = weigher ]; then
        log "$suite: Tachyon's own tests, not run on Placement"
        continue
    fi
    if [ "$suite" = weigher ] || [ "${suite#weigher.}" != "$suite" ]; then
        # weigher[.Class[.test]]: Tachyon's tests in this directory.
        rest="${suite#weigher}"
        test_path="$HERE"; top_dir="$HERE"
        filter="^test_tachyon_weigher${rest//./\\.}(\\.|$)"
    elif [ "$suite" = regressions-placement ]; then
        # Nova's regression tests that look at Placement (allocations,
        # providers): their modules, one stestr run.
        test_path="$site/nova/tests/functional"; top_dir="$site"
        modules="$(cd "$test_path/regressions" && grep -lE \
            'placement|_get_allocations_by|assertFlavorMatchesAllocation|_get_provider_uuid_by_host' \
            test_*.py | sed 's/\.py$//' | paste -sd '|')"
        filter="^nova\.tests\.functional\.regressions\.($modules)\."
    else
        test_path="$site/nova/tests/functional"; top_dir="$site"
        filter="^nova\.tests\.functional\.${suite//./\\.}(\.|$)"
    fi
    repo="$work/$suite"
    mkdir -p "$repo"
    log "$suite on $target ($workers workers)"
    started=$(date +%s)
    suite_rc=0
    (cd "$repo" && "$VENV/bin/stestr" --test-path "$test_path" --top-dir "$top_dir" \
        run --concurrency "$workers" --subunit "$filter" > "$repo/stream.subunit") \
        || suite_rc=$?
    "$VENV/bin/python" "$HERE/summary.py" "$repo/stream.subunit" \
        --suite "$suite" --target "$target" --seconds $(( $(date +%s) - started )) \
        ${NOVA_FUNCTIONAL_RESULTS:+--results "$NOVA_FUNCTIONAL_RESULTS"} \
        || suite_rc=1
    [ "$suite_rc" -eq 0 ] || rc=1
done
exit "$rc"
