// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// `deploy/compose.yaml`, `deploy/env.example` and `deploy/nginx.conf`, parsed and checked
/// against each other (no Docker engine runs here; scripts/e2e runs nginx with this config).
struct ComposeFileTests {
    let compose: [String: Any]
    let services: [String: [String: Any]]

    init() throws {
        compose = try DeployFiles.yaml("deploy/compose.yaml")
        services = try #require(compose["services"] as? [String: [String: Any]])
    }

    /// Services running the Sluice image.
    var sluiceServices: [String: [String: Any]] { services.filter { $0.value["build"] != nil } }

    @Test func servicesFormTheDocumentedShape() throws {
        #expect(Set(services.keys) == ["postgres", "migrate", "ingest-1", "ingest-2", "worker", "console", "nginx"])
        #expect(Set(sluiceServices.keys) == ["migrate", "ingest-1", "ingest-2", "worker", "console"])
        #expect(try value(services, "console", "command") as? [String] == ["worker", "console"])
        #expect(try value(services, "console", "ports") as? [String] == ["127.0.0.1:8090:8090"], "the console on the host's loopback only")
        for (name, service) in sluiceServices {
            #expect(try value(service, "build", "dockerfile") as? String == "deploy/Dockerfile", "\(name)")
            #expect(FileManager.default.fileExists(atPath: DeployFiles.url("deploy/Dockerfile").path))
        }
        #expect(try value(services, "migrate", "command") as? [String] == ["worker", "migrate"])
        #expect(try value(services, "worker", "command") as? [String] == ["worker", "run"])
        #expect(try value(services, "worker", "deploy", "replicas") as? Int == 2)
        #expect(try value(services, "ingest-1", "command") as? [String] == ["ingest"])
        #expect(try value(services, "migrate", "restart") as? String == "no")
    }

    @Test func dependenciesExistAndOrderTheStart() throws {
        for (name, service) in services {
            for dependency in (service["depends_on"] as? [String: Any] ?? [:]).keys {
                #expect(services[dependency] != nil, "\(name) depends on a service that does not exist: \(dependency)")
            }
        }
        #expect(try value(services, "migrate", "depends_on", "postgres", "condition") as? String == "service_healthy")
        for name in ["ingest-1", "ingest-2", "worker"] {
            #expect(try value(services, name, "depends_on", "migrate", "condition") as? String == "service_completed_successfully")
        }
        for name in ["ingest-1", "ingest-2"] {
            #expect(try value(services, "nginx", "depends_on", name, "condition") as? String == "service_healthy")
            #expect(try value(services, name, "healthcheck", "test") as? [String] != nil)
        }
    }

    @Test func workersGetLongerThanTheirDrainToStop() throws {
        let grace = try #require(try value(services, "worker", "stop_grace_period") as? String)
        let seconds = try #require(Int(grace.dropLast()), "stop_grace_period \(grace)")
        // The worker drains for max(LEASE_SECONDS, 30) s, LEASE_SECONDS defaulting to 60.
        #expect(grace.hasSuffix("s") && seconds > 60)
    }

