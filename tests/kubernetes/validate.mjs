// Validates every document of the given YAML files against the Kubernetes (and Prometheus Operator)
// OpenAPI schemas shipped by kubernetes-models. Prints one line per document; exits 1 on any error.
// Usage: node validate.mjs FILE.yaml...
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const kinds = {
  "apps/v1/DaemonSet": () => import("kubernetes-models/apps/v1/DaemonSet"),
  "v1/Service": () => import("kubernetes-models/v1/Service"),
  "v1/ConfigMap": () => import("kubernetes-models/v1/ConfigMap"),
  "monitoring.coreos.com/v1/ServiceMonitor": () => import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor"),
  "monitoring.coreos.com/v1/PodMonitor": () => import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor"),
  "monitoring.coreos.com/v1/PrometheusRule": () => import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule"),
};

let failed = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`${file}: YAML error: ${doc.errors[0].message}`);
      failed++;
      continue;
    }
    const obj = doc.toJS();
    if (obj === null) continue;
    const key = `${obj.apiVersion}/${obj.kind}`;
    if (!(key in kinds)) {
      console.log(`${file}: ${key}: no schema known to this validator`);
      failed++;
      continue;
    }
    const mod = await kinds[key]();
    const Model = mod[obj.kind];
    try {
      new Model(obj).validate();
      console.log(`${file}: ${key} ${obj.metadata?.name}: valid`);
    } catch (e) {
      console.log(`${file}: ${key} ${obj.metadata?.name}: ${e.message}`);
      failed++;
    }
  }
}
process.exit(failed ? 1 : 0);
