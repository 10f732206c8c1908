package decision

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// fakeDeferralStore is a workspace's objects as DeferralStore sees them,
// by resource and namespace/name.
type fakeDeferralStore struct {
	mu         sync.Mutex
	objects    map[string]metav1.PartialObjectMetadata
	namespaces map[string]map[string]string
	// recordErr fails RecordDeferral; deleteErr is what DeleteDeferred
	// answers (the webhook's refusal, say); mayDelete the access review.
	recordErr, deleteErr error
	mayDelete            bool
	// unbound are the rules whose dependent export the workspace does
	// not bind.
	unbound map[string]bool
	deleted []deletedWith
	cleared []string
	events  []process.Event
}

type deletedWith struct {
	key    string
	record v1alpha1.DeferredDeletion
}

func newFakeDeferralStore() *fakeDeferralStore {
	return &fakeDeferralStore{objects: map[string]metav1.PartialObjectMetadata{}, namespaces: map[string]map[string]string{}, mayDelete: true}
}

func storeKey(gvr schema.GroupVersionResource, namespace, name string) string {
	return gvr.Resource + ":" + namespace + "/" + name
}

func (f *fakeDeferralStore) put(gvr schema.GroupVersionResource, meta metav1.ObjectMeta) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[storeKey(gvr, meta.Namespace, meta.Name)] = metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: "VPC"}, ObjectMeta: meta}
}

func (f *fakeDeferralStore) get(gvr schema.GroupVersionResource, namespace, name string) (metav1.PartialObjectMetadata, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[storeKey(gvr, namespace, name)]
	return o, ok
}

func (f *fakeDeferralStore) Meta(_ context.Context, _ string, gvr schema.GroupVersionResource, namespace, name string) (metav1.PartialObjectMetadata, bool, error) {
	o, ok := f.get(gvr, namespace, name)
	return o, ok, nil
}

func (f *fakeDeferralStore) BindsDependentExport(_ context.Context, _ string, p registry.Protection) (bool, error) {
	return !f.unbound[p.Rule], nil
}

// bump gives an object written a new revision.
func bump(o *metav1.PartialObjectMetadata) {
	n, _ := strconv.Atoi(o.ResourceVersion)
	o.ResourceVersion = strconv.Itoa(n + 1)
}

func (f *fakeDeferralStore) NamespaceAnnotations(_ context.Context, _, namespace string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.namespaces[namespace], nil
}

func (f *fakeDeferralStore) RecordDeferral(_ context.Context, _ string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record string) error {
	if f.recordErr != nil {
		return f.recordErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := storeKey(gvr, meta.Namespace, meta.Name)
	o, ok := f.objects[k]
	if !ok || o.UID != meta.UID {
		return apierrors.NewConflict(gvr.GroupResource(), meta.Name, errors.New("another object"))
	}
	o.Annotations = merged(o.Annotations, v1alpha1.DeletionDeferredAnnotation, record)
	o.Labels = merged(o.Labels, v1alpha1.DeletionDeferredLabel, "true")
	bump(&o)
	f.objects[k] = o
	return nil
}

func merged(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}

func (f *fakeDeferralStore) ClearDeferral(_ context.Context, _ string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := storeKey(gvr, meta.Namespace, meta.Name)
	o := f.objects[k]
	if o.Annotations[v1alpha1.DeletionDeferredAnnotation] != record {
		return nil
	}
	delete(o.Annotations, v1alpha1.DeletionDeferredAnnotation)
	delete(o.Labels, v1alpha1.DeletionDeferredLabel)
	bump(&o)
	f.objects[k] = o
	f.cleared = append(f.cleared, k)
	return nil
}

func (f *fakeDeferralStore) DeleteDeferred(_ context.Context, _ string, gvr schema.GroupVersionResource, meta metav1.ObjectMeta, record v1alpha1.DeferredDeletion) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleteErr != nil {
		return f.deleteErr
	}
	k := storeKey(gvr, meta.Namespace, meta.Name)
	if o, ok := f.objects[k]; !ok || o.UID != record.UID || o.ResourceVersion != meta.ResourceVersion {
		return apierrors.NewConflict(gvr.GroupResource(), meta.Name, errors.New("precondition failed"))
	}
	delete(f.objects, k)
	f.deleted = append(f.deleted, deletedWith{key: k, record: record})
	return nil
}

