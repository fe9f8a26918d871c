#!/usr/bin/env bash
# A real Neo4j Community server for tests, CI and people, in one JVM:
# tools/neo4j/ (a pinned Maven project) with Bolt on a loopback port.
#
#   tools/neo4j-server.sh start     build if needed, start, wait until ready
#   tools/neo4j-server.sh stop      clean shutdown (SIGTERM, then SIGKILL)
#   tools/neo4j-server.sh status    running or not; exit status 0 if running
#   tools/neo4j-server.sh uri       the Bolt URI
#   tools/neo4j-server.sh pid       the JVM's pid (tests kill -9 it)
#
# Environment:
#   TACHYON_NEO4J_DIR      state directory (default tools/neo4j/.work): the
#                          database under home/, server.pid, server.log
#   TACHYON_NEO4J_PORT     Bolt port on 127.0.0.1 (default 7687)
#   TACHYON_NEO4J_VERSION  Neo4j release from Maven Central (default: the
#                          pom's, 5.26 LTS; 2025.x needs JAVA_HOME >= 21)
#   TACHYON_NEO4J_HEAP     JVM heap (default 1g)
#   TACHYON_NEO4J_PAGECACHE  server.memory.pagecache.size (default 512m;
#                          size it to the store, as for any Neo4j server)
#   TACHYON_NEO4J_JAVA_OPTS  more JVM options (words), e.g. a flight recording
#   TACHYON_NEO4J_SETTINGS   Neo4j settings, setting=value words, e.g.
#                          dbms.cypher.min_replan_interval=1h
#   JAVA_HOME              the JDK (default: java on PATH)
#
# Maven's downloads are kept in tools/neo4j/.m2 (ignored by git), so only
# the first build fetches anything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="$ROOT/tools/neo4j"
STATE="${TACHYON_NEO4J_DIR:-$PROJECT/.work}"
PORT="${TACHYON_NEO4J_PORT:-7687}"
VERSION="${TACHYON_NEO4J_VERSION:-}"
HEAP="${TACHYON_NEO4J_HEAP:-1g}"
PAGECACHE="${TACHYON_NEO4J_PAGECACHE:-512m}"
PID_FILE="$STATE/server.pid"
LOG_FILE="$STATE/server.log"
START_TIMEOUT=180

# The JVM options Neo4j's own launcher passes (server.jvm.additional in
# the neo4j.conf it ships), less -XX:+AlwaysPreTouch (it would make every
# test server touch its whole heap at start). Without them the page cache
# runs in a fallback mode without access to direct buffers, native file
# access fails ("Incorrect file descriptor" in debug.log), and each thread
# that writes a large answer keeps a direct buffer of its size for good
# (jdk.nio.maxCachedBufferSize bounds that cache).
NEO4J_JVM_OPTIONS=(
    -XX:+UseG1GC
    -XX:-OmitStackTraceInFastThrow
    -XX:+UnlockExperimentalVMOptions
    -XX:+TrustFinalNonStaticFields
    -XX:+DisableExplicitGC
    -Djdk.nio.maxCachedBufferSize=1024
    -Dio.netty.tryReflectionSetAccessible=true
    -Djdk.tls.ephemeralDHKeySize=2048
    -Djdk.tls.rejectClientInitiatedRenegotiation=true
    --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/java.io=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --enable-native-access=ALL-UNNAMED
    -Dlog4j2.disable.jmx=true
)

log() { echo "neo4j-server: $*" >&2; }
die() { log "$*"; exit 1; }

java_bin() {
    if [ -n "${JAVA_HOME:-}" ]; then echo "$JAVA_HOME/bin/java"; else echo java; fi
}

ensure_build_tools() {
    # A JDK (javac) and Maven, from Debian's packages if missing.
    local missing=()
    command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
    command -v mvn >/dev/null 2>&1 || missing+=(maven)
    [ "${#missing[@]}" -eq 0 ] && return
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "need root to install ${missing[*]}"
        sudo=(sudo)
    fi
    log "apt-get install ${missing[*]}"
    "${sudo[@]}" apt-get update -qq >/dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null \
        || die "could not install ${missing[*]}"
}

