// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// `deploy/k8s/`: every manifest parses, and the probes, shutdown timings and selectors agree.
struct KubernetesManifestTests {
    let objects: [[String: Any]]

    init() throws {
        let kustomization = try DeployFiles.yaml("deploy/k8s/kustomization.yaml")
        let resources = try #require(kustomization["resources"] as? [String])
        objects = try resources.flatMap { try DeployFiles.yamlDocuments("deploy/k8s/\($0)") }
            + (try DeployFiles.yamlDocuments("deploy/k8s/secret.example.yaml"))
    }

    func object(_ kind: String, _ name: String) throws -> [String: Any] {
        try #require(objects.first { $0["kind"] as? String == kind && (try? value($0, "metadata", "name")) as? String == name },
                     "no \(kind) \(name)")
    }

    func container(of deployment: String) throws -> [String: Any] {
        let containers = try #require(try value(try object("Deployment", deployment), "spec", "template", "spec", "containers") as? [[String: Any]])
        return try #require(containers.first)
    }

    @Test func everyObjectIsWellFormed() throws {
        #expect(objects.count == 16)
        for object in objects {
            #expect(object["apiVersion"] is String && object["kind"] is String)
            #expect(try value(object, "metadata", "name") is String)
        }
    }

    @Test func probesUseTheRoutesBothProcessesServe() throws {
        for (deployment, port) in [("sluice-ingest", "admin"), ("sluice-worker", "metrics")] {
            let container = try container(of: deployment)
            #expect(try value(container, "readinessProbe", "httpGet", "path") as? String == "/readyz")
            #expect(try value(container, "livenessProbe", "httpGet", "path") as? String == "/healthz")
            #expect(try value(container, "livenessProbe", "httpGet", "port") as? String == port)
            #expect(try value(container, "readinessProbe", "httpGet", "port") as? String == port)
            #expect(try value(container, "resources", "requests", "memory") is String)
            #expect(try value(container, "resources", "limits", "memory") is String)
            #expect(try value(container, "resources", "limits", "cpu") is String)
        }
    }

    @Test func shutdownOutlastsDrainingAndIngestLeavesTheLoadBalancerFirst() throws {
        let worker = try object("Deployment", "sluice-worker")
        let workerGrace = try #require(try value(worker, "spec", "template", "spec", "terminationGracePeriodSeconds") as? Int)
        let env = try #require(try container(of: "sluice-worker")["env"] as? [[String: Any]])
        let lease = Int(env.first { $0["name"] as? String == "LEASE_SECONDS" }?["value"] as? String ?? "60") ?? 60
        #expect(workerGrace > max(lease, 30), "the worker drains for max(LEASE_SECONDS, 30) s")

        let ingest = try object("Deployment", "sluice-ingest")
        let preStop = try #require(try value(try container(of: "sluice-ingest"), "lifecycle", "preStop", "exec", "command") as? [String])
        let pause = try #require(Int(preStop.last ?? ""))
        #expect(preStop.first == "sleep" && pause >= 5)
        let ingestGrace = try #require(try value(ingest, "spec", "template", "spec", "terminationGracePeriodSeconds") as? Int)
        #expect(ingestGrace > pause + 5, "preStop, then in-flight stores (5 s at most)")
    }

    @Test func selectorsMatchTheirPods() throws {
        for name in ["sluice-ingest", "sluice-worker"] {
            let labels = try #require(try value(try object("Deployment", name), "spec", "template", "metadata", "labels") as? [String: String])
            let selector = try #require(try value(try object("PodDisruptionBudget", name), "spec", "selector", "matchLabels") as? [String: String])
            #expect(selector.allSatisfy { labels[$0.key] == $0.value })
        }
        let service = try #require(try value(try object("Service", "sluice-ingest"), "spec", "selector") as? [String: String])
        #expect(service == ["app.kubernetes.io/name": "sluice-ingest"])
        // The Service, which load balancers reach, carries the webhook and API port only.
        let servicePorts = try #require(try value(try object("Service", "sluice-ingest"), "spec", "ports") as? [[String: Any]])
        #expect(servicePorts.compactMap { $0["targetPort"] as? String } == ["http"])
        let job = try #require(try value(try object("Job", "sluice-migrate"), "spec", "template", "spec", "containers") as? [[String: Any]])
        #expect(job.first?["args"] as? [String] == ["worker", "migrate"])
    }

    /// The console is reached inside the cluster only, from pods an operator labels for it.
    @Test func theConsoleIsNotExposed() throws {
        let service = try object("Service", "sluice-console")
        #expect(try value(service, "spec", "type") as? String == "ClusterIP")
        let rules = try #require(try value(try object("NetworkPolicy", "sluice-console"), "spec", "ingress") as? [[String: Any]])
        let from = try #require(rules.first?["from"] as? [[String: Any]])
        #expect(try value(from[0], "podSelector", "matchLabels") as? [String: String] == ["sluice-console-access": "true"])
        let container = try container(of: "sluice-console")
        #expect(container["args"] as? [String] == ["worker", "console"])
        #expect(try value(container, "readinessProbe", "httpGet", "path") as? String == "/login")
        let data = try #require(try value(try object("Secret", "sluice-console"), "stringData") as? [String: Any])
        // The signing key: its rebuild applies only proven rows, as the worker does (it already holds the worker's role).
        #expect(data["OPERATOR_KEYS"] != nil && data["EVENT_SIGNING_KEY"] != nil && data["FORWARD_SECRET"] == nil)
    }

    static let workloads = [
        ("Deployment", "sluice-ingest", "sluice-ingest", "sluice_ingest"), ("Deployment", "sluice-worker", "sluice-worker", "sluice_worker"),
        ("Job", "sluice-migrate", "sluice-migrate", "sluice_migrate"), ("Deployment", "sluice-console", "sluice-console", "sluice_worker"),
    ]

    /// Each process has a secret of its own, holding only what it uses and its own database role,
    /// mounted as files that its `NAME_FILE` variables name: no secret is an environment variable.
    @Test func eachProcessGetsOnlyItsOwnSecretAsFiles() throws {
        for (kind, name, secret, role) in Self.workloads {
            let pod = try #require(try value(try object(kind, name), "spec", "template", "spec") as? [String: Any])
            let container = try #require((pod["containers"] as? [[String: Any]])?.first)
            #expect(container["envFrom"] == nil, "\(name) takes no secret as environment variables")
            let env = try #require(container["env"] as? [[String: Any]])
            #expect(env.allSatisfy { $0["valueFrom"] == nil }, "\(name)")
            let volumes = try #require(pod["volumes"] as? [[String: Any]])
            #expect(volumes.compactMap { ($0["secret"] as? [String: Any])?["secretName"] as? String } == [secret], "\(name)")
            let mountPath = try #require((container["volumeMounts"] as? [[String: Any]])?.first?["mountPath"] as? String)
            let data = try #require(try value(try object("Secret", secret), "stringData") as? [String: Any])
            let files = Dictionary(uniqueKeysWithValues: env.compactMap { variable -> (String, String)? in
                guard let variableName = variable["name"] as? String, variableName.hasSuffix("_FILE") else { return nil }
                return (String(variableName.dropLast(5)), variable["value"] as? String ?? "")
            })
            #expect(Set(files.keys) == Set(data.keys), "\(name) reads every key of \(secret) and nothing else")
            for (key, path) in files { #expect(path == "\(mountPath)/\(key)", "\(name) \(key)") }
            #expect((data["DATABASE_URL"] as? String)?.hasPrefix("postgres://\(role):") == true, "\(secret) connects as \(role)")
        }
        let ingest = try #require(try value(try object("Secret", "sluice-ingest"), "stringData") as? [String: Any])
        let worker = try #require(try value(try object("Secret", "sluice-worker"), "stringData") as? [String: Any])
        let migrate = try #require(try value(try object("Secret", "sluice-migrate"), "stringData") as? [String: Any])
        #expect(ingest["FORWARD_SECRET"] == nil && ingest["STRIPE_API_KEY"] == nil)
        #expect(worker["API_KEYS"] == nil && worker["STRIPE_WEBHOOK_SECRETS"] == nil)
        #expect(Set(migrate.keys) == ["DATABASE_URL"])
    }

    /// Every pod runs as non-root under the runtime's seccomp profile, without a service account
    /// token (Sluice never calls the Kubernetes API), and no container can gain privileges.
    @Test func everyPodIsHardened() throws {
        for (kind, name, _, _) in Self.workloads {
            let pod = try #require(try value(try object(kind, name), "spec", "template", "spec") as? [String: Any])
            #expect(pod["automountServiceAccountToken"] as? Bool == false, "\(name)")
            #expect(try value(pod, "securityContext", "runAsNonRoot") as? Bool == true, "\(name)")
            #expect(try value(pod, "securityContext", "seccompProfile", "type") as? String == "RuntimeDefault", "\(name)")
            let container = try #require((pod["containers"] as? [[String: Any]])?.first)
            #expect(try value(container, "securityContext", "allowPrivilegeEscalation") as? Bool == false, "\(name)")
            #expect(try value(container, "securityContext", "readOnlyRootFilesystem") as? Bool == true, "\(name)")
            #expect(try value(container, "securityContext", "capabilities", "drop") as? [String] == ["ALL"], "\(name)")
        }
    }

    /// Only the ports each process serves are reachable, and each policy selects its pods.
    @Test func networkPoliciesAdmitOnlyTheServedPorts() throws {
        for (name, ports) in [("sluice-ingest", [8080, 9091]), ("sluice-worker", [9090]), ("sluice-console", [8090])] {
            let policy = try object("NetworkPolicy", name)
            let selector = try #require(try value(policy, "spec", "podSelector", "matchLabels") as? [String: String])
            let labels = try #require(try value(try object("Deployment", name), "spec", "template", "metadata", "labels") as? [String: String])
            #expect(selector.allSatisfy { labels[$0.key] == $0.value })
            let rules = try #require(try value(policy, "spec", "ingress") as? [[String: Any]])
            #expect(rules.flatMap { ($0["ports"] as? [[String: Any]]) ?? [] }.compactMap { $0["port"] as? Int } == ports, "\(name)")
            let served = try #require(try container(of: name)["ports"] as? [[String: Any]]).compactMap { $0["containerPort"] as? Int }
            #expect(served == ports)
        }
        let migrate = try object("NetworkPolicy", "sluice-migrate")
        let spec = try #require(migrate["spec"] as? [String: Any])
        #expect(spec["ingress"] == nil && spec["policyTypes"] as? [String] == ["Ingress", "Egress"], "the migration Job takes no connection")
    }
}
