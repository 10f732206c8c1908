// Package frontproxy addresses resources through the kcp front-proxy, which
// serves every logical cluster below /clusters/<name> and routes each to its
// shard. The dependent finder (package decision) and the re-indexer
// (package index) read and write dependents at these paths.
package frontproxy

import "k8s.io/apimachinery/pkg/runtime/schema"

// Path is the front-proxy path of a resource in a logical cluster: the
// collection, in namespace if given, and the object called name if given.
func Path(cluster string, r schema.GroupVersionResource, namespace, name string) []string {
	path := []string{"/clusters", cluster}
	if r.Group == "" {
		path = append(path, "api", r.Version)
	} else {
		path = append(path, "apis", r.Group, r.Version)
	}
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	path = append(path, r.Resource)
	if name != "" {
		path = append(path, name)
	}
	return path
}