    /// Every variable the file needs is in env.example, and every variable handed to Sluice is one
    /// the README documents (a misspelt name would be silently ignored).
    @Test func variablesHaveAnExampleAndAreDocumented() throws {
        let text = try DeployFiles.text("deploy/compose.yaml")
        // `${NAME}` and `${NAME:?why}` must be set; `${NAME:-default}` need not.
        let required = Set(text.matches(of: #/\$\{([A-Z_][A-Z0-9_]*)(:?-)?/#).filter { $0.output.2 == nil }.map { String($0.output.1) })
        let example = Set(try DeployFiles.text("deploy/env.example").split(separator: "\n")
            .filter { !$0.hasPrefix("#") && $0.contains("=") }
            .map { String($0.prefix { $0 != "=" }) })
        #expect(required.isSubset(of: example), "missing from env.example: \(required.subtracting(example).sorted())")

        let documented = try DeployFiles.documentedVariables()
        #expect(documented.contains("DATABASE_URL") && documented.contains("STRIPE_WEBHOOK_SECRETS"))
        for (name, service) in sluiceServices {
            let environment = try #require(service["environment"] as? [String: Any], "\(name) has no environment")
            // NAME_FILE is NAME read from a file (README: "NAME_FILE").
            let unknown = Set(environment.keys.map { $0.hasSuffix("_FILE") ? String($0.dropLast(5)) : $0 }).subtracting(documented)
            #expect(unknown.isEmpty, "\(name) sets variables the README does not know: \(unknown.sorted())")
        }
    }

    /// Each container sees only its own secrets, as files: none is in an environment variable.
    @Test func secretsGoOnlyWhereTheyAreUsed() throws {
        let declared = try #require(compose["secrets"] as? [String: [String: Any]])
        for (name, secret) in declared {
            #expect(secret["file"] as? String == "./secrets/\(name)", "\(name) is not a file in deploy/secrets")
        }
        func secrets(_ service: String) throws -> Set<String> { Set(try #require(try value(services, service, "secrets") as? [String])) }
        #expect(try secrets("ingest-1") == ["ingest_password", "stripe_webhook_secrets", "api_keys", "client_api_keys", "event_signing_key"])
        #expect(try secrets("worker") == ["worker_password", "forward_targets", "forward_secret", "event_signing_key"])
        #expect(try secrets("migrate") == ["migrate_password"])
        #expect(try secrets("console") == ["worker_password", "operator_keys", "event_signing_key"])
        #expect(try secrets("postgres") == ["postgres_password", "migrate_password", "ingest_password", "worker_password"])
        #expect(services["nginx"]?["secrets"] == nil)
        for (name, service) in sluiceServices {
            let environment = try #require(service["environment"] as? [String: Any])
            let mounted = try secrets(name)
            for (variable, path) in environment where variable.hasSuffix("_FILE") {
                let file = try #require(path as? String)
                #expect(file.hasPrefix("/run/secrets/") && mounted.contains(String(file.dropFirst("/run/secrets/".count))), "\(name): \(variable)")
            }
            for secret in ["STRIPE_WEBHOOK_SECRETS", "API_KEYS", "CLIENT_API_KEYS", "FORWARD_SECRET", "FORWARD_TARGETS", "DATABASE_PASSWORD", "EVENT_SIGNING_KEY", "OPERATOR_KEYS"] {
                #expect(environment[secret] == nil, "\(name) has \(secret) in its environment")
            }
        }
        // Each process connects as its own role, never as the container's administrator; the
        // password comes from its file.
        for (service, role) in [("migrate", "sluice_migrate"), ("ingest-1", "sluice_ingest"), ("ingest-2", "sluice_ingest"), ("worker", "sluice_worker"),
            ("console", "sluice_worker")] {
            let url = try #require(try value(services, service, "environment", "DATABASE_URL") as? String)
            #expect(url == "postgres://\(role)@postgres:5432/sluice", "\(service) connects as \(role)")
            let password = role.replacingOccurrences(of: "sluice_", with: "") + "_password"
            #expect(try value(services, service, "environment", "DATABASE_PASSWORD_FILE") as? String == "/run/secrets/\(password)")
        }
        let postgres = try #require(try value(services, "postgres", "environment") as? [String: Any])
        #expect(postgres.keys.allSatisfy { $0.hasPrefix("POSTGRES_") } && postgres["POSTGRES_PASSWORD"] == nil)
        let volumes = try #require(try value(services, "postgres", "volumes") as? [String])
        #expect(volumes.contains("./roles.sql:/sluice/roles.sql:ro"))
        #expect(volumes.contains("./postgres-init.sh:/docker-entrypoint-initdb.d/10-sluice-roles.sh:ro"))
        let initScript = try DeployFiles.text("deploy/postgres-init.sh")
        #expect(initScript.contains("-f /sluice/roles.sql") && initScript.contains("ON_ERROR_STOP=1"))
        for role in ["migrate", "ingest", "worker"] { #expect(initScript.contains("secret \(role)_password")) }
        // create.sh makes every declared secret file.
        let create = try DeployFiles.text("deploy/secrets/create.sh")
        for name in declared.keys { #expect(create.contains(name), "deploy/secrets/create.sh does not make \(name)") }
        #expect(compose.description.contains("whsec_") == false, "a secret value is written in compose.yaml")
    }

    @Test func nginxBalancesBothIngestReplicasAndNeverResendsAPost() throws {
        let volumes = try #require(try value(services, "nginx", "volumes") as? [String])
        #expect(volumes.contains("./nginx.conf:/etc/nginx/nginx.conf:ro"))
        let nginx = try DeployFiles.text("deploy/nginx.conf")
        let directives = nginx.split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.hasPrefix("#") && !$0.isEmpty }
        let upstreams = directives.filter { $0.hasPrefix("server ") && !$0.hasSuffix("{") }.map { $0.split(separator: " ")[1] }
        #expect(upstreams == ["ingest-1:8080", "ingest-2:8080"])
        #expect(directives.contains { $0.hasPrefix("server ingest-1:8080") && $0.contains("max_fails=") && $0.contains("fail_timeout=") })
        let nextUpstream = try #require(directives.first { $0.hasPrefix("proxy_next_upstream ") })
        #expect(nextUpstream == "proxy_next_upstream error;", "retries beyond connection errors: \(nextUpstream)")
        #expect(!directives.contains { $0.contains("non_idempotent") })
        // Only the webhooks, the API and /healthz are proxied; /readyz and /metrics are not reachable.
        let proxied = directives.indices.filter { directives[$0].hasPrefix("proxy_pass ") }.map { directives[$0 - 1] }
        #expect(proxied == ["location = /healthz {", "location /v1/ {"])
        // ingest's MAX_BODY_BYTES default is 1 MiB; nginx must not cut bodies shorter.
        #expect(directives.contains("client_max_body_size 1m;"))
    }
}
