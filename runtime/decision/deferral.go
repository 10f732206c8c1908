package decision

// Deferred deletion, as a refused deletion records it: the object (or its
// namespace) opted in, so the refusal is written on the object, and the
// Replayer deletes it once nothing references it. The record is the
// webhook's alone (guardDeferral); v1alpha1.DeferredDeletion is its format.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// DeferralStore reads and writes what deferred deletion needs in a consumer
// workspace. FrontProxyFinder implements it.
type DeferralStore interface {
	// Meta reads the metadata of the object called name (in namespace,
	// "" when cluster-scoped); found is false when there is none.
	Meta(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (obj metav1.PartialObjectMetadata, found bool, err error)
	// NamespaceAnnotations reads the annotations of a namespace.
	NamespaceAnnotations(ctx context.Context, cluster, namespace string) (map[string]string, error)
	// BindsDependentExport reports whether the workspace binds an export
	// that serves p's dependent type: only there are p's rules about its
	// objects.
	BindsDependentExport(ctx context.Context, cluster string, p registry.Protection) (bool, error)
	// RecordDeferral writes record on the object with that UID, and the
	// label that finds it again; it fails when the object is not that one.
	RecordDeferral(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record string) error
	// ClearDeferral removes the record with that value, and the label, from
	// the object; an object that no longer carries the value is left as
	// it is.
	ClearDeferral(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record string) error
	// DeleteDeferred deletes the object as record asks: with its UID, and
	// the revision meta was read at, as preconditions (a record removed,
	// or anything else written, since, makes it fail with a conflict),
	// and its propagation policy.
	DeleteDeferred(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record v1alpha1.DeferredDeletion) error
	// MayDelete asks kcp whether the user who asked for the deferred
	// deletion may delete the object (a SubjectAccessReview in its
	// workspace).
	MayDelete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, record v1alpha1.DeferredDeletion) (bool, error)
	// CreateEvent records ev in the workspace.
	CreateEvent(ctx context.Context, cluster string, ev process.Event) error
}

// Deferrals is what a deletion that is refused for its dependents needs to
// defer it.
type Deferrals interface {
	// Deferred hears of every deferral recorded, so that the deletion is
	// tried again at once should its last dependent be gone already.
	Deferred(cluster string, gvr schema.GroupVersionResource, namespace, name string)
}

