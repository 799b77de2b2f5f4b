// Package deploy holds no code: its tests check the deployment files beside
// them, which no container engine or cluster runs in CI.
//
//   - compose.yaml, nginx.conf, prometheus.yml, otel-collector.yaml: every
//     COSTGW_ and COSTSIM_ variable is a flag's variable with a value the flag
//     accepts, the gateway replicas share what replicas must share, every
//     file, service and port they name exists, and images are pinned.
//   - k8s/: what kubeconform cannot see (the same variable checks, selectors
//     and ports that match, probes on the admin port, GOMEMLIMIT under the
//     memory limit), and k8s/schemas/, the JSON schemas kubeconform validates
//     the manifests against, generated from Kubernetes' own OpenAPI documents.
//   - grafana/costgw.json: valid JSON whose every query names only metrics,
//     and labels of them, that the gateway exports.
//
// `make deploy-check` runs these tests and kubeconform.
package deploy
