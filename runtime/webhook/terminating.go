package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/refindex"
)

// TargetStates tells whether a referenced object is being deleted.
type TargetStates interface {
	// Deleting reports whether the object called name of target exists in
	// the logical cluster, in namespace or cluster-wide, and is being
	// deleted. An object that does not exist is not being deleted.
	Deleting(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string) (bool, error)
}

// reference is one object a dependent names.
type reference struct {
	target schema.GroupVersionResource
	name   string
}

func (r reference) String() string { return r.target.Resource + "/" + r.name }

// referencesOf returns what obj references under s, sorted.
func referencesOf(s refindex.Schema, obj map[string]interface{}) []reference {
	seen := map[reference]bool{}
	var out []reference
	for _, r := range s.References {
		for _, p := range r.Paths {
			for _, v := range p.Values(obj) {
				ref := reference{target: r.TargetGVR(), name: v}
				if v != "" && !seen[ref] {
					seen[ref] = true
					out = append(out, ref)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].target != out[j].target {
			return out[i].target.String() < out[j].target.String()
		}
		return out[i].name < out[j].name
	})
	return out
}

// newReferences returns what obj references under s that old did not: a
// reference the dependent already held is not made anew by this write.
func newReferences(s refindex.Schema, old, obj map[string]interface{}) []reference {
	refs := referencesOf(s, obj)
	if old == nil {
		return refs
	}
	had := map[reference]bool{}
	for _, r := range referencesOf(s, old) {
		had[r] = true
	}
	out := refs[:0]
	for _, r := range refs {
		if !had[r] {
			out = append(out, r)
		}
	}
	return out
}

// refuseDeletingTargets refuses a write that makes a new reference to an
// object that is being deleted: the deletion was allowed because nothing
// referenced the object, and once its finalizers are done it is gone, so
// the new reference would dangle. Kubernetes refuses new users of a
// terminating PersistentVolumeClaim for the same reason. It returns nil
// when the write may go on.
func (ix *Indexer) refuseDeletingTargets(ctx context.Context, req *admissionv1.AdmissionRequest, s refindex.Schema, obj, md map[string]interface{}) (*admissionv1.AdmissionResponse, string) {
	if ix.Targets == nil || len(s.References) == 0 {
		return nil, ""
	}
	if md["deletionTimestamp"] != nil {
		// A dependent on its way out keeps nothing alive.
		return nil, ""
	}
	var old map[string]interface{}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			old = nil
		}
	}
	refs := newReferences(s, old, obj)
	if len(refs) == 0 {
		return nil, ""
	}
	annotations, _ := md["annotations"].(map[string]interface{})
	cluster, _ := annotations[v1alpha1.ClusterAnnotation].(string)
	name, _ := md["name"].(string)
	namespace, _ := md["namespace"].(string)
	self := req.Resource.Resource + "/" + name
	if cluster == "" {
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("cannot check what %s references: the object has no %s annotation", self, v1alpha1.ClusterAnnotation)), outcomeBadRequest
	}
	ctx, cancel := context.WithTimeout(ctx, ix.RequestTimeout)
	defer cancel()
	for _, ref := range refs {
		deleting, err := ix.Targets.Deleting(ctx, cluster, namespace, ref.target, ref.name)
		if err != nil {
			ix.log.Error(err, "checking a referenced object failed", "cluster", cluster, "object", self, "references", ref.String())
			return deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
				fmt.Sprintf("cannot check whether %s, which %s references, is being deleted, so protection refuses the write: %v", ref, self, err)), outcomeError
		}
		if deleting {
			ix.log.Info("write refused: it references an object being deleted", "cluster", cluster, "object", self, "references", ref.String(), "user", req.UserInfo.Username)
			return deny(http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf("%s cannot reference %s: %s is being deleted", self, ref, ref)), indexRefused
		}
	}
	return nil, ""
}

// Deleting implements TargetStates: a GET of the object in the dependent's
// namespace, then cluster-wide, through the front-proxy.
func (f *FrontProxyFinder) Deleting(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string) (bool, error) {
	scopes := []string{namespace}
	if namespace != "" {
		scopes = append(scopes, "")
	}
	for _, ns := range scopes {
		res := f.raw.Get().AbsPath(resourcePath(cluster, target, ns, name)...).SetHeader("Accept", "application/json").Do(ctx)
		// Error, unlike Raw, decodes the server's Status, so that a
		// refusal names what was refused.
		err := res.Error()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading %s %s: %w", target.GroupResource(), name, err)
		}
		body, _ := res.Raw()
		var o struct {
			Metadata struct {
				DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &o); err != nil {
			return false, fmt.Errorf("decoding %s %s: %w", target.GroupResource(), name, err)
		}
		return o.Metadata.DeletionTimestamp != nil, nil
	}
	return false, nil
}