// deferDeletion records the refused deletion d on the object when it, its
// namespace, or one of the rules that protect it (protections) opted in
// (defers), and returns what the denial adds to say so; "" when nothing
// is deferred. It is best effort: a deletion it cannot record stays
// refused, as it would be without deferral, and the reason is logged and
// said.
//
// The entry in the ledger comes first: only the webhook writes there, and
// only an entry lets the Replayer carry the deletion out. The opt-in, the
// UID and an existing record are read from the stored object, not from the
// review, which anyone who reaches the webhook can forge. Who asked is the
// review's: kcp's SubjectAccessReview decides, for that user, whether the
// deletion may be carried out (the security guide says what that leaves).
func (v *Validator) deferDeletion(ctx context.Context, d admission.Deletion, protections []registry.Protection, log logr.Logger) string {
	store, ledger := v.opts.Deferral, v.opts.Ledger
	if store == nil || ledger == nil {
		return ""
	}
	if v.isSelf(ctx, d.User, d.Extra) {
		// A replay the dependents still refuse: the record stands.
		return ""
	}
	obj, found, err := store.Meta(ctx, d.Cluster, d.Resource, d.Namespace, d.Name)
	meta := obj.ObjectMeta
	entry := func(record string) LedgerEntry {
		return LedgerEntry{Cluster: d.Cluster, Resource: d.Resource, Namespace: meta.Namespace, Name: meta.Name, Record: record}
	}
	switch {
	case err != nil:
		log.Error(err, "cannot tell whether the deletion is to be deferred")
		return ""
	case !found:
		// The API server decides a DELETE on its cached copy of the object
		// first and, refused on a copy that is not current, asks again on
		// the stored object. The record the first answer writes makes the
		// copy stale, so every deferred deletion is decided twice, and
		// the Replayer, told at once, may carry it out in between. The
		// denial stands (an allowance never rests on a read alone); it
		// says why nothing was deferred.
		return "; " + v1alpha1.DeletedMeanwhilePhrase
	case meta.UID != d.Meta.UID:
		return ""
	}
	if stored := meta.Annotations[v1alpha1.DeletionDeferredAnnotation]; stored != "" {
		rec, err := v1alpha1.ParseDeferredDeletion(stored)
		if err == nil && rec.UID == meta.UID {
			held, herr := ledger.Holds(ctx, entry(stored))
			if herr == nil && held {
				return deferredMessage(rec)
			}
			// A record the ledger does not hold is not the webhook's: it
			// defers nothing (the Replayer removes it), so it neither
			// speaks for whoever it names nor stands in for this deletion's
			// own record.
		}
	}
	if d.DryRun {
		// A dry run (kubectl depctrl why) reads, and says whether a
		// deletion is deferred, and by whom, but records nothing.
		return ""
	}
	if ok, err := v.defers(ctx, d.Cluster, meta, protections); err != nil || !ok {
		if err != nil {
			log.Error(err, "cannot tell whether the deletion is to be deferred")
		}
		return ""
	}
	if reason := notDeferrable(d.Options, meta.UID); reason != "" {
		return "; its deletion is not deferred: " + reason
	}
	rec := v1alpha1.DeferredDeletion{User: d.User, Groups: d.Groups, Extra: v1alpha1.AuthorizingExtra(d.Extra), At: metav1.NewTime(v.now().Truncate(time.Second)), UID: meta.UID}
	if d.Collection {
		rec.Verb = "deletecollection"
	}
	rec.PropagationPolicy = propagationOf(d.Options)
	value, err := rec.Encode()
	if err == nil {
		err = recordDeferral(ctx, ledger, store, entry(value), meta, log)
	}
	if err != nil {
		log.Error(err, "recording the deferred deletion failed")
		return "; deferring its deletion failed, so it is only refused: retry later"
	}
	log.Info("deletion deferred")
	deferredDeletions.WithLabelValues(deferralRecorded, d.Resource.GroupResource().String()).Inc()
	if v.opts.Deferrals != nil {
		v.opts.Deferrals.Deferred(d.Cluster, d.Resource, d.Namespace, d.Name)
	}
	v.deferralEvent(d, meta)
	return deferredMessage(rec)
}

// recordDeferral writes e to the ledger first, then its record on the
// object meta. The entry goes with a record that fails: each retry of a
// record that cannot be written (the record names its second) would leave
// one more otherwise. A record written all the same is then one the ledger
// does not hold, which the Replayer removes without deleting anything.
func recordDeferral(ctx context.Context, ledger DeferralLedger, store DeferralStore, e LedgerEntry, meta metav1.ObjectMeta, log logr.Logger) error {
	if err := ledger.Put(ctx, e); err != nil {
		return err
	}
	err := store.RecordDeferral(ctx, e.Cluster, e.Resource, meta, e.Record)
	if err != nil {
		if rerr := ledger.Remove(context.WithoutCancel(ctx), e); rerr != nil {
			log.Error(rerr, "forgetting the ledger entry of a deferral not recorded")
		}
	}
	return err
}

// deferredMessage is what a denial adds for a deletion deferred by rec.
// The deletion that records it and every one after read the same: the API
// server asks again on the stored object after a denial decided on its
// cached copy, which the record made stale, so even the client whose
// deletion was just deferred gets the second answer.
func deferredMessage(rec v1alpha1.DeferredDeletion) string {
	return fmt.Sprintf("; %s (asked by %s at %s): depctrl deletes it once nothing references it (remove the annotation %s to cancel)",
		v1alpha1.DeletionDeferredPhrase, rec.User, rec.At.UTC().Format(time.RFC3339), v1alpha1.DeletionDeferredAnnotation)
}

