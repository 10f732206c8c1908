package admission

// The one door of the runtime's requests to the kcp front-proxy, which
// serves every logical cluster below /clusters/<name> and routes each to its
// shard: the dependent finder (package decision) and the re-indexer
// (package index) read and write at the paths Path (or, for a workspace a
// rule names by its path, WorkspacePath) builds, of segments Segment
// accepted.

import (
	"fmt"
	"path"

	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Address is a checked front-proxy path; requests reach the front-proxy
// only through one (Address.On), the runtime sets no path of its own.
type Address struct{ segments []string }

// On points r at the address.
func (a Address) On(r *rest.Request) *rest.Request { return r.AbsPath(a.segments...) }

// String is the path.
func (a Address) String() string { return path.Join(a.segments...) }

// Path is the front-proxy address of a resource in a logical cluster: the
// collection, in namespace if given, and the object called name if given.
// Every segment is checked (the trust boundary) before it is joined: a value
// that would leave its segment ("..", "/", an escape) or a cluster that is
// no logical cluster name makes no address, so no value read from a request
// or an object can address another workspace or another resource.
func Path(cluster string, r schema.GroupVersionResource, namespace, name string) (Address, error) {
	if err := Cluster(cluster); err != nil {
		return Address{}, fmt.Errorf("addressing %s: %w", r.GroupResource(), err)
	}
	return address(cluster, r, namespace, name)
}

// WorkspacePath is Path for a workspace named by its path (root:org:network),
// which the front-proxy resolves: for paths a rule names, never for a value
// a request carries.
func WorkspacePath(workspace string, r schema.GroupVersionResource, namespace, name string) (Address, error) {
	if p := logicalcluster.NewPath(workspace); !p.IsValid() || p == logicalcluster.Wildcard {
		return Address{}, fmt.Errorf("addressing %s: %q is not a workspace path", r.GroupResource(), workspace)
	}
	return address(workspace, r, namespace, name)
}

// address joins the segments of Path once the cluster is checked.
func address(cluster string, r schema.GroupVersionResource, namespace, name string) (Address, error) {
	segments := []string{"/clusters", cluster}
	if r.Group == "" {
		segments = append(segments, "api", r.Version)
	} else {
		segments = append(segments, "apis", r.Group, r.Version)
	}
	if namespace != "" {
		segments = append(segments, "namespaces", namespace)
	}
	segments = append(segments, r.Resource)
	if name != "" {
		segments = append(segments, name)
	}
	for _, s := range segments[2:] {
		if err := Segment(s); err != nil {
			return Address{}, fmt.Errorf("addressing %s in %s: %w", r.GroupResource(), cluster, err)
		}
	}
	return Address{segments: segments}, nil
}
