# SPDX-License-Identifier: Apache-2.0
# The deployment shape on loopback, for scripts/e2e and scripts/chaos: a throwaway PostgreSQL,
# two `ingest` replicas behind nginx (deploy/nginx.conf as shipped), two `worker` processes, and
# `sluice-dev e2e` as the senders, the downstream sink, Google's stand-ins (OIDC keys, OAuth, the
# Play Developer API) and the checker. Source it, then:
#   cluster_prepare; cluster_start; … start_ingest 1, start_worker 2, drive ARGS … ; cluster_stop
# Needs scripts/postgres.sh sourced first.
#
# With CLUSTER_PGBOUNCER=1, ingest and the workers reach PostgreSQL through PgBouncer in
# transaction mode (Debian's package, installed if missing), as a deployment past one machine
# would: every lock is a transaction's. LISTEN needs a session, so the workers LISTEN on a direct
# connection of their own (WORKER_LISTEN_DATABASE_URL), or with CLUSTER_WAKE=poll they poll
# (WORKER_LISTEN=false). Migrations and the checks connect directly: `worker migrate` holds a
# session lock, which a transaction-mode pooler cannot keep.

# Installs nginx and curl if missing and builds the three binaries once; sets $bin.
cluster_prepare() {
    pg_ensure_installed
    if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
        echo "installing nginx (apt-get)…" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends nginx >/dev/null
    fi
    NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    command -v curl >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq curl >/dev/null; }
    if [ "${CLUSTER_PGBOUNCER:-0}" = 1 ] && ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
        echo "installing pgbouncer (apt-get)…" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
    fi

    local configuration=${E2E_CONFIGURATION:-debug} log
    BUILD=(swift build -c "$configuration")
    [ "$configuration" = release ] && BUILD+=(--scratch-path .build-release)
    echo "==> building ($configuration; reuses an earlier build)"
    log=$(mktemp)
    for product in ingest worker sluice-dev; do
        "${BUILD[@]}" --product "$product" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; return 1; }
    done
    rm -f "$log"
    bin=$("${BUILD[@]}" --show-bin-path)
}