// defers reports whether the object meta in cluster asks for its refused
// deletions to be deferred, as it is stored now: its own annotation, else
// its namespace's, else any of the rules that protect it (protections)
// whose dependent export the workspace binds: a rule over a type the
// workspace does not use, written anywhere, says nothing of its objects.
// The record's making and its carrying out both ask, so that opting out
// after a deferral stops it.
func (v *Validator) defers(ctx context.Context, cluster string, meta metav1.ObjectMeta, protections []registry.Protection) (bool, error) {
	store := v.opts.Deferral
	if v, ok := meta.Annotations[v1alpha1.DeferDeletionAnnotation]; ok {
		return v == "true", nil
	}
	var nsAnnotations map[string]string
	if meta.Namespace != "" {
		var err error
		if nsAnnotations, err = store.NamespaceAnnotations(ctx, cluster, meta.Namespace); err != nil {
			return false, fmt.Errorf("reading namespace %s: %w", meta.Namespace, err)
		}
		if _, ok := nsAnnotations[v1alpha1.DeferDeletionAnnotation]; ok {
			return v1alpha1.DefersDeletion(nil, nsAnnotations, false), nil
		}
	}
	for _, p := range protections {
		if !p.DeferDeletion {
			continue
		}
		bound, err := store.BindsDependentExport(ctx, cluster, p)
		if err != nil {
			return false, err
		}
		if bound {
			return true, nil
		}
	}
	return false, nil
}

// Defers is defers for the Replayer: whether the object still asks for its
// deferred deletion, under the rules that protect its type now.
func (v *Validator) Defers(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta) (bool, error) {
	return v.defers(ctx, cluster, meta, v.protections.Protections(gvr))
}

// notDeferrable says why a deletion with options cannot be carried out
// later as asked: a resourceVersion precondition names a revision that the
// record itself replaces, and a UID precondition another object than the
// one stored. "" when it can.
func notDeferrable(o *metav1.DeleteOptions, uid types.UID) string {
	if o == nil {
		return ""
	}
	if p := o.Preconditions; p != nil {
		if p.ResourceVersion != nil {
			return "it names a resourceVersion precondition, which recording the deferral would break"
		}
		if p.UID != nil && *p.UID != uid {
			return "its UID precondition names another object"
		}
	}
	if o.PropagationPolicy != nil && !v1alpha1.KnownPropagation(*o.PropagationPolicy) {
		return fmt.Sprintf("the propagation policy %q is unknown", *o.PropagationPolicy)
	}
	return ""
}

// propagationOf is the propagation policy a deletion with options asked
// for, nil for the server's default: its propagationPolicy, else what the
// deprecated orphanDependents stands for (true orphans the object's
// dependents, false deletes them in the background), so that a deletion
// carried out later keeps or removes what the object owns as the refused
// request would have. The API server refuses options that set both.
func propagationOf(o *metav1.DeleteOptions) *metav1.DeletionPropagation {
	switch {
	case o == nil:
		return nil
	case o.PropagationPolicy != nil:
		return o.PropagationPolicy
	case o.OrphanDependents == nil: //nolint:staticcheck // deprecated, but clients still send it
		return nil
	case *o.OrphanDependents: //nolint:staticcheck // deprecated, but clients still send it
		p := metav1.DeletePropagationOrphan
		return &p
	default:
		p := metav1.DeletePropagationBackground
		return &p
	}
}

// deferralEvent records on the object, in the background, that its
// deletion was deferred and by whom.
func (v *Validator) deferralEvent(d admission.Deletion, meta metav1.ObjectMeta) {
	ev := deletionEvent(regardingDeleted(d, meta.UID), process.EventNormal, v1alpha1.DeferredReason,
		fmt.Sprintf("deletion of %s by %s refused while dependents reference it, and deferred: it is deleted once nothing does", d, d.User),
		process.EventInstance("depctrl-webhook"))
	store, cluster, log := v.opts.Deferral, d.Cluster, v.log
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := store.CreateEvent(ctx, cluster, ev); err != nil {
			log.Error(err, "recording the deferral Event", "cluster", cluster, "name", d.Name)
		}
	}()
}

// The front-proxy implementation of DeferralStore.

// Meta implements DeferralStore with a GET.
func (f *FrontProxyFinder) Meta(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string) (metav1.PartialObjectMetadata, bool, error) {
	path, err := admission.Path(cluster, gvr, namespace, name)
	if err != nil {
		return metav1.PartialObjectMetadata{}, false, err
	}
	var o metav1.PartialObjectMetadata
	err = f.get(ctx, path, &o)
	if apierrors.IsNotFound(err) {
		return metav1.PartialObjectMetadata{}, false, nil
	}
	if err != nil {
		return metav1.PartialObjectMetadata{}, false, fmt.Errorf("reading %s %s: %w", gvr.GroupResource(), name, err)
	}
	return o, true, nil
}

