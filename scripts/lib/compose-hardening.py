# SPDX-License-Identifier: Apache-2.0
"""Checks a resolved Compose file (`docker compose config --format json` on stdin) the way the
Kubernetes manifests are hardened: every service built from Sluice's image has a read-only root
file system, drops every capability, cannot gain privileges, has memory and CPU limits, and takes
its secrets as files (no secret-looking variable holds a value; every *_FILE names a mounted
secret). Every other service at least cannot gain privileges and has a memory limit.
Prints each finding and exits 1 when there is any."""
import json
import sys

SECRET_NAMES = ("PASSWORD", "SECRET", "KEYS", "KEY", "TARGETS")

config = json.load(sys.stdin)
findings = []
for name, service in sorted(config.get("services", {}).items()):
    def need(condition, what):
        if not condition:
            findings.append(f"{name}: {what}")
    need("no-new-privileges:true" in service.get("security_opt", []), "security_opt lacks no-new-privileges:true")
    need(service.get("mem_limit"), "no mem_limit")
    if "build" not in service:
        continue
    need(service.get("read_only") is True, "read_only is not true")
    need(service.get("cap_drop") == ["ALL"], "cap_drop is not [ALL]")
    need(service.get("cpus"), "no cpus limit")
    environment = service.get("environment") or {}
    mounted = {secret.get("target") or f"/run/secrets/{secret['source']}" for secret in service.get("secrets", [])}
    for variable, value in environment.items():
        if variable.endswith("_FILE"):
            need(value in mounted, f"{variable}={value} is not a mounted secret")
        elif any(part in variable for part in SECRET_NAMES) and value:
            need(False, f"{variable} holds a secret in the environment; use {variable}_FILE")
        elif variable == "DATABASE_URL":
            need("@" not in value or ":" not in value.split("@")[0].split("//")[-1], "DATABASE_URL carries a password")
for finding in findings:
    print(f"compose hardening: {finding}", file=sys.stderr)
sys.exit(1 if findings else 0)
