# SPDX-License-Identifier: Apache-2.0
# Shared by scripts/test, scripts/dev and the others: a throwaway PostgreSQL on a loopback port.
# Source it, then: pg_ensure_installed; pg_start DIR [PORT]; … ; pg_stop DIR

pg_ensure_installed() {
    if ! command -v initdb >/dev/null 2>&1; then
        local bindir
        bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
        if [ -z "$bindir" ]; then
            echo "installing PostgreSQL (apt-get)…" >&2
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq >/dev/null && apt-get install -y -qq postgresql >/dev/null
            bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
        fi
        export PATH="$bindir:$PATH"
    fi
    if ! command -v psql >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null && apt-get install -y -qq postgresql-client >/dev/null
    fi
}

# A port free to listen on, from below the kernel's ephemeral range (ip_local_port_range): a port
# the kernel hands out for bind(0) may be given to any outgoing connection before the process it
# was chosen for listens on it (scripts/chaos once lost its sink port to a client that way).
#
# A port that is free now is not yet taken by the process it is for: a script picks all of a
# cluster's ports before starting any of it, so two picks must not agree. Every port handed out is
# written with its time to PG_PORTS_GIVEN (a file shared by all of one user's scripts, under a
# lock) and not handed out again for ten minutes (chaos once gave a worker's METRICS_PORT the port
# an ingest had just been given).
pg_free_port() {
    PG_PORTS_GIVEN=${PG_PORTS_GIVEN:-${TMPDIR:-/tmp}/sluice-ports-given-$(id -u)} python3 - <<'PY'
import fcntl, os, random, socket, sys, time
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
remembered_seconds = 600

def pick(given):
    for _ in range(200):
        port = random.randint(max(1024, low - 12000), low - 1)
        if port in given:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise SystemExit("no free port below the ephemeral range")

try:
    ledger = open(os.environ["PG_PORTS_GIVEN"], "a+")
except OSError as error:
    # A directory that cannot be written: a port is still picked, only not remembered.
    print(f"pg_free_port: {error.strerror}: {os.environ['PG_PORTS_GIVEN']}; ports not remembered", file=sys.stderr)
    print(pick({}))
    raise SystemExit(0)
with ledger:
    fcntl.flock(ledger, fcntl.LOCK_EX)
    ledger.seek(0)
    now = time.time()
    given = {}
    for line in ledger:
        fields = line.split()
        try:
            port, given_at = int(fields[0]), float(fields[1])
        except (IndexError, ValueError):
            continue  # a line cut short by a full disk, say: the port is simply not remembered
        if abs(now - given_at) < remembered_seconds:  # a clock set back keeps them too
            given[port] = given_at
    port = pick(given)
    given[port] = now
    ledger.seek(0)
    ledger.truncate(0)
    ledger.writelines(f"{p} {t}\n" for p, t in given.items())
    print(port)
PY
}

# Runs a PostgreSQL command as the postgres user when we are root (PostgreSQL refuses root).
# Run from / when switching users: the caller's directory (a clone under /root, say) may be
# closed to postgres, and its tools then complain that they cannot enter it. Paths given to
# pg_as_owner must therefore be absolute.
pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# pg_tls DIR: a test CA and a server certificate for the host name localhost only (so that
# verify-full to 127.0.0.1 fails, as it must), for the TLS tests; sets PG_TLS_OPTIONS, the
# server's -c options, and exports SLUICE_TEST_PG_CA and SLUICE_TEST_PG_OTHER_CA.
pg_tls() {
    local dir=$1/tls
    PG_TLS_OPTIONS=""
    command -v openssl >/dev/null 2>&1 || return 0
    if [ ! -f "$dir/server.key" ]; then
        mkdir -p "$dir"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=Sluice Test Database CA" \
            -keyout "$dir/ca.key" -out "$dir/ca.pem" >/dev/null 2>&1
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
            -keyout "$dir/server.key" -out "$dir/server.csr" >/dev/null 2>&1
        printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n' >"$dir/ext.cnf"
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 3650 \
            -extfile "$dir/ext.cnf" -out "$dir/server.pem" >/dev/null 2>&1
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=Some Other CA" \
            -keyout "$dir/other-ca.key" -out "$dir/other-ca.pem" >/dev/null 2>&1
        chmod 600 "$dir/server.key"
        [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
        chmod 755 "$dir" && chmod 644 "$dir/ca.pem" "$dir/other-ca.pem"
    fi
    export SLUICE_TEST_PG_CA="$dir/ca.pem" SLUICE_TEST_PG_OTHER_CA="$dir/other-ca.pem"
    # pg_ctl hands -o to the server through a shell: paths are single-quoted (a clone's path may hold spaces).
    PG_TLS_OPTIONS="-c ssl=on -c ssl_cert_file='$dir/server.pem' -c ssl_key_file='$dir/server.key' -c ssl_min_protocol_version=TLSv1.2"
}

# pg_start DIR [PORT]: initialise DIR if new, start on 127.0.0.1:PORT (TLS offered, with the
# test CA of pg_tls), export DATABASE_URL.
pg_start() {
    local dir=$1 port=${2:-$(pg_free_port)}
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        chown -R postgres "$dir"
        chmod 700 "$dir"
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        pg_as_owner initdb -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; return 1; }
    fi
    pg_tls "$dir"
    pg_as_owner pg_ctl -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
        -o "-p $port -c listen_addresses=127.0.0.1 -k '$dir' -c max_connections=300 -c fsync=on $PG_TLS_OPTIONS ${PG_EXTRA_OPTIONS:-}" start >/dev/null \
        || { tail -20 "$dir/postgres.log" >&2; return 1; }
    echo "$port" >"$dir/port"
    export PGPORT=$port PGHOST=127.0.0.1 PGUSER=postgres
    export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

pg_stop() {
    local dir=$1
    [ -f "$dir/data/postmaster.pid" ] && pg_as_owner pg_ctl -D "$dir/data" -m fast -w stop >/dev/null 2>&1
    return 0
}