func (f *fakeDeferralStore) MayDelete(context.Context, string, schema.GroupVersionResource, string, string, v1alpha1.DeferredDeletion) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mayDelete, nil
}

func (f *fakeDeferralStore) CreateEvent(_ context.Context, _ string, ev process.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return nil
}

func (f *fakeDeferralStore) snapshot() (deleted []deletedWith, cleared []string, events []process.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]deletedWith(nil), f.deleted...), append([]string(nil), f.cleared...), append([]process.Event(nil), f.events...)
}

// fakeLedger is a DeferralLedger in memory.
type fakeLedger struct {
	mu      sync.Mutex
	entries map[string]LedgerEntry
	err     error
}

func newFakeLedger() *fakeLedger { return &fakeLedger{entries: map[string]LedgerEntry{}} }

func (l *fakeLedger) Put(_ context.Context, e LedgerEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.entries[e.key()] = e
	return nil
}

func (l *fakeLedger) Holds(_ context.Context, e LedgerEntry) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	got, ok := l.entries[e.key()]
	return ok && got == e, nil
}

func (l *fakeLedger) Remove(_ context.Context, e LedgerEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, e.key())
	return nil
}

func (l *fakeLedger) List(context.Context) ([]LedgerEntry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []LedgerEntry
	for _, e := range l.entries {
		out = append(out, e)
	}
	return out, nil
}

func (l *fakeLedger) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// deferralsHeard records what Deferrals heard.
type deferralsHeard struct {
	mu    sync.Mutex
	heard []string
}

func (d *deferralsHeard) Deferred(cluster string, gvr schema.GroupVersionResource, namespace, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.heard = append(d.heard, cluster+" "+gvr.Resource+" "+namespace+"/"+name)
}

