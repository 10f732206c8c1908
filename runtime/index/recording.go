package index

// This file is the recording path of intents: a write that newly
// references an object records an intent on it (refusing the write when the
// object is being deleted), a refused write retracts its intents, expired
// ones are pruned, and a deletion withdraws them. Package intent holds their
// encoding.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// TargetState is what a write that references an object needs to know of
// it.
type TargetState struct {
	// Found is false when the object does not exist.
	Found bool
	// Deleting is true when the object is being deleted.
	Deleting bool
	// Annotations are the object's annotations; with AnyNamespace, those
	// of every object found, together (the first one's value where they
	// differ).
	Annotations map[string]string
	// AnyNamespace: the object was looked for by name in every namespace
	// (a cluster-scoped dependent's reference to a namespaced type), so an
	// object of that name created in any namespace later is referenced
	// too.
	AnyNamespace bool
}

// Targets reads and annotates referenced objects. Each looks for the object
// called name of target in the logical cluster, in namespace and then
// cluster-wide; without a namespace (a cluster-scoped dependent), every
// object of that name in the workspace, whichever its namespace.
type Targets interface {
	// Target reads the object.
	Target(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string) (TargetState, error)
	// Annotate merges set into the object's annotations (a nil value
	// removes the key) and returns the object as written. Nothing is
	// written to an object that does not exist.
	Annotate(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string, set map[string]*string) (TargetState, error)
	// Withdraw removes the annotation key from the object if it still has
	// the value value.
	Withdraw(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name, key, value string) error
}

// reference is one object a dependent names.
type reference struct {
	target schema.GroupVersionResource
	name   string
}

func (r reference) String() string { return r.target.Resource + "/" + r.name }

