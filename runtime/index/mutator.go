package index

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// Schemas gives the reference index schema of a dependent type.
type Schemas interface {
	IndexSchema(dependent schema.GroupResource) registry.Schema
}

// Indexer labels dependents on create and update with what they reference
// (registry.Schema), so that deciding a DELETE reads only the dependents
// that reference the object.
type Indexer struct {
	schemas Schemas
	rules   admission.Rules
	log     logr.Logger
	// hook reads and answers the AdmissionReviews.
	hook http.Handler
	// Targets, when set, records an intent on each object a write newly
	// references, and refuses the write when the object is being deleted.
	Targets Targets
	// Dependents, when set, reads dependents named by intents, so that an
	// object carrying many sheds those of dependents already stored.
	Dependents DependentReader
	// Pending, when set, marks the references a write makes to objects
	// that do not exist, so that they are not settled before it is
	// stored (settle.PendingReferences).
	Pending interface {
		Mark(ctx context.Context, cluster string, gr schema.GroupResource, lookedAt time.Time) (bool, error)
	}
	// Deletions, when set, hears of every dependent whose deletion is
	// admitted here, with the objects it references: a deferred deletion
	// of one of them may be carried out once the dependent is gone.
	Deletions DependentDeletions
	// RequestTimeout bounds that work for one request.
	RequestTimeout time.Duration
	// IntentLifetime is how long an intent counts as a write that may
	// still be stored (DefaultLifetime).
	IntentLifetime time.Duration
	// now is the clock; tests replace it.
	now func() time.Time
	// pruning holds the objects (objectKey) whose intents a prune is
	// removing: one at a time per object, since each reads every
	// dependent its fresh intents name.
	pruning sync.Map
}

// NewIndexer returns an indexer that refuses a write while rules says it
// does not know every rule over the written type: without them it can
// neither label the object nor check what it newly references.
func NewIndexer(schemas Schemas, rules admission.Rules, log logr.Logger) *Indexer {
	ix := &Indexer{schemas: schemas, rules: rules, log: log, RequestTimeout: 8 * time.Second, IntentLifetime: DefaultLifetime, now: time.Now}
	ix.hook = admission.NewHandler(log, ix.Decide, observeIndex)
	return ix
}

// ServeHTTP implements the mutating admission endpoint.
func (ix *Indexer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ix.hook.ServeHTTP(w, r)
}

// Outcomes of an indexing request, as reported in metrics.
const (
	indexUnchanged = "unchanged"
	indexLabelled  = "labelled"
	indexStripped  = "stripped"
	// indexRefused: the write newly references an object being deleted.
	indexRefused = "refused"
	// indexConflict: an update against a revision other than the stored
	// one, which the API server refuses anyway.
	indexConflict = "conflict"
)

func observeIndex(outcome string, start time.Time) {
	indexRequests.WithLabelValues(outcome).Inc()
	indexLatency.Observe(time.Since(start).Seconds())
}

// Decide returns the patch that makes the object's index labels match the
// current rules. It refuses a well-formed object only when the write makes
// a new reference to an object that is being deleted (or when it cannot
// tell): the index itself is a shortcut for deciding deletions, and an
// object without a valid stamp is simply read in full when that happens.
func (ix *Indexer) Decide(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	if req.Operation == admissionv1.Delete {
		// The intents to withdraw are named by the dependent itself:
		// waiting for the rules to be confirmed current would only let
		// them stand, holding their targets, until they expire.
		if ix.rules.Decidable(ctx, admission.ScopeOf(ctx), admission.Registered) == nil {
			ix.withdrawIntents(ctx, req)
			ix.dependentDeleted(req)
		}
		return admission.Allow(""), indexUnchanged
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allow(""), indexUnchanged
	}
	if req.SubResource != "" {
		// Subresource writes cannot change labels; they are not sent here.
		return admission.Allow(""), indexUnchanged
	}
	obj := map[string]interface{}{}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil || len(req.Object.Raw) == 0 {
		msg := fmt.Sprintf("cannot index %s/%s: the request carries no decodable object", req.Resource.Resource, req.Name)
		if err != nil {
			msg += ": " + err.Error()
		}
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, msg), admission.OutcomeBadRequest
	}
	md, _ := obj["metadata"].(map[string]interface{})
	if md == nil {
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("cannot index %s/%s: the object has no metadata", req.Resource.Resource, req.Name)), admission.OutcomeBadRequest
	}
	current, err := stringMap(md["labels"])
	if err != nil {
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("cannot index %s/%s: metadata.labels: %v", req.Resource.Resource, req.Name, err)), admission.OutcomeBadRequest
	}

	if err := ix.rules.Decidable(ctx, admission.ScopeOf(ctx), admission.Recent); err != nil {
		// Not knowing the rules over this type, it can neither label the
		// object nor tell whether the write makes a new reference to an
		// object being deleted. A pod gets such requests only when reached
		// past its readiness, or while a shard holding those rules cannot
		// be read; refusing them is what the validator (package decision)
		// does too.
		return admission.NotDecidable(err), admission.OutcomeNotInitialized
	}
	var old map[string]interface{}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			old = nil
		}
	}
	s := ix.schemas.IndexSchema(schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource})
	resp, refused, intentLabel, targets := ix.recordIntents(ctx, req, s, obj, md, old)
	if resp != nil {
		return resp, refused
	}
	if intentLabel != "" && old != nil {
		ix.withdrawRecordedBy(ctx, req, old)
	}
	index := s.Labels(obj)
	outcome := indexLabelled
	if index == nil {
		outcome = indexStripped
	}
	labels, changed := registry.Relabel(current, index)
	if ix.relabelIntent(labels, intentLabel, old) {
		changed = true
	}
	ops := []map[string]interface{}{{"op": "add", "path": "/metadata/labels", "value": labels}}
	annotations, annotationsChanged, err := intentAnnotations(md, labels, targets, old)
	if err != nil {
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("cannot index %s/%s: metadata.annotations: %v", req.Resource.Resource, req.Name, err)), admission.OutcomeBadRequest
	}
	if annotationsChanged {
		ops = append(ops, map[string]interface{}{"op": "add", "path": "/metadata/annotations", "value": annotations})
	}
	if !changed && !annotationsChanged {
		return admission.Allow(""), indexUnchanged
	}
	if !changed {
		ops = ops[1:]
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return admission.Deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()), admission.OutcomeError
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp = admission.Allow("")
	resp.Patch, resp.PatchType = patch, &pt
	return resp, outcome
}