# Starts everything on fresh ports with fresh secrets; worker settings may be overridden by the
# caller's environment (MAX_ATTEMPTS, LEASE_SECONDS, …) before calling.
cluster_start() {
    WORK=$(mktemp -d /tmp/sluice-cluster.XXXXXX)
    PGDIR=$(mktemp -d /tmp/sluice-cluster-pg.XXXXXX)  # apart: PostgreSQL runs as another user
    declare -gA PIDS=()
    pg_start "$PGDIR"
    "$bin/sluice-dev" pki --out "$WORK/pki" >/dev/null
    "$bin/worker" migrate --directory sql >"$WORK/migrate.log" 2>&1

    STRIPE_SECRET="whsec_e2e_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    API_KEY="e2e_key_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    INGEST_PORTS=("$(pg_free_port)" "$(pg_free_port)")
    METRICS_PORTS=("$(pg_free_port)" "$(pg_free_port)")
    INGEST_ADMIN_PORTS=("$(pg_free_port)" "$(pg_free_port)")
    LB_PORT=$(pg_free_port)
    SINK_PORT=$(pg_free_port)
    GOOGLE_PORT=$(pg_free_port)
    export LOG_FORMAT=json LOG_LEVEL=${E2E_LOG_LEVEL:-notice}
    export STRIPE_WEBHOOK_SECRETS=$STRIPE_SECRET API_KEYS=$API_KEY
    # Rows carry their proof, and the workers check it, under kill -9 and restarts too.
    export EVENT_SIGNING_KEY="e2e_proof_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    export APPLE_ROOT_CERTIFICATES=$WORK/pki/root.pem APPLE_BUNDLE_IDS=com.example.sluice
    export FORWARD_TARGETS=http://127.0.0.1:$SINK_PORT/hooks/apple
    # Google Play against the driver's stand-ins of Google (its OIDC keys, OAuth token endpoint and
    # Play Developer API on GOOGLE_PORT); the workers acknowledge every Play purchase within seconds.
    "$bin/sluice-dev" play-key --out "$WORK/play-key.json" --google-url "http://127.0.0.1:$GOOGLE_PORT" >/dev/null
    export GOOGLE_PLAY_PACKAGE_NAMES=com.example.sluice GOOGLE_PLAY_SERVICE_ACCOUNT_FILE=$WORK/play-key.json
    export GOOGLE_PLAY_API_BASE_URL=http://127.0.0.1:$GOOGLE_PORT GOOGLE_OIDC_CERTS_URL=http://127.0.0.1:$GOOGLE_PORT/oauth2/v3/certs
    export GOOGLE_PUSH_AUDIENCE=https://sluice.e2e/v1/webhooks/google-play GOOGLE_PUSH_SERVICE_ACCOUNT=play-push@sluice-e2e.iam.gserviceaccount.com
    export CLOCK_SWEEP_INTERVAL_SECONDS=${CLOCK_SWEEP_INTERVAL_SECONDS:-2}
    # Short leases and retries, so the work of a killed worker is taken over within seconds.
    export LEASE_SECONDS=${LEASE_SECONDS:-10} RETRY_BASE_SECONDS=${RETRY_BASE_SECONDS:-0.5}
    export RETRY_MAX_SECONDS=${RETRY_MAX_SECONDS:-5} WORKER_CONCURRENCY=${WORKER_CONCURRENCY:-16}

    # The catalog grants 100 credits for each product the driver's purchases name (Stripe's
    # one-time pro.lifetime, Apple's and Google Play's subscriptions): the driver checks that each
    # buyer holds exactly 100 and was sent one balance.changed, whatever was killed or sent twice.
    "$bin/worker" products add pro.lifetime --type non_consumable --currency-grants credits=100 >/dev/null
    "$bin/worker" products add pro.monthly --type auto_renewable --currency-grants credits=100 >/dev/null
    "$bin/worker" products add pro.play --type auto_renewable --currency-grants credits=100 >/dev/null
    # An endpoint for entitlement.granted and balance.changed events on the sink, added as an
    # operator would, before the workers start; the driver verifies each event with its secret.
    "$bin/worker" endpoints add "http://127.0.0.1:$SINK_PORT/hooks/events" --allow-private --events entitlement.granted,balance.changed \
        --description e2e-sink --json >"$WORK/endpoint.json"
    EVENTS_SECRET=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["secret"])' "$WORK/endpoint.json")

    DIRECT_DATABASE_URL=$DATABASE_URL
    if [ "${CLUSTER_PGBOUNCER:-0}" = 1 ]; then bouncer_start; fi
    echo "==> two ingest (:${INGEST_PORTS[0]}, :${INGEST_PORTS[1]}), two workers, nginx on :$LB_PORT ($WORK)"
    start_ingest 1
    start_ingest 2
    start_worker 1
    start_worker 2

    # deploy/nginx.conf as shipped, with loopback addresses and log files instead of compose's names.
    sed -e "s/ingest-1:8080/127.0.0.1:${INGEST_PORTS[0]}/" -e "s/ingest-2:8080/127.0.0.1:${INGEST_PORTS[1]}/" \
        -e "s/listen 8080;/listen 127.0.0.1:$LB_PORT;/" -e "s|access_log /dev/stdout|access_log $WORK/nginx-access.log|" \
        deploy/nginx.conf >"$WORK/nginx.conf"
    local globals="pid $WORK/nginx.pid; error_log $WORK/nginx-error.log warn;"
    "$NGINX" -t -q -p "$WORK" -c "$WORK/nginx.conf" -g "$globals"
    "$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -g "$globals"
    wait_ready "http://127.0.0.1:$LB_PORT/healthz"
}