// referencesOf returns what obj references under s, sorted. A value that
// cannot be an object's name (admission.Name) references nothing: no object is
// looked for, annotated or addressed by it.
func referencesOf(s registry.Schema, obj map[string]interface{}) []reference {
	seen := map[reference]bool{}
	var out []reference
	for _, r := range s.References {
		for _, p := range r.Paths {
			for _, v := range p.Values(obj) {
				ref := reference{target: r.TargetGVR(), name: v}
				if admission.Name(v) == nil && !seen[ref] {
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
func newReferences(s registry.Schema, old, obj map[string]interface{}) []reference {
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

// recordIntents records an intent on every object the write newly
// references, and refuses the write when one of them is being deleted: the
// deletion was allowed because nothing referenced the object, and once its
// finalizers are done it is gone, so the new reference would dangle
// (Kubernetes refuses new users of a terminating PersistentVolumeClaim for
// the same reason). When the write may go on it returns nil, and what the
// dependent must carry to withdraw the intents later: the IntentLabel value
// and the objects they are on (none when it recorded nothing).
//
// Recording comes before the write is admitted, so a deletion of the object
// decided from now on sees the intent, and one decided before it is decided
// again (against the annotated revision) before it can be stored. A dry run
// records nothing; it only checks that no target is being deleted.
func (ix *Indexer) recordIntents(ctx context.Context, req *admissionv1.AdmissionRequest, s registry.Schema, obj, md, old map[string]interface{}) (*admissionv1.AdmissionResponse, string, string, []v1alpha1.IntentTarget) {
	if ix.Targets == nil || len(s.References) == 0 {
		return nil, "", "", nil
	}
	if md["deletionTimestamp"] != nil {
		// A dependent on its way out keeps nothing alive.
		return nil, "", "", nil
	}
	refs := newReferences(s, old, obj)
	if len(refs) == 0 {
		return nil, "", "", nil
	}
	name, _ := md["name"].(string)
	generateName := generatedPrefix(md)
	// The namespace is the request's: the API server takes it from the URL
	// and refuses an object that names another one before admission.
	namespace := req.Namespace
	self := req.Resource.Resource + "/" + name
	if name == "" {
		self = req.Resource.Resource + "/" + generateName + "*"
	}
	cluster, err := admission.ClusterOf(req, admission.Annotations{Object: annotationsOf(obj), OldObject: annotationsOf(old)})
	if err == nil && namespace != "" {
		err = admission.Namespace(namespace)
	}
	if err != nil {
		return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("cannot check what %s references: %v", self, err)), admission.OutcomeBadRequest, "", nil
	}
	if stale(md, old) {
		// The API server refuses this update with a conflict after
		// mutating admission: an intent recorded for it would stand for
		// a write that is never stored, and hold its objects until it
		// expired.
		return admission.Deny(http.StatusConflict, metav1.StatusReasonConflict,
			fmt.Sprintf("Operation cannot be fulfilled on %s: the object has been modified; please apply your changes to the latest version and try again", self)), indexConflict, "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, ix.RequestTimeout)
	defer cancel()

	record := !admission.DryRun(req)
	var set map[string]*string
	label := ""
	if record {
		token, err := NewToken()
		if err != nil {
			return admission.Deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()), admission.OutcomeError, "", nil
		}
		now := ix.now()
		intent := v1alpha1.Intent{
			Resource: schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}.String(), Version: req.Resource.Version,
			Namespace: namespace, Name: name, GenerateName: generateName, At: metav1.NewTime(now),
			// The rules it is recorded under: it counts while one stands.
			Rules: s.RuleUIDs,
		}
		value, err := Encode(intent)
		if err != nil {
			return admission.Deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()), admission.OutcomeError, "", nil
		}
		if !Addressable(intent) {
			// Every reader would take it for no intent (expired), and the
			// write would be admitted with nothing to stand for it.
			return admission.Deny(http.StatusBadRequest, metav1.StatusReasonBadRequest,
				fmt.Sprintf("cannot record that %s references anything: it has no name to record", self)), admission.OutcomeBadRequest, "", nil
		}
		set = map[string]*string{Key(token): &value}
		label = LabelValue(token, now)
	}
	var recorded []reference
	for _, ref := range refs {
		var state TargetState
		var err error
		lookedAt := ix.now()
		if record {
			state, err = ix.Targets.Annotate(ctx, cluster, namespace, ref.target, ref.name, set)
		} else {
			state, err = ix.Targets.Target(ctx, cluster, namespace, ref.target, ref.name)
		}
		if err == nil && record && (!state.Found || state.AnyNamespace) && ix.Pending != nil {
			// Nothing to record the intent on (or, for a reference that
			// holds in every namespace, perhaps not on everything it
			// will reference): mark references to missing objects of
			// the type as pending instead, so that none is settled
			// before this write is stored. A mark stored now may come
			// after the object was created: look again.
			var marked bool
			if marked, err = ix.Pending.Mark(ctx, cluster, ref.target.GroupResource(), lookedAt); err == nil && marked {
				state, err = ix.Targets.Annotate(ctx, cluster, namespace, ref.target, ref.name, set)
			}
		}
		if err != nil {
			ix.log.Error(err, "recording a reference on the referenced object failed", "cluster", cluster, "object", self, "references", ref.String())
			ix.retract(ctx, cluster, namespace, recorded, set)
			return admission.Deny(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable,
				fmt.Sprintf("cannot record on %s that %s references it, so protection refuses the write: %v", ref, self, err)), admission.OutcomeError, "", nil
		}
		recordedHere := record && state.Found
		if recordedHere {
			recorded = append(recorded, ref)
		}
		if state.Deleting {
			ix.log.Info("write refused: it references an object being deleted", "cluster", cluster, "object", self, "references", ref.String(), "user", req.UserInfo.Username)
			ix.retract(ctx, cluster, namespace, recorded, set)
			return admission.Deny(http.StatusForbidden, metav1.StatusReasonForbidden,
				fmt.Sprintf("%s cannot reference %s: %s is being deleted", self, ref, ref)), indexRefused, "", nil
		}
		if recordedHere {
			ix.pruneIntents(cluster, namespace, ref, state.Annotations)
		}
	}
	if len(recorded) == 0 {
		return nil, "", "", nil
	}
	targets := make([]v1alpha1.IntentTarget, len(recorded))
	for i, ref := range recorded {
		targets[i] = v1alpha1.IntentTarget{Group: ref.target.Group, Version: ref.target.Version, Resource: ref.target.Resource, Name: ref.name}
	}
	return nil, "", label, targets
}

// stale reports whether an update's object names a resourceVersion other
// than the stored copy's: the API server admits such an update (mutating
// admission runs before its compare of the two) and then refuses it with a
// conflict. An update without one is unconditional, and a patch carries
// the stored copy's unless it names one of its own.
func stale(md, old map[string]interface{}) bool {
	if old == nil {
		return false
	}
	rv, _ := md["resourceVersion"].(string)
	return rv != "" && rv != admission.MetaOf(old).ResourceVersion
}

// piggybacker is Targets that can hand annotations to the next patch of an
// object (GroupCommit.Piggyback).
type piggybacker interface {
	Piggyback(cluster, namespace string, target schema.GroupVersionResource, name string, set map[string]*string) bool
}

// pruneIntents removes, in the background and one prune per object at a
// time, the intents on a referenced object that have expired (their writes were stored or failed long ago, and
// what references the object is then read from the dependents themselves),
// and, on an object that carries many, those of dependents already stored
// (storedIntents).
func (ix *Indexer) pruneIntents(cluster, namespace string, ref reference, annotations map[string]string) {
	fresh, expired := On(annotations, ix.now(), ix.IntentLifetime)
	if len(expired) == 0 && len(fresh) <= pruneThreshold {
		return
	}
	// While a prune of the object runs, writes that reference it start
	// none: each would read the same dependents again, and on a popular
	// object they would multiply the reads by the writes. The next write
	// after it prunes what is left.
	key := objectKey{cluster: cluster, namespace: namespace, target: ref.target, name: ref.name}
	if _, running := ix.pruning.LoadOrStore(key, struct{}{}); running {
		return
	}
	go func() {
		defer ix.pruning.Delete(key)
		ctx, cancel := context.WithTimeout(context.Background(), ix.RequestTimeout)
		defer cancel()
		keys := append(expired, ix.storedIntents(ctx, cluster, ref.target, ref.name, fresh)...)
		if len(keys) == 0 {
			return
		}
		set := make(map[string]*string, len(keys))
		for _, k := range keys {
			set[k] = nil
		}
		// What no longer counts may wait for the next write that
		// references the object: it rides on that write's patch.
		if rider, ok := ix.Targets.(piggybacker); ok && rider.Piggyback(cluster, namespace, ref.target, ref.name, set) {
			return
		}
		if _, err := ix.Targets.Annotate(ctx, cluster, namespace, ref.target, ref.name, set); err != nil {
			ix.log.Info("removing intents that no longer count failed; the next write that references the object tries again",
				"cluster", cluster, "object", ref.String(), "error", err.Error())
		}
	}()
}

// retract removes the intent set recorded on refs by a write this webhook
// then refuses: it would hold up their deletion for nothing until it
// expired. It is best effort, within what is left of the request's time.
func (ix *Indexer) retract(ctx context.Context, cluster, namespace string, refs []reference, set map[string]*string) {
	remove := make(map[string]*string, len(set))
	for k := range set {
		remove[k] = nil
	}
	for _, ref := range refs {
		if _, err := ix.Targets.Annotate(ctx, cluster, namespace, ref.target, ref.name, remove); err != nil {
			ix.log.Info("retracting the intent of a refused write failed; it expires on its own", "cluster", cluster, "object", ref.String(), "error", err.Error())
		}
	}
}

// withdrawIntents removes the intents a dependent's last reference-making
// write recorded, when the dependent is deleted: until they expire they
// would hold up the deletion of what it referenced, since a deleted
// dependent looks like one not yet stored. The dependent says which objects
// they are on (IntentTargetsAnnotation), so that rules changed since do not
// matter. It is best effort (its webhook fails open): an intent left behind
// only delays that deletion until it expires. Only intents that name this
// very dependent are removed.
func (ix *Indexer) withdrawIntents(ctx context.Context, req *admissionv1.AdmissionRequest) {
	if ix.Targets == nil || admission.DryRun(req) || len(req.OldObject.Raw) == 0 {
		return
	}
	var old map[string]interface{}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return
	}
	ix.withdrawRecordedBy(ctx, req, old)
}

// withdrawRecordedBy removes, from the objects old's IntentTargetsAnnotation
// names, the fresh intents of the token old's IntentLabel carries that name
// old itself. Best effort: a failure is logged and the intent expires on
// its own.
//
// Decide calls it too, with the stored copy, when a write replaces that
// copy's IntentLabel with its own: the write that recorded those intents is
// stored, since the stored copy carries its label (the label is the
// webhook's alone, relabelIntent), so they no longer stand for anything on
// its way, and a deletion of their targets finds the dependent by reading
// the dependents. Left in place, they would outlive the dependent: its
// deletion withdraws only the intents its label names then, and a create's
// intent whose dependent is gone counts as in flight until it expires.
func (ix *Indexer) withdrawRecordedBy(ctx context.Context, req *admissionv1.AdmissionRequest, old map[string]interface{}) {
	md, _ := old["metadata"].(map[string]interface{})
	meta := admission.MetaOf(old)
	token, at, ok := ParseLabel(meta.Labels[v1alpha1.IntentLabel])
	if !ok || ix.now().Sub(at) > ix.IntentLifetime || md == nil {
		return
	}
	var targets []v1alpha1.IntentTarget
	if err := json.Unmarshal([]byte(meta.Annotations[v1alpha1.IntentTargetsAnnotation]), &targets); err != nil {
		return
	}
	cluster, err := admission.ClusterOf(req, admission.Annotations{OldObject: meta.Annotations})
	if err != nil {
		return
	}
	resource := schema.GroupResource{Group: req.Resource.Group, Resource: req.Resource.Resource}.String()
	ctx, cancel := context.WithTimeout(ctx, ix.RequestTimeout)
	defer cancel()
	for _, t := range targets {
		if admission.Name(t.Name) != nil {
			// The annotation is the dependent's, which its writer may
			// edit: a value that is no name addresses nothing.
			continue
		}
		ref := reference{target: schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}, name: t.Name}
		state, err := ix.Targets.Target(ctx, cluster, meta.Namespace, ref.target, ref.name)
		if err != nil || !state.Found {
			continue
		}
		key := Key(token)
		fresh, _ := On(map[string]string{key: state.Annotations[key]}, ix.now(), ix.IntentLifetime)
		if len(fresh) != 1 || !fresh[0].Names(resource, meta.Namespace, meta.Name) {
			continue
		}
		if err := ix.Targets.Withdraw(ctx, cluster, meta.Namespace, ref.target, ref.name, key, state.Annotations[key]); err != nil {
			ix.log.Info("withdrawing an intent failed; it expires on its own", "cluster", cluster, "object", ref.String(), "error", err.Error())
		}
	}
}

// generatedPrefix returns what the name the API server generates for a
// create without one starts with: its generateName, cut to the length the
// generator keeps (it appends random characters to at most that much of
// it, however long a prefix the object's validation accepts), so that the
// intent names the object that is stored.
func generatedPrefix(md map[string]interface{}) string {
	prefix, _ := md["generateName"].(string)
	if len(prefix) > names.MaxGeneratedNameLength {
		prefix = prefix[:names.MaxGeneratedNameLength]
	}
	return prefix
}