// The intent record of a dependent, its IntentLabel and
// IntentTargetsAnnotation, is the webhook's alone: a write that recorded
// intents gets the record of those; any other write keeps the stored copy's
// while that is fresh, and has none otherwise, whatever the client sent.
// So a stored IntentLabel names intents whose write is stored, which is
// what lets a later write (withdrawSuperseded) and the dependent's deletion
// (withdrawIntents) withdraw them; a label a client wrote would let it
// withdraw an intent of its own write still on its way.

// relabelIntent sets the dependent's IntentLabel to intentLabel when this
// write recorded intents, and otherwise to the stored copy's (old) while
// that is fresh, removing it when there is none; it reports whether it
// changed labels.
func (ix *Indexer) relabelIntent(labels map[string]string, intentLabel string, old map[string]interface{}) bool {
	want := intentLabel
	if want == "" {
		want = ix.standingLabel(old)
	}
	got, has := labels[v1alpha1.IntentLabel]
	switch {
	case want == "" && !has:
		return false
	case want == "":
		delete(labels, v1alpha1.IntentLabel)
		return true
	case has && got == want:
		return false
	}
	labels[v1alpha1.IntentLabel] = want
	return true
}

// standingLabel is the IntentLabel of the stored copy old when it is well
// formed and fresh, "" otherwise (and for a create, which has no stored
// copy).
func (ix *Indexer) standingLabel(old map[string]interface{}) string {
	if old == nil {
		return ""
	}
	v := admission.MetaOf(old).Labels[v1alpha1.IntentLabel]
	if _, at, ok := ParseLabel(v); ok && ix.now().Sub(at) <= ix.IntentLifetime {
		return v
	}
	return ""
}

// intentAnnotations returns the dependent's annotations with
// IntentTargetsAnnotation listing targets when this write recorded intents,
// the stored copy's (old) when the dependent keeps its IntentLabel, and
// without it otherwise; and whether that changed them.
func intentAnnotations(md map[string]interface{}, labels map[string]string, targets []v1alpha1.IntentTarget, old map[string]interface{}) (map[string]string, bool, error) {
	annotations, err := stringMap(md["annotations"])
	if err != nil {
		return nil, false, err
	}
	want, keep := "", false
	switch {
	case len(targets) > 0:
		b, err := json.Marshal(targets)
		if err != nil {
			return nil, false, err
		}
		want, keep = string(b), true
	case labels[v1alpha1.IntentLabel] != "":
		want, keep = annotationsOf(old)[v1alpha1.IntentTargetsAnnotation]
	}
	got, has := annotations[v1alpha1.IntentTargetsAnnotation]
	switch {
	case !keep && !has:
		return annotations, false, nil
	case !keep:
		delete(annotations, v1alpha1.IntentTargetsAnnotation)
		return annotations, true, nil
	case has && got == want:
		return annotations, false, nil
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.IntentTargetsAnnotation] = want
	return annotations, true, nil
}

// annotationsOf returns the annotations of obj as JSON decoding left it;
// none when obj has none or they are not a map of strings.
func annotationsOf(obj map[string]interface{}) map[string]string {
	md, _ := obj["metadata"].(map[string]interface{})
	annotations, err := stringMap(md["annotations"])
	if err != nil {
		return nil
	}
	return annotations
}

// stringMap reads a labels map as JSON decoding left it.
func stringMap(v interface{}) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("expected an object, got %T", v)
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("label %q: expected a string, got %T", k, x)
		}
		out[k] = s
	}
	return out, nil
}