// NamespaceAnnotations implements DeferralStore with a GET.
func (f *FrontProxyFinder) NamespaceAnnotations(ctx context.Context, cluster, namespace string) (map[string]string, error) {
	obj, found, err := f.Meta(ctx, cluster, namespacesGVR, "", namespace)
	if err != nil || !found {
		return nil, err
	}
	return obj.Annotations, nil
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// RecordDeferral implements DeferralStore with a merge patch that carries
// the UID: the API server refuses a patch that would change it, so the
// record lands on that very object or nowhere.
func (f *FrontProxyFinder) RecordDeferral(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         meta.UID,
		"annotations": map[string]string{v1alpha1.DeletionDeferredAnnotation: record},
		"labels":      map[string]string{v1alpha1.DeletionDeferredLabel: "true"},
	}})
	if err != nil {
		return fmt.Errorf("encoding the deferral: %w", err)
	}
	return f.patchMeta(ctx, cluster, gvr, meta, types.MergePatchType, body)
}

// ClearDeferral implements DeferralStore with a JSON patch that tests the
// record before it removes it and the label.
func (f *FrontProxyFinder) ClearDeferral(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record string) error {
	annotation := "/metadata/annotations/" + jsonPointer.Replace(v1alpha1.DeletionDeferredAnnotation)
	ops := []map[string]any{{"op": "test", "path": annotation, "value": record}, {"op": "remove", "path": annotation}}
	if _, ok := meta.Labels[v1alpha1.DeletionDeferredLabel]; ok {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/labels/" + jsonPointer.Replace(v1alpha1.DeletionDeferredLabel)})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding the removal of the deferral: %w", err)
	}
	err = f.patchMeta(ctx, cluster, gvr, meta, types.JSONPatchType, body)
	if failedTest(err) {
		return nil
	}
	return err
}

func (f *FrontProxyFinder) patchMeta(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, pt types.PatchType, body []byte) error {
	path, err := admission.Path(cluster, gvr, meta.Namespace, meta.Name)
	if err != nil {
		return err
	}
	if err := path.On(f.raw.Patch(pt)).Body(body).Do(ctx).Error(); err != nil {
		return fmt.Errorf("patching %s %s: %w", gvr.GroupResource(), meta.Name, err)
	}
	return nil
}

// DeleteDeferred implements DeferralStore.
func (f *FrontProxyFinder) DeleteDeferred(ctx context.Context, cluster string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record v1alpha1.DeferredDeletion) error {
	path, err := admission.Path(cluster, gvr, meta.Namespace, meta.Name)
	if err != nil {
		return err
	}
	uid, rv := record.UID, meta.ResourceVersion
	opts := metav1.DeleteOptions{
		TypeMeta:          metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: record.PropagationPolicy,
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("encoding the delete options: %w", err)
	}
	return path.On(f.raw.Delete()).SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}

// CreateEvent implements DeferralStore.
func (f *FrontProxyFinder) CreateEvent(ctx context.Context, cluster string, ev process.Event) error {
	return f.createEvent(ctx, cluster, ev.Object(time.Now()))
}

// MayDelete implements DeferralStore with a SubjectAccessReview in the
// object's workspace.
func (f *FrontProxyFinder) MayDelete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, namespace, name string, record v1alpha1.DeferredDeletion) (bool, error) {
	path, err := admission.Path(cluster, subjectAccessReviewsGVR, "", "")
	if err != nil {
		return false, err
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range record.Extra {
		extra[k] = v
	}
	review := authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: record.User, Groups: record.Groups, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: record.VerbOrDelete(), Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: namespace, Name: name,
			},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return false, fmt.Errorf("encoding the access review: %w", err)
	}
	res := path.On(f.raw.Post()).SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").Body(body).Do(ctx)
	if err := res.Error(); err != nil {
		return false, fmt.Errorf("asking whether %s may delete %s %s: %w", record.User, gvr.GroupResource(), name, err)
	}
	raw, _ := res.Raw()
	var out authorizationv1.SubjectAccessReview
	if err := json.Unmarshal(raw, &out); err != nil {
		return false, fmt.Errorf("decoding the access review: %w", err)
	}
	return out.Status.Allowed && !out.Status.Denied, nil
}

var subjectAccessReviewsGVR = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}

// BindsDependentExport implements DeferralStore.
func (f *FrontProxyFinder) BindsDependentExport(ctx context.Context, cluster string, p registry.Protection) (bool, error) {
	return f.bindsDependentExport(ctx, cluster, p)
}
