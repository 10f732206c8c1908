package index

import (
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

// DependentDeletions hears of the dependents whose deletion the index
// webhook admitted (decision.Replayer: the deferred deletion of an object
// they referenced may be carried out once they are gone). It must not
// block.
type DependentDeletions interface {
	DependentDeleted(cluster string, dependent schema.GroupVersionResource, meta metav1.ObjectMeta, targets []Referenced)
}

// Referenced is an object a dependent references: looked for in the
// dependent's namespace, then cluster-wide.
type Referenced struct {
	Resource schema.GroupVersionResource
	Name     string
}

// dependentDeleted tells Deletions of the dependent req deletes and of what
// its stored copy references under the current rules. The request's object
// is attacker-controlled like any other: the cluster is checked
// (admission.ClusterOf), names that cannot be an object's are dropped
// (referencesOf), and what is told only makes the webhook read those
// objects and ask for a deletion it decides like any other.
func (ix *Indexer) dependentDeleted(req *admissionv1.AdmissionRequest) {
	if ix.Deletions == nil || admission.DryRun(req) || len(req.OldObject.Raw) == 0 {
		return
	}
	var old map[string]interface{}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return
	}
	meta := admission.MetaOf(old)
	cluster, err := admission.ClusterOf(req, admission.Annotations{OldObject: meta.Annotations})
	if err != nil || admission.Name(meta.Name) != nil || (meta.Namespace != "" && admission.Namespace(meta.Namespace) != nil) {
		return
	}
	s := ix.schemas.IndexSchema(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource})
	refs := referencesOf(s, old)
	if len(refs) == 0 {
		return
	}
	targets := make([]Referenced, 0, len(refs))
	for _, r := range refs {
		targets = append(targets, Referenced{Resource: r.target, Name: r.name})
	}
	ix.Deletions.DependentDeleted(cluster, schema.GroupVersionResource(req.Resource), meta, targets)
}