// TestDeferDeletion: a deletion refused for its dependents is recorded on
// the object when the stored object, or its namespace, opted in; what the
// review claims decides nothing; a dry run, the webhook's own replay, a
// resourceVersion precondition and a deletion that is allowed record
// nothing; a failure leaves the deletion refused, and says so.
func TestDeferDeletion(t *testing.T) {
	cluster := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}
	optIn := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1", v1alpha1.DeferDeletionAnnotation: "true"}
	optOut := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1", v1alpha1.DeferDeletionAnnotation: "false"}
	forgedRecord, err := v1alpha1.DeferredDeletion{User: "mallory", At: metav1.Now(), UID: "uid-vpc"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1", v1alpha1.DeferDeletionAnnotation: "true", v1alpha1.DeletionDeferredAnnotation: forgedRecord}
	blocked := &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "default", Name: "vm-1"}}}}
	orphan := metav1.DeletePropagationOrphan
	tests := []struct {
		name string
		// stored is the stored VPC's annotations; review, the ones the
		// review claims (stored when nil).
		stored, review map[string]string
		namespace      map[string]string
		storedUID      types.UID
		// gone: the object is no longer stored when the denial is decided.
		gone      bool
		edit      func(*admissionv1.AdmissionRequest)
		finder    *fakeFinder
		recordErr error
		// ruleDefers: the rule that protects VPCs sets deferDeletion;
		// ruleUnbound: the workspace does not bind its dependent export.
		ruleDefers, ruleUnbound bool
		ledgerErr               error
		wantAllowed             bool
		wantRecord              bool
		wantMessage             string
		// wantPolicy is the propagation policy the record keeps.
		wantPolicy *metav1.DeletionPropagation
	}{
		{name: "an object that opted in is deferred", stored: optIn, wantRecord: true, wantMessage: "its deletion is deferred (asked by alice at "},
		{name: "so is one whose namespace opted in", stored: cluster, namespace: map[string]string{v1alpha1.DeferDeletionAnnotation: "true"}, wantRecord: true, wantMessage: "its deletion is deferred"},
		{name: "the object's false wins over its namespace", stored: optOut, namespace: map[string]string{v1alpha1.DeferDeletionAnnotation: "true"}},
		{name: "an object that did not opt in is only refused", stored: cluster},
		{name: "a rule that defers defers an object that says nothing", stored: cluster, ruleDefers: true, wantRecord: true, wantMessage: "its deletion is deferred"},
		{name: "the namespace's false wins over the rule", stored: cluster, ruleDefers: true, namespace: map[string]string{v1alpha1.DeferDeletionAnnotation: "false"}},
		{name: "the object's false wins over the rule", stored: optOut, ruleDefers: true},
		{name: "a rule over a dependent type the workspace does not bind defers nothing", stored: cluster, ruleDefers: true, ruleUnbound: true},
		{name: "a ledger that cannot be written leaves the deletion refused", stored: optIn, ledgerErr: errors.New("forbidden"), wantMessage: "deferring its deletion failed, so it is only refused"},
		{name: "an opt-in the review claims but the stored object lacks counts for nothing", stored: cluster, review: optIn},
		{name: "a review whose object is not the stored one is not deferred", stored: optIn, storedUID: "another"},
		// A record on the object that the ledger does not hold (written
		// where the guard did not stand) is nobody's: the deletion is
		// deferred for the user who asks, not said to be mallory's.
		{name: "a record the ledger does not hold is replaced by the deletion's own", stored: forged, wantRecord: true, wantMessage: "its deletion is deferred (asked by alice at "},
		// The API server asks again on the stored object after a denial on
		// its cached copy, and the deletion may have been carried out in
		// between: the second denial says so rather than nothing.
		{name: "an object deleted before the denial is answered is not deferred, and the denial says so", stored: optIn, gone: true, wantMessage: "it has been deleted meanwhile"},
		{name: "the propagation policy is kept", stored: optIn, wantRecord: true, wantMessage: "deferred", wantPolicy: &orphan, edit: func(r *admissionv1.AdmissionRequest) {
			r.Options = runtime.RawExtension{Raw: mustJSON(metav1.DeleteOptions{PropagationPolicy: &orphan})}
		}},
		// The deprecated field says the same: a deletion carried out
		// without it would take the object's dependents with it.
		{name: "orphanDependents is kept as the orphan policy", stored: optIn, wantRecord: true, wantMessage: "deferred", wantPolicy: &orphan, edit: func(r *admissionv1.AdmissionRequest) {
			r.Options = runtime.RawExtension{Raw: mustJSON(metav1.DeleteOptions{OrphanDependents: ptr.To(true)})} //nolint:staticcheck // what older clients send
		}},
		{name: "orphanDependents false is kept as the background policy", stored: optIn, wantRecord: true, wantMessage: "deferred", wantPolicy: ptr.To(metav1.DeletePropagationBackground), edit: func(r *admissionv1.AdmissionRequest) {
			r.Options = runtime.RawExtension{Raw: mustJSON(metav1.DeleteOptions{OrphanDependents: ptr.To(false)})} //nolint:staticcheck // what older clients send
		}},
		{name: "a resourceVersion precondition cannot be deferred", stored: optIn, wantMessage: "not deferred: it names a resourceVersion precondition", edit: func(r *admissionv1.AdmissionRequest) {
			r.Options = runtime.RawExtension{Raw: mustJSON(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("7")}})}
		}},
		{name: "a dry run records nothing", stored: optIn, edit: func(r *admissionv1.AdmissionRequest) { r.DryRun = ptr.To(true) }},
		{name: "the webhook's own replay records nothing", stored: optIn, edit: func(r *admissionv1.AdmissionRequest) { r.UserInfo.Username = "webhook" }},
		{name: "a deletion allowed records nothing", stored: optIn, finder: &fakeFinder{}, wantAllowed: true},
		{name: "a record that fails leaves the deletion refused", stored: optIn, recordErr: errors.New("forbidden"), wantMessage: "deferring its deletion failed, so it is only refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeDeferralStore()
			store.recordErr = tt.recordErr
			if tt.ruleUnbound {
				store.unbound = map[string]bool{"c/r": true}
			}
			ledger := newFakeLedger()
			ledger.err = tt.ledgerErr
			uid := tt.storedUID
			if uid == "" {
				uid = "uid-vpc"
			}
			if !tt.gone {
				store.put(vpcGVR, metav1.ObjectMeta{Name: "vpc-1", Namespace: "default", UID: uid, Annotations: tt.stored})
			}
			store.namespaces["default"] = tt.namespace
			review := tt.review
			if review == nil {
				review = tt.stored
			}
			req := deleteRequest(vpcGVR, "vpc-1", review)
			req.UserInfo.Groups = []string{"team-a"}
			setUID(t, req, "uid-vpc")
			if tt.edit != nil {
				tt.edit(req)
			}
			finder := tt.finder
			if finder == nil {
				finder = blocked
			}
			heard := &deferralsHeard{}
			v := NewValidator(fakeProtections{vpcGVR: {{Rule: "c/r", Dependent: vmGVR, DependentKind: "VirtualMachine", DeferDeletion: tt.ruleDefers}}}, finder, admission.When(closed()), ValidatorOptions{
				Self:     selfNamed("webhook", nil),
				Deferral: store, Ledger: ledger, Deferrals: heard,
			}, logr.Discard())
			resp, _ := v.Decide(context.Background(), req)
			if resp.Allowed != tt.wantAllowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.wantAllowed, resp.Result)
			}
			if !tt.wantAllowed && !strings.Contains(resp.Result.Message, "still referenced") {
				t.Errorf("the denial %q no longer names its blockers", resp.Result.Message)
			}
			if tt.wantMessage != "" && !strings.Contains(resp.Result.Message, tt.wantMessage) {
				t.Errorf("message %q, want it to say %q", resp.Result.Message, tt.wantMessage)
			}
			if tt.wantMessage == "" && resp.Result != nil && strings.Contains(resp.Result.Message, "deferred") {
				t.Errorf("message %q speaks of deferral", resp.Result.Message)
			}
			o, _ := store.get(vpcGVR, "default", "vpc-1")
			value, recorded := o.Annotations[v1alpha1.DeletionDeferredAnnotation]
			if recorded != tt.wantRecord || (o.Labels[v1alpha1.DeletionDeferredLabel] == "true") != tt.wantRecord {
				t.Fatalf("recorded = %v (labels %v), want %v", recorded, o.Labels, tt.wantRecord)
			}
			if len(heard.heard) != map[bool]int{true: 1}[tt.wantRecord] {
				t.Errorf("Deferrals heard %v", heard.heard)
			}
			if held, _ := ledger.Holds(context.Background(), LedgerEntry{Cluster: "consumer-1", Resource: vpcGVR, Namespace: "default", Name: "vpc-1", Record: value}); held != tt.wantRecord {
				t.Errorf("the ledger holds the record: %v, want %v", held, tt.wantRecord)
			}
			// Nothing else: a deferral not recorded leaves no entry behind.
			if n, want := ledger.size(), map[bool]int{true: 1}[tt.wantRecord]; n != want {
				t.Errorf("the ledger holds %d entries, want %d", n, want)
			}
			if !tt.wantRecord {
				return
			}
			rec, err := v1alpha1.ParseDeferredDeletion(value)
			if err != nil {
				t.Fatal(err)
			}
			if rec.User != "alice" || len(rec.Groups) != 1 || rec.Groups[0] != "team-a" || rec.UID != "uid-vpc" || rec.At.IsZero() {
				t.Errorf("record %+v does not say who asked, when, for which object", rec)
			}
			if (rec.PropagationPolicy == nil) != (tt.wantPolicy == nil) || (tt.wantPolicy != nil && *rec.PropagationPolicy != *tt.wantPolicy) {
				t.Errorf("record %+v keeps the propagation policy %v, want %v", rec, ptr.Deref(rec.PropagationPolicy, "none"), ptr.Deref(tt.wantPolicy, "none"))
			}
			// A dry run (kubectl depctrl why) says so too, and changes
			// nothing.
			dry := deleteRequest(vpcGVR, "vpc-1", review)
			setUID(t, dry, "uid-vpc")
			dry.UserInfo.Username, dry.DryRun = "carol", ptr.To(true)
			resp, _ = v.Decide(context.Background(), dry)
			if resp.Allowed || !strings.Contains(resp.Result.Message, "deferred (asked by alice") {
				t.Errorf("a dry run of the deferred object: %+v", resp.Result)
			}
			// Asked again, the deletion says it is deferred, by whom, and
			// keeps the first record, also when the review leaves the
			// record out (a forged one would, to replace it).
			again := deleteRequest(vpcGVR, "vpc-1", review)
			setUID(t, again, "uid-vpc")
			again.UserInfo.Username = "bob"
			resp, _ = v.Decide(context.Background(), again)
			if resp.Allowed || !strings.Contains(resp.Result.Message, "deferred (asked by alice") {
				t.Errorf("asked again: %+v", resp.Result)
			}
			if o2, _ := store.get(vpcGVR, "default", "vpc-1"); o2.Annotations[v1alpha1.DeletionDeferredAnnotation] != value {
				t.Error("asking again replaced the first record")
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// setUID sets the UID of the object a review carries.
func setUID(t *testing.T, req *admissionv1.AdmissionRequest, uid types.UID) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(req.OldObject.Raw, &obj); err != nil {
		t.Fatal(err)
	}
	obj["metadata"].(map[string]any)["uid"] = string(uid)
	req.OldObject.Raw = mustJSON(obj)
}

