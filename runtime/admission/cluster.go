package admission

import (
	"fmt"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Annotations are the annotations of an admission request's two objects,
// as the caller decoded them with the rest of what it reads of them: Object
// from req.Object, OldObject from req.OldObject. An object the caller did
// not decode, could not, or found without annotations, has none here.
// Decoding them here again would be another scan of the whole object on
// every request.
type Annotations struct {
	Object, OldObject map[string]string
}

// ClusterOf returns the logical cluster a request acts in, read from the
// one object of the request that kcp wrote: on a CREATE the new object, on
// which kcp sets the kcp.io/cluster annotation whatever the client sent; on
// an UPDATE or DELETE the stored object (oldObject). On an UPDATE the new
// object carries what the client wrote, and storage puts the real value back
// only after admission, so it is never read: ClusterOf picks which of
// decoded to read by the operation, and the caller only says which object
// each came from. A request without that object or whose value is not a
// logical cluster name is refused.
func ClusterOf(req *admissionv1.AdmissionRequest, decoded Annotations) (string, error) {
	raw, annotations := req.OldObject.Raw, decoded.OldObject
	source := "stored object (oldObject)"
	if req.Operation == admissionv1.Create {
		raw, annotations, source = req.Object.Raw, decoded.Object, "created object"
	}
	if len(raw) == 0 {
		return "", fmt.Errorf("the %s request carries no %s to read its logical cluster from", req.Operation, source)
	}
	cluster, ok := annotations[v1alpha1.ClusterAnnotation]
	if !ok || cluster == "" {
		return "", fmt.Errorf("the %s has no %s annotation", source, v1alpha1.ClusterAnnotation)
	}
	if err := Cluster(cluster); err != nil {
		return "", fmt.Errorf("%s of the %s: %w", v1alpha1.ClusterAnnotation, source, err)
	}
	return cluster, nil
}

// ResolvedCluster returns the logical cluster that the annotations of an
// object the runtime read from kcp itself name (the LogicalCluster object
// of a workspace it addressed by path), checked as Cluster checks it. It is
// never for an object a request carries: ClusterOf decides those.
func ResolvedCluster(annotations map[string]string) (string, error) {
	cluster := annotations[v1alpha1.ClusterAnnotation]
	if err := Cluster(cluster); err != nil {
		return "", fmt.Errorf("%s of a LogicalCluster read from kcp: %w", v1alpha1.ClusterAnnotation, err)
	}
	return cluster, nil
}

// Cluster checks that s is a logical cluster name: what kcp accepts
// (logicalcluster.Name.IsValid), and a single path segment.
func Cluster(s string) error {
	if !logicalcluster.Name(s).IsValid() {
		return fmt.Errorf("%q is not a logical cluster name", s)
	}
	if strings.HasPrefix(s, "system:") {
		if err := Segment(s); err != nil {
			return fmt.Errorf("%q is not a logical cluster name: %w", s, err)
		}
	}
	return nil
}
