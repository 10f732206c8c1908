// Package trust is the boundary between what an admission request says and
// what the runtime acts on. Every field of a request (names, namespaces,
// annotations, labels, the intents recorded on objects) is written by a
// client until it is checked here; the runtime reads a request's logical
// cluster only through ClusterOf, and builds no URL path from a segment that
// Segment refused (package frontproxy calls it for every segment it joins).
// A value that cannot be an object's name names no object: a reference
// holding one references nothing, and records nothing.
package trust

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// ClusterOf returns the logical cluster a request acts in, read from the
// one object of the request that kcp wrote: on a CREATE the new object, on
// which kcp sets the kcp.io/cluster annotation whatever the client sent; on
// an UPDATE or DELETE the stored object (oldObject). On an UPDATE the new
// object carries what the client wrote, and storage puts the real value back
// only after admission, so it is never read. A request without that object
// or whose value is not a logical cluster name is refused.
func ClusterOf(req *admissionv1.AdmissionRequest) (string, error) {
	raw := req.OldObject.Raw
	source := "stored object (oldObject)"
	if req.Operation == admissionv1.Create {
		raw, source = req.Object.Raw, "created object"
	}
	if len(raw) == 0 {
		return "", fmt.Errorf("the %s request carries no %s to read its logical cluster from", req.Operation, source)
	}
	var o struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", fmt.Errorf("decoding the metadata of the %s: %w", source, err)
	}
	cluster, ok := o.Metadata.Annotations[v1alpha1.ClusterAnnotation]
	if !ok || cluster == "" {
		return "", fmt.Errorf("the %s has no %s annotation", source, v1alpha1.ClusterAnnotation)
	}
	if err := Cluster(cluster); err != nil {
		return "", fmt.Errorf("%s of the %s: %w", v1alpha1.ClusterAnnotation, source, err)
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