# PgBouncer in transaction mode in front of the cluster's PostgreSQL, run as the database's
# owner (it refuses root); ingest and the workers then connect to it (DATABASE_URL, exported).
bouncer_start() {
    local dir="$PGDIR/bouncer" pg_port
    pg_port=$(cat "$PGDIR/port")
    BOUNCER_PORT=$(pg_free_port)
    mkdir -p "$dir"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
postgres = host=127.0.0.1 port=$pg_port dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
default_pool_size = 40
max_client_conn = 600
server_reset_query =
ignore_startup_parameters = extra_float_digits,application_name
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
    echo '"postgres" ""' >"$dir/users.txt"
    [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
    local bouncer
    bouncer=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
    pg_as_owner "$bouncer" -d "$dir/pgbouncer.ini"
    for _ in $(seq 1 100); do
        psql "postgres://postgres@127.0.0.1:$BOUNCER_PORT/postgres?sslmode=disable" -qAtc "SELECT 1" >/dev/null 2>&1 && break
        sleep 0.1
    done
    local wake
    if [ "${CLUSTER_WAKE:-listen}" = poll ]; then
        export WORKER_LISTEN=false
        wake="workers poll (WORKER_LISTEN=false)"
    else
        export WORKER_LISTEN_DATABASE_URL=$DATABASE_URL
        wake="workers LISTEN on a direct connection (WORKER_LISTEN_DATABASE_URL)"
    fi
    export DATABASE_URL="postgres://postgres@127.0.0.1:$BOUNCER_PORT/postgres?sslmode=disable"
    echo "==> PgBouncer $("$bouncer" --version | head -1 | awk '{print $2}') in transaction mode on :$BOUNCER_PORT; $wake"
}

# Stops everything; keeps the logs (and says where) when $1 is non-zero.
cluster_stop() {
    local rc=${1:-0} name
    [ -n "${WORK:-}" ] || return 0
    if [ "$rc" != 0 ]; then
        # What every session was doing when the run failed, and who blocked whom, for the logs.
        PGDATABASE=postgres psql -X -q -P pager=off -c "
            SELECT pid, pg_blocking_pids(pid) AS blocked_by, state, wait_event_type, wait_event,
                   now() - xact_start AS in_transaction, now() - state_change AS in_state, left(query, 120) AS query
            FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
            ORDER BY state, xact_start" >"$WORK/pg-activity.log" 2>&1 || true
    fi
    for name in "${!PIDS[@]}"; do kill -TERM "${PIDS[$name]}" 2>/dev/null || true; done
    [ -f "$WORK/nginx.pid" ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    # As an orchestrator would: SIGKILL what has not stopped 90 s after SIGTERM. A process must stop
    # by itself well before: graceful shutdown takes at most max(LEASE_SECONDS, 30) s, and work that
    # never ends (after a hard PostgreSQL restart) is waited for 10 s more. A kill fails the run
    # (STOP_FAILED) and keeps the logs.
    local waited=0
    STOP_FAILED=
    for name in "${!PIDS[@]}"; do
        while kill -0 "${PIDS[$name]}" 2>/dev/null && [ "$waited" -lt 900 ]; do sleep 0.1; waited=$((waited + 1)); done
        if kill -0 "${PIDS[$name]}" 2>/dev/null; then
            echo "  FAILED: $name did not stop within 90 s of SIGTERM; killing it" >&2
            kill -KILL "${PIDS[$name]}" 2>/dev/null || true
            STOP_FAILED=1 rc=1
        fi
        wait "${PIDS[$name]}" 2>/dev/null || true
    done
    [ -f "$PGDIR/bouncer/pgbouncer.pid" ] && kill -TERM "$(cat "$PGDIR/bouncer/pgbouncer.pid")" 2>/dev/null || true
    [ -f "$PGDIR/bouncer/pgbouncer.log" ] && [ "$rc" != 0 ] && cp "$PGDIR/bouncer/pgbouncer.log" "$WORK/pgbouncer.log"
    if [ -n "${DIRECT_DATABASE_URL:-}" ]; then export DATABASE_URL=$DIRECT_DATABASE_URL; unset WORKER_LISTEN WORKER_LISTEN_DATABASE_URL; fi
    pg_stop "$PGDIR"
    rm -rf "$PGDIR"
    if [ "$rc" != 0 ]; then
        echo "==> FAILED (exit $rc); last lines of each log:" >&2
        for log in "$WORK"/*.log; do echo "--- $log" >&2; tail -5 "$log" >&2; done
        echo "logs kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    WORK=
}

wait_ready() { # URL
    for _ in $(seq 1 150); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "not ready: $1" >&2
    return 1
}

start_ingest() { # N (1 or 2)
    local port=${INGEST_PORTS[$1-1]}
    local admin=${INGEST_ADMIN_PORTS[$1-1]}
    INGEST_HOST=127.0.0.1 INGEST_PORT=$port INGEST_ADMIN_PORT=$admin "$bin/ingest" >>"$WORK/ingest-$1.log" 2>&1 &
    PIDS[ingest-$1]=$!
    wait_ready "http://127.0.0.1:$admin/readyz"
}

start_worker() { # N
    METRICS_PORT=${METRICS_PORTS[$1-1]} "$bin/worker" run >>"$WORK/worker-$1.log" 2>&1 &
    PIDS[worker-$1]=$!
    wait_ready "http://127.0.0.1:${METRICS_PORTS[$1-1]}/healthz"
}

# kill -9, reaped, then started again.
kill_and_restart() { # ingest|worker N
    kill -KILL "${PIDS[$1-$2]}"
    wait "${PIDS[$1-$2]}" 2>/dev/null || true
    "start_$1" "$2"
}

# Runs the senders/checker in the background with the cluster's URLs and secrets plus ARGS;
# sets DRIVER (its pid) and waits until its stream has started.
drive() {
    rm -f "$WORK/started"
    (
        set -o pipefail
        timeout --signal=KILL 600 "$bin/sluice-dev" e2e --url "http://127.0.0.1:$LB_PORT" --sink-port "$SINK_PORT" \
            --secret "$STRIPE_SECRET" --api-key "$API_KEY" --pki "$WORK/pki" --started-file "$WORK/started" \
            --events-secret "$EVENTS_SECRET" --grant credits=100 --google-port "$GOOGLE_PORT" --play-key-file "$WORK/play-key.json" \
            --google-audience "$GOOGLE_PUSH_AUDIENCE" --google-push-account "$GOOGLE_PUSH_SERVICE_ACCOUNT" "$@" \
            | tee "$WORK/driver.out"
    ) &
    DRIVER=$!
    for _ in $(seq 1 300); do [ -f "$WORK/started" ] && return 0; sleep 0.1; done
    echo "the driver did not start" >&2
    return 1
}

# Checks after a run: the named processes run and answer, nginx runs, and no job is `running`
# without a live lease. Prints peak RSS. Returns non-zero on any failure.
cluster_check() {
    local rc=0 name port
    echo "==> processes after the run (peak RSS since each started)"
    for name in ingest-1 ingest-2 worker-1 worker-2; do
        if kill -0 "${PIDS[$name]}" 2>/dev/null; then
            echo "  $name running, peak RSS $(awk '/^VmHWM/ { printf "%.0f MiB", $2 / 1024 }' "/proc/${PIDS[$name]}/status" 2>/dev/null)"
        else
            echo "  $name NOT RUNNING" >&2; rc=1
        fi
    done
    for port in "${INGEST_ADMIN_PORTS[@]}"; do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" || { echo "  ingest admin :$port not ready" >&2; rc=1; }; done
    for port in "${METRICS_PORTS[@]}"; do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" || { echo "  worker :$port not ready" >&2; rc=1; }; done
    kill -0 "$(cat "$WORK/nginx.pid")" 2>/dev/null && echo "  nginx running" || { echo "  nginx NOT RUNNING" >&2; rc=1; }
    # A job whose lease ran out is returned by the lease rescuer within its interval (5 s). One
    # abandoned at its attempt time limit just before this check (seen after `pg_ctl restart -m
    # immediate`: statements that never returned) may still be waiting for it: the count must
    # reach 0 within 30 s, not be 0 at once.
    local stale waited=0
    while :; do
        stale=$(PGDATABASE=postgres psql -qAt -c "SELECT (SELECT count(*) FROM events WHERE state = 'running' AND locked_until < now())
                                                       + (SELECT count(*) FROM deliveries WHERE state = 'running' AND locked_until < now())")
        [ "$stale" = 0 ] || [ "$waited" -ge 30 ] && break
        [ "$waited" = 0 ] && echo "  jobs running without a live lease: $stale; waiting for the lease rescuer"
        sleep 1; waited=$((waited + 1))
    done
    echo "  jobs running without a live lease: $stale"
    [ "$stale" = 0 ] || rc=1
    PGDATABASE=postgres psql -qAt -c "SELECT '  events by state: ' || string_agg(state || ' ' || n, ', ') FROM (SELECT state, count(*) n FROM events GROUP BY state) s" || true
    return "$rc"
}