// TestGuardDeferral: nobody but the webhook may write a deferred deletion
// or its label, by create or update, nor change either; anyone may remove
// them (cancelling) or leave them as they are.
func TestGuardDeferral(t *testing.T) {
	record := map[string]string{v1alpha1.DeletionDeferredAnnotation: `{"user":"alice"}`}
	other := map[string]string{v1alpha1.DeletionDeferredAnnotation: `{"user":"mallory"}`}
	label := map[string]string{v1alpha1.DeletionDeferredLabel: "true"}
	write := func(op admissionv1.Operation, user string, oldAnn, ann, oldLabels, labels map[string]string) *admissionv1.AdmissionRequest {
		object := func(a, l map[string]string) runtime.RawExtension {
			a = merged(a, v1alpha1.ClusterAnnotation, "consumer-1")
			return runtime.RawExtension{Raw: mustJSON(map[string]any{"metadata": map[string]any{"name": "v", "namespace": "default", "labels": l, "annotations": a}})}
		}
		r := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: op, Resource: metav1.GroupVersionResource(vpcGVR), Namespace: "default", Name: "v", Object: object(ann, labels)}
		r.UserInfo.Username = user
		if op == admissionv1.Update {
			r.OldObject = object(oldAnn, oldLabels)
		}
		return r
	}
	tests := []struct {
		name    string
		req     *admissionv1.AdmissionRequest
		allowed bool
	}{
		{"create with a record", write(admissionv1.Create, "alice", nil, record, nil, nil), false},
		{"create with the label", write(admissionv1.Create, "alice", nil, nil, nil, label), false},
		{"create without either", write(admissionv1.Create, "alice", nil, nil, nil, nil), true},
		{"update that adds a record", write(admissionv1.Update, "alice", nil, record, nil, nil), false},
		{"update that changes the record", write(admissionv1.Update, "mallory", record, other, label, label), false},
		{"update that adds the label", write(admissionv1.Update, "alice", record, record, nil, label), false},
		{"update that keeps both", write(admissionv1.Update, "alice", record, record, label, label), true},
		{"update that removes both (cancels)", write(admissionv1.Update, "alice", record, nil, label, nil), true},
		{"the webhook recording a deferral", write(admissionv1.Update, "webhook", nil, record, nil, label), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewValidator(fakeProtections{}, &fakeFinder{}, admission.When(closed()), ValidatorOptions{
				Self: selfNamed("webhook", nil),
			}, logr.Discard())
			resp, _ := v.Decide(context.Background(), tt.req)
			if resp.Allowed != tt.allowed {
				t.Fatalf("allowed = %v, want %v (%+v)", resp.Allowed, tt.allowed, resp.Result)
			}
			if !tt.allowed && (resp.Result.Code != 403 || !strings.Contains(resp.Result.Message, "only the dependency webhook may write the annotation "+v1alpha1.DeletionDeferredAnnotation)) {
				t.Errorf("refusal %d %q does not say why", resp.Result.Code, resp.Result.Message)
			}
		})
	}
}

