#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Creates the secret files deploy/compose.yaml mounts, leaving any that exist: random passwords
# for the database roles, and the provider secrets and keys as placeholders that ingest refuses
# to start with until you write the real values (one value per file; commas between several).
#
# The directory is only for root (0700); each file is world-readable (0644) because Compose
# bind-mounts it as it is and the containers run as uid 10001.
set -eu
cd "$(dirname "$0")"
umask 022
chmod 0700 .
random() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
make() { # NAME VALUE
    [ -e "$1" ] && { echo "kept    deploy/secrets/$1"; return; }
    printf '%s\n' "$2" > "$1"
    echo "created deploy/secrets/$1"
}
for name in postgres_password migrate_password ingest_password worker_password event_signing_key operator_keys; do make "$name" "$(random)"; done
make stripe_webhook_secrets whsec_replace_me
make api_keys replace-with-a-long-random-key
make client_api_keys ""
make forward_targets ""
make forward_secret ""