build() {
    # Rebuilt when the pom, the Java source or the version changes.
    local stamp="$PROJECT/target/.tachyon-stamp" want
    want="$(cat "$PROJECT/pom.xml" "$PROJECT"/src/main/java/org/tachyon/neo4j/*.java \
        | sha256sum | cut -d' ' -f1) ${VERSION}"
    if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return
    fi
    ensure_build_tools
    log "building the Neo4j server (Maven; downloads cached in tools/neo4j/.m2)"
    local args=(-q -B -f "$PROJECT/pom.xml" -Dmaven.repo.local="$PROJECT/.m2")
    [ -n "$VERSION" ] && args+=(-Dneo4j.version="$VERSION")
    rm -rf "$PROJECT/target"
    mvn "${args[@]}" package >&2 || die "Maven build failed"
    echo "$want" > "$stamp"
}

running_pid() {
    # A killed JVM whose parent has not reaped it yet is a zombie: kill -0
    # still succeeds on it, so look at its state.
    local pid state
    pid="$(cat "$PID_FILE" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    state="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
    case "$state" in Z|X) return 1 ;; esac
    echo "$pid"
}

start() {
    if pid="$(running_pid)"; then
        log "already running (pid $pid): bolt://127.0.0.1:$PORT"
        echo "bolt://127.0.0.1:$PORT"
        return
    fi
    build
    mkdir -p "$STATE/home"
    local dir="$PROJECT/target"
    : > "$LOG_FILE"
    local setting
    {
        # Unset, Neo4j gives its page cache half the machine's free memory.
        case " ${TACHYON_NEO4J_SETTINGS:-}" in
            *" server.memory.pagecache.size="*) ;;
            *) echo "server.memory.pagecache.size=$PAGECACHE" ;;
        esac
        for setting in ${TACHYON_NEO4J_SETTINGS:-}; do
            echo "$setting"
        done
    } > "$STATE/settings.conf"
    # shellcheck disable=SC2086  # options are words on purpose
    setsid "$(java_bin)" -Xmx"$HEAP" "${NEO4J_JVM_OPTIONS[@]}" \
        ${TACHYON_NEO4J_JAVA_OPTS:-} \
        -cp "$dir/classes:$dir/lib/*" org.tachyon.neo4j.Server \
        "$STATE/home" "$PORT" "$STATE/settings.conf" \
        >> "$LOG_FILE" 2>&1 < /dev/null &
    local pid=$!
    echo "$pid" > "$PID_FILE"
    local deadline=$((SECONDS + START_TIMEOUT))
    until grep -q '^READY ' "$LOG_FILE"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$LOG_FILE" >&2
            rm -f "$PID_FILE"
            die "Neo4j exited while starting (log: $LOG_FILE)"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            tail -n 30 "$LOG_FILE" >&2
            stop
            die "Neo4j did not start within ${START_TIMEOUT}s"
        fi
        sleep 0.2
    done
    log "running (pid $pid): bolt://127.0.0.1:$PORT"
    echo "bolt://127.0.0.1:$PORT"
}

stop() {
    local pid
    if ! pid="$(running_pid)"; then
        rm -f "$PID_FILE"
        return
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 600); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid did not stop in 60s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$PID_FILE"
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status)
        if pid="$(running_pid)"; then
            echo "running (pid $pid): bolt://127.0.0.1:$PORT"
        else
            echo "stopped"; exit 3
        fi ;;
    uri) echo "bolt://127.0.0.1:$PORT" ;;
    pid) running_pid || exit 3 ;;
    build) build ;;
    *) echo "usage: $0 start|stop|status|uri|pid|build" >&2; exit 2 ;;
esac