// TestNotDeferrable: which delete options a later deletion can honour.
func TestNotDeferrable(t *testing.T) {
	bogus := metav1.DeletionPropagation("Sideways")
	fg := metav1.DeletePropagationForeground
	for _, tc := range []struct {
		name string
		o    *metav1.DeleteOptions
		want string
	}{
		{"no options", nil, ""},
		{"a propagation policy", &metav1.DeleteOptions{PropagationPolicy: &fg}, ""},
		{"the object's UID", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("u1"))}}, ""},
		{"another UID", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("u2"))}}, "another object"},
		{"a resourceVersion", &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}}, "resourceVersion"},
		{"an unknown policy", &metav1.DeleteOptions{PropagationPolicy: &bogus}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := notDeferrable(tc.o, "u1")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("notDeferrable = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWebhookNeverSkipsProtection: the webhook's own DELETE (a deferred
// deletion carried out) is decided as usual even when the object carries
// the skip-protection annotation, which anyone who may patch it can write;
// anyone else's skips as before.
func TestWebhookNeverSkipsProtection(t *testing.T) {
	blocked := &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "default", Name: "vm-1"}}}}
	skip := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1", v1alpha1.SkipProtectionAnnotation: "true"}
	for _, tt := range []struct {
		name string
		// selfErr: the webhook cannot read who it is (its
		// SelfSubjectReview fails, as on a replica just started).
		selfErr error
		user    string
		allowed bool
	}{
		{name: "the webhook's own deletion", user: "webhook"},
		{name: "anyone else's", user: "alice", allowed: true},
		{name: "the webhook's own, while it cannot tell who it is", selfErr: errors.New("connection refused"), user: "webhook"},
		{name: "anyone's, while the webhook cannot tell who it is", selfErr: errors.New("connection refused"), user: "alice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := NewValidator(fakeProtections{vpcGVR: {{Rule: "c/r", Dependent: vmGVR, DependentKind: "VirtualMachine"}}}, blocked, admission.When(closed()), ValidatorOptions{
				Self: selfNamed("webhook", tt.selfErr),
			}, logr.Discard())
			req := deleteRequest(vpcGVR, "vpc-1", skip)
			req.UserInfo.Username = tt.user
			if resp, _ := v.Decide(context.Background(), req); resp.Allowed != tt.allowed {
				t.Errorf("%s deleting with skip-protection: allowed %v, want %v (%+v)", tt.user, resp.Allowed, tt.allowed, resp.Result)
			}
		})
	}
}
