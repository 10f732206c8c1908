package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// fakeTargets keeps referenced objects by "namespace/name" (absent ones do
// not exist) and records what it was asked.
type fakeTargets struct {
	mu      sync.Mutex
	objects map[string]*TargetState
	err     error
	// asked lists "verb namespace/name" for every call.
	asked []string
	// pruned receives the keys of every Annotate that removes keys.
	pruned chan []string
}

func (f *fakeTargets) Target(_ context.Context, _, namespace string, _ schema.GroupVersionResource, name string) (TargetState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, "get "+namespace+"/"+name)
	if o := f.objects[namespace+"/"+name]; o != nil {
		return *o, f.err
	}
	return TargetState{}, f.err
}

func (f *fakeTargets) Annotate(_ context.Context, _, namespace string, _ schema.GroupVersionResource, name string, set map[string]*string) (TargetState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.objects[namespace+"/"+name]
	var removed []string
	for k, v := range set {
		if v == nil {
			removed = append(removed, k)
		}
	}
	if len(removed) > 0 {
		sort.Strings(removed)
		if f.pruned != nil {
			f.pruned <- removed
		}
	} else {
		f.asked = append(f.asked, "annotate "+namespace+"/"+name)
	}
	if f.err != nil || o == nil {
		return TargetState{}, f.err
	}
	if o.Annotations == nil {
		o.Annotations = map[string]string{}
	}
	for k, v := range set {
		if v == nil {
			delete(o.Annotations, k)
		} else {
			o.Annotations[k] = *v
		}
	}
	state := *o
	state.Annotations = maps.Clone(o.Annotations)
	return state, nil
}

func (f *fakeTargets) Withdraw(_ context.Context, _, namespace string, _ schema.GroupVersionResource, name, key, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, "withdraw "+namespace+"/"+name)
	o := f.objects[namespace+"/"+name]
	if o == nil || o.Annotations[key] != value {
		return errors.New("test failed")
	}
	delete(o.Annotations, key)
	return nil
}

// targetsFixture has vpc-a alive and vpc-b being deleted in namespace apps.
func targetsFixture() *fakeTargets {
	return &fakeTargets{objects: map[string]*TargetState{
		"apps/vpc-a": {Found: true},
		"apps/vpc-b": {Found: true, Deleting: true},
	}}
}

var vmIndexSchema = registry.Schema{Stamp: "s1", RuleUIDs: []string{"uid-vm-rule"}, References: []registry.Reference{{
	Target: vpcGVR.GroupResource(), Version: "v1",
	Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name"), fieldpath.MustParse(".spec.networks[*].vpc")},
}}}

// vmReferencing renders a VM in apps that references vpcs.
func vmReferencing(extraMeta string, vpcs ...string) string {
	nets := make([]string, len(vpcs))
	for i, v := range vpcs {
		nets[i] = `{"vpc":"` + v + `"}`
	}
	return `{"metadata":{"name":"vm","namespace":"apps","annotations":{"kcp.io/cluster":"c1"}` + extraMeta + `},"spec":{"networks":[` + strings.Join(nets, ",") + `]}}`
}

func TestRecordIntents(t *testing.T) {
	vm := vmReferencing
	tests := []struct {
		name        string
		op          admissionv1.Operation
		dryRun      bool
		old, object string
		err         error
		wantAsked   []string
		// wantIntents are the objects that end up with an intent naming
		// the VM.
		wantIntents []string
		wantCode    int32
		wantMessage string
		wantOutcome string
	}{
		{
			name: "create referencing an object being deleted: refused", op: admissionv1.Create,
			object:    vm("", "vpc-a", "vpc-b"),
			wantAsked: []string{"annotate apps/vpc-a", "annotate apps/vpc-b"}, wantCode: 403,
			wantMessage: "virtualmachines/vm cannot reference vpcs/vpc-b: vpcs/vpc-b is being deleted", wantOutcome: indexRefused,
		},
		{
			name: "create referencing live or absent objects: intents on the live ones", op: admissionv1.Create,
			object: vm("", "vpc-a", "vpc-a", "vpc-gone"), wantAsked: []string{"annotate apps/vpc-a", "annotate apps/vpc-gone"},
			wantIntents: []string{"apps/vpc-a"}, wantOutcome: indexLabelled,
		},
		{
			name: "update keeping a reference to an object being deleted: allowed, not even asked", op: admissionv1.Update,
			old: vm("", "vpc-b"), object: vm(`,"labels":{"team":"x"}`, "vpc-b"),
			wantOutcome: indexLabelled,
		},
		{
			name: "update adding a reference: an intent for the new one only", op: admissionv1.Update,
			old: vm(`,"resourceVersion":"41"`, "vpc-b"), object: vm(`,"resourceVersion":"41"`, "vpc-b", "vpc-a"),
			wantAsked: []string{"annotate apps/vpc-a"}, wantIntents: []string{"apps/vpc-a"}, wantOutcome: indexLabelled,
		},
		{
			name: "update adding a reference against a revision other than the stored one: a conflict, nothing recorded", op: admissionv1.Update,
			old: vm(`,"resourceVersion":"42"`, "vpc-b"), object: vm(`,"resourceVersion":"41"`, "vpc-b", "vpc-a"),
			wantCode: 409, wantMessage: "the object has been modified", wantOutcome: indexConflict,
		},
		{
			name: "unconditional update adding a reference: recorded", op: admissionv1.Update,
			old: vm(`,"resourceVersion":"42"`, "vpc-b"), object: vm("", "vpc-b", "vpc-a"),
			wantAsked: []string{"annotate apps/vpc-a"}, wantIntents: []string{"apps/vpc-a"}, wantOutcome: indexLabelled,
		},
		{
			name: "update adding a reference to an object being deleted: refused", op: admissionv1.Update,
			old: vm("", "vpc-a"), object: vm("", "vpc-a", "vpc-b"),
			wantAsked: []string{"annotate apps/vpc-b"}, wantCode: 403, wantMessage: "cannot reference vpcs/vpc-b", wantOutcome: indexRefused,
		},
		{
			name: "a dependent being deleted may say anything", op: admissionv1.Update,
			old: vm(""), object: vm(`,"deletionTimestamp":"2026-01-01T00:00:00Z"`, "vpc-b"),
			wantOutcome: indexLabelled,
		},
		{
			name: "a failed write refuses and says why", op: admissionv1.Create,
			object: vm("", "vpc-a"), err: errors.New("forbidden: boom"),
			wantAsked: []string{"annotate apps/vpc-a"}, wantCode: 503,
			wantMessage: "cannot record on vpcs/vpc-a that virtualmachines/vm references it, so protection refuses the write: forbidden: boom", wantOutcome: admission.OutcomeError,
		},
		{
			name: "no references: nothing to ask", op: admissionv1.Create,
			object: vm(""), err: errors.New("must not be asked"),
			wantOutcome: indexLabelled,
		},
		{
			name: "no cluster annotation with a reference to check: bad request", op: admissionv1.Create,
			object:   `{"metadata":{"name":"vm","namespace":"apps"},"spec":{"vpcRef":{"name":"vpc-a"}}}`,
			wantCode: 400, wantMessage: "has no kcp.io/cluster annotation", wantOutcome: admission.OutcomeBadRequest,
		},
		{
			name: "dry run: reads, records nothing", op: admissionv1.Create, dryRun: true,
			object: vm("", "vpc-a"), wantAsked: []string{"get apps/vpc-a"}, wantOutcome: indexLabelled,
		},
		{
			name: "dry run against an object being deleted: refused", op: admissionv1.Create, dryRun: true,
			object: vm("", "vpc-b"), wantAsked: []string{"get apps/vpc-b"}, wantCode: 403, wantOutcome: indexRefused,
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := targetsFixture()
			targets.err = tt.err
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Targets = targets
			req := &admissionv1.AdmissionRequest{UID: "u", Operation: tt.op, DryRun: &tt.dryRun, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps", Object: runtime.RawExtension{Raw: []byte(tt.object)}}
			if tt.old != "" {
				req.OldObject = runtime.RawExtension{Raw: []byte(tt.old)}
			}
			resp, outcome := ix.Decide(context.Background(), req)
			if outcome != tt.wantOutcome {
				t.Fatalf("outcome %s, want %s (%+v)", outcome, tt.wantOutcome, resp.Result)
			}
			if !slices.Equal(targets.asked, tt.wantAsked) {
				t.Errorf("asked %v, want %v", targets.asked, tt.wantAsked)
			}
			var withIntent []string
			for key, o := range targets.objects {
				fresh, _ := On(o.Annotations, time.Now(), DefaultLifetime)
				for _, in := range fresh {
					if in.Names("virtualmachines.compute.test.io", "apps", "vm") {
						withIntent = append(withIntent, key)
						if !slices.Equal(in.Rules, vmIndexSchema.RuleUIDs) {
							t.Errorf("the intent on %s names the rules %v, want those over the type, %v", key, in.Rules, vmIndexSchema.RuleUIDs)
						}
					}
				}
			}
			sort.Strings(withIntent)
			if !slices.Equal(withIntent, tt.wantIntents) {
				t.Errorf("intents on %v, want %v", withIntent, tt.wantIntents)
			}
			if tt.wantCode == 0 {
				if !resp.Allowed {
					t.Fatalf("refused: %+v", resp.Result)
				}
				if targets := patchedAnnotations(t, resp)[v1alpha1.IntentTargetsAnnotation]; len(tt.wantIntents) > 0 && !strings.Contains(targets, `"name":"vpc-a"`) {
					t.Fatalf("the dependent does not list vpc-a among its intents' targets: %q", targets)
				}
				label := patchedLabels(t, resp)[v1alpha1.IntentLabel]
				if (label != "") != (len(tt.wantIntents) > 0) {
					t.Fatalf("intent label %q, want one exactly when intents were recorded", label)
				}
				if token, _, ok := ParseLabel(label); ok && targets.objects[tt.wantIntents[0]].Annotations[Key(token)] == "" {
					t.Fatalf("the label's token %s names no intent on %s", token, tt.wantIntents[0])
				}
				return
			}
			if resp.Allowed || resp.Result.Code != tt.wantCode || !strings.Contains(resp.Result.Message, tt.wantMessage) {
				t.Fatalf("got allowed=%v %+v, want %d containing %q", resp.Allowed, resp.Result, tt.wantCode, tt.wantMessage)
			}
		})
	}
}

// patchedLabels returns the labels a response's patch sets, nil without one.
func patchedLabels(t *testing.T, resp *admissionv1.AdmissionResponse) map[string]string {
	t.Helper()
	return patched(t, resp, "/metadata/labels")
}

// patchedAnnotations returns the annotations a response's patch sets.
func patchedAnnotations(t *testing.T, resp *admissionv1.AdmissionResponse) map[string]string {
	t.Helper()
	return patched(t, resp, "/metadata/annotations")
}

func patched(t *testing.T, resp *admissionv1.AdmissionResponse, path string) map[string]string {
	t.Helper()
	if len(resp.Patch) == 0 {
		return nil
	}
	var ops []struct {
		Path  string            `json:"path"`
		Value map[string]string `json:"value"`
	}
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatalf("decoding the patch: %v", err)
	}
	for _, op := range ops {
		if op.Path == path {
			return op.Value
		}
	}
	return nil
}

// TestIntentsPruned: recording an intent removes the expired ones it finds
// on the object, and only those.
func TestIntentsPruned(t *testing.T) {
	now := time.Now()
	old, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "apps", Name: "vm-old", At: metav1.NewTime(now.Add(-2 * DefaultLifetime))})
	recent, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "apps", Name: "vm-recent", At: metav1.NewTime(now.Add(-time.Second))})
	targets := targetsFixture()
	targets.pruned = make(chan []string, 1)
	targets.objects["apps/vpc-a"].Annotations = map[string]string{Key("old"): old, Key("recent"): recent, Key("garbage"): "{", "team": "x"}
	ready := make(chan struct{})
	close(ready)
	ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
	ix.Targets = targets
	resp, _ := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps",
		Object: runtime.RawExtension{Raw: []byte(vmReferencing("", "vpc-a"))}})
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	select {
	case got := <-targets.pruned:
		if want := []string{Key("garbage"), Key("old")}; !slices.Equal(got, want) {
			t.Fatalf("pruned %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("expired intents were not pruned")
	}
	targets.mu.Lock()
	defer targets.mu.Unlock()
	if a := targets.objects["apps/vpc-a"].Annotations; a[Key("recent")] == "" || a["team"] != "x" {
		t.Fatalf("pruning removed more than the expired intents: %v", a)
	}
}

// TestWithdrawIntents: deleting a dependent withdraws the intents its last
// reference-making write recorded, wherever the rules say it references
// now, and nothing else.
func TestWithdrawIntents(t *testing.T) {
	now := time.Now()
	encoded := func(name string, at time.Time) string {
		v, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "apps", Name: name, At: metav1.NewTime(at)})
		return v
	}
	tests := []struct {
		name  string
		label string
		// annotations on vpc-a before the delete.
		annotations map[string]string
		dryRun      bool
		wantLeft    []string
		wantAsked   []string
	}{
		{
			name: "its own fresh intent is withdrawn", label: LabelValue("t1", now),
			annotations: map[string]string{Key("t1"): encoded("vm", now), Key("t2"): encoded("vm-other", now)},
			wantLeft:    []string{Key("t2")}, wantAsked: []string{"get apps/vpc-a", "withdraw apps/vpc-a"},
		},
		{
			name: "a token that names another dependent's intent withdraws nothing", label: LabelValue("t2", now),
			annotations: map[string]string{Key("t2"): encoded("vm-other", now)},
			wantLeft:    []string{Key("t2")}, wantAsked: []string{"get apps/vpc-a"},
		},
		{
			name: "an expired label: nothing to do", label: LabelValue("t1", now.Add(-2*DefaultLifetime)),
			annotations: map[string]string{Key("t1"): encoded("vm", now)},
			wantLeft:    []string{Key("t1")},
		},
		{
			name: "a dry run withdraws nothing", label: LabelValue("t1", now), dryRun: true,
			annotations: map[string]string{Key("t1"): encoded("vm", now)},
			wantLeft:    []string{Key("t1")},
		},
		{
			name: "no label: nothing to do", annotations: map[string]string{Key("t1"): encoded("vm", now)},
			wantLeft: []string{Key("t1")},
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := targetsFixture()
			targets.objects["apps/vpc-a"].Annotations = tt.annotations
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Targets = targets
			// The VM no longer references vpc-a under the rules (its path
			// changed, say): what it recorded intents on is in its
			// annotation.
			meta := map[string]interface{}{"name": "vm", "namespace": "apps", "annotations": map[string]string{
				"kcp.io/cluster":                 "c1",
				v1alpha1.IntentTargetsAnnotation: `[{"group":"network.test.io","version":"v1","resource":"vpcs","name":"vpc-a"}]`,
			}}
			if tt.label != "" {
				meta["labels"] = map[string]string{v1alpha1.IntentLabel: tt.label}
			}
			old, _ := json.Marshal(map[string]interface{}{"metadata": meta, "spec": map[string]interface{}{}})
			resp, outcome := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Delete, DryRun: &tt.dryRun,
				Resource: metav1.GroupVersionResource(vmGVR), OldObject: runtime.RawExtension{Raw: old}})
			if !resp.Allowed || outcome != indexUnchanged {
				t.Fatalf("a delete must always be let through unchanged: %s %+v", outcome, resp.Result)
			}
			left := slices.Sorted(maps.Keys(targets.objects["apps/vpc-a"].Annotations))
			if !slices.Equal(left, tt.wantLeft) {
				t.Errorf("left %v, want %v", left, tt.wantLeft)
			}
			if !slices.Equal(targets.asked, tt.wantAsked) {
				t.Errorf("asked %v, want %v", targets.asked, tt.wantAsked)
			}
		})
	}
}

// fakeDependents answers Referencing from the stored dependents, by
// namespace/name; one not in it is not stored.
type fakeDependents map[string]Dependent

func (f fakeDependents) Referencing(_ context.Context, _ string, _ registry.Protection, namespace, dependent, _ string) (Dependent, error) {
	return f[namespace+"/"+dependent], nil
}

func (f fakeDependents) StoredWith(_ context.Context, _ string, _ registry.Protection, namespace string, values []string, _ string) (map[string]Stored, error) {
	out := map[string]Stored{}
	for key, d := range f {
		name, ok := strings.CutPrefix(key, namespace+"/")
		if !ok || !d.Found {
			continue
		}
		for _, v := range values {
			if TokenOf(v) == d.Token {
				out[v] = Stored{Name: name, References: d.References}
			}
		}
	}
	return out, nil
}

// TestStoredIntentsPruned: an object that carries more than pruneThreshold
// fresh intents sheds those whose writes are stored and left their
// dependents referencing it, however young, but not those of dependents
// not stored, no longer referencing, or not (yet) carrying the write's
// label, nor one whose write's label another dependent carries.
func TestStoredIntentsPruned(t *testing.T) {
	now := time.Now()
	annotations := map[string]string{}
	stored := fakeDependents{}
	var want []string
	// Each intent's token is its dependent's name.
	add := func(name string, at time.Time) string {
		v, _ := Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "apps", Name: name, At: metav1.NewTime(at)})
		annotations[Key(name)] = v
		return Key(name)
	}
	for i := range pruneThreshold {
		name := fmt.Sprintf("vm-%03d", i)
		key := add(name, now.Add(-10*time.Second))
		switch i % 4 {
		case 0:
			stored["apps/"+name] = Dependent{Found: true, Token: name, References: true}
			want = append(want, key)
		case 1:
			// stored, referencing something else
			stored["apps/"+name] = Dependent{Found: true, Token: name}
		case 2:
			// another write's copy, referencing the object: this write
			// may still be stored
			stored["apps/"+name] = Dependent{Found: true, Token: "other", References: true}
		}
	}
	// However young, an intent whose write is stored and left its
	// dependent referencing the object is shed.
	want = append(want, add("vm-young", now))
	stored["apps/vm-young"] = Dependent{Found: true, Token: "vm-young", References: true}
	// Another dependent carrying the label of the write that recorded
	// vm-copied's intent: not the dependent the intent names.
	add("vm-copied", now.Add(-10*time.Second))
	stored["apps/vm-other"] = Dependent{Found: true, Token: "vm-copied", References: true}
	targets := targetsFixture()
	targets.pruned = make(chan []string, 1)
	targets.objects["apps/vpc-a"].Annotations = annotations
	ready := make(chan struct{})
	close(ready)
	ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
	ix.Targets, ix.Dependents = targets, stored
	resp, _ := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps",
		Object: runtime.RawExtension{Raw: []byte(vmReferencing("", "vpc-a"))}})
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	sort.Strings(want)
	select {
	case got := <-targets.pruned:
		if !slices.Equal(got, want) {
			t.Fatalf("pruned %d intents %v, want the %d held ones (over, stored and referencing) %v", len(got), got, len(want), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no intents were pruned")
	}
}

// blockingDependents counts reads and holds each until release is closed.
type blockingDependents struct {
	reads   atomic.Int64
	release chan struct{}
}

func (b *blockingDependents) Referencing(ctx context.Context, _ string, _ registry.Protection, _, _, _ string) (Dependent, error) {
	b.reads.Add(1)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return Dependent{}, nil
}

func (b *blockingDependents) StoredWith(ctx context.Context, _ string, _ registry.Protection, _ string, _ []string, _ string) (map[string]Stored, error) {
	_, err := b.Referencing(ctx, "", registry.Protection{}, "", "", "")
	return nil, err
}

// TestOnePrunePerObject: on an object that carries more fresh intents than
// pruneThreshold, writes that reference it while a prune of it runs start
// no other: the prune reads every dependent its intents name, and one per
// write would multiply those reads by the writes.
func TestOnePrunePerObject(t *testing.T) {
	now := time.Now()
	annotations := map[string]string{}
	for i := range pruneThreshold + 1 {
		v, _ := Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "apps", Name: fmt.Sprintf("vm-%03d", i), At: metav1.NewTime(now.Add(-10 * time.Second))})
		annotations[Key(fmt.Sprintf("t%03d", i))] = v
	}
	targets := targetsFixture()
	targets.objects["apps/vpc-a"].Annotations = annotations
	ready := make(chan struct{})
	close(ready)
	ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
	dependents := &blockingDependents{release: make(chan struct{})}
	ix.Targets, ix.Dependents = targets, dependents
	for range 8 {
		resp, _ := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps",
			Object: runtime.RawExtension{Raw: []byte(vmReferencing("", "vpc-a"))}})
		if !resp.Allowed {
			t.Fatalf("refused: %+v", resp.Result)
		}
	}
	check.Eventually(context.Background(), t, 5*time.Second, "the first prune to read a dependent", func() error {
		if dependents.reads.Load() == 0 {
			return fmt.Errorf("no read yet")
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond)
	if got := dependents.reads.Load(); got != 1 {
		t.Fatalf("%d dependents read while the first read of the first prune is held, want 1: one prune per object at a time", got)
	}
	close(dependents.release)
}

// TestPrunedIntentsRideTheNextWrite: behind a GroupCommit, what a prune
// removes waits for the next write that references the object and leaves
// with its patch, instead of a patch of its own between two writes.
func TestPrunedIntentsRideTheNextWrite(t *testing.T) {
	now := time.Now()
	old, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Namespace: "apps", Name: "vm-old", At: metav1.NewTime(now.Add(-2 * DefaultLifetime))})
	targets := targetsFixture()
	targets.pruned = make(chan []string, 1)
	targets.objects["apps/vpc-a"].Annotations = map[string]string{Key("old"): old}
	ready := make(chan struct{})
	close(ready)
	ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
	g := NewGroupCommit(targets, time.Second)
	ix.Targets = g
	write := func() {
		t.Helper()
		resp, _ := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps",
			Object: runtime.RawExtension{Raw: []byte(vmReferencing("", "vpc-a"))}})
		if !resp.Allowed {
			t.Fatalf("refused: %+v", resp.Result)
		}
	}
	write()
	check.Eventually(context.Background(), t, 10*time.Second, "the prune to hand its removal over", func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.riderKeys == 0 {
			return errors.New("no riders yet")
		}
		return nil
	})
	select {
	case got := <-targets.pruned:
		t.Fatalf("a patch of its own removed %v", got)
	default:
	}
	write()
	select {
	case got := <-targets.pruned:
		if want := []string{Key("old")}; !slices.Equal(got, want) {
			t.Fatalf("the next write's patch removed %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next write's patch removed nothing")
	}
}

// TestIntentsNameWhatIsStored: the intent a write records names the object
// the API server stores, whatever name it has, so that every reader of
// intents counts it (On, and through it a deletion's pendingBlockers and the
// settler): an intent no reader can use is no intent, and a write recorded
// with one could be stored after its target's deletion. Names are what kcp
// accepts: a DNS-1123 subdomain, or any path segment for the types of a
// schema with nameValidation PathSegmentName.
func TestIntentsNameWhatIsStored(t *testing.T) {
	long := strings.Repeat("a", 253) // the longest generateName the API server accepts
	for _, tc := range []struct {
		name string
		// meta is the VM's name or generateName, as JSON members.
		meta string
		// vpc is what the VM references; the target exists.
		vpc string
		// stored is the name the API server stores the VM under.
		stored string
		// refused, when set, is a phrase of the refusal.
		refused string
	}{
		{name: "a long generateName names the prefix the generator keeps", meta: `"generateName":"` + long + `"`, vpc: "vpc-a", stored: long[:58] + "b2z4k"},
		{name: "a path-segment name", meta: `"name":"VM_1"`, vpc: "vpc-a", stored: "VM_1"},
		{name: "a reference to a path-segment name", meta: `"name":"vm"`, vpc: "VPC_1", stored: "vm"},
		{name: "no name at all is refused, not recorded unreadable", meta: `"generateName":""`, vpc: "vpc-a", refused: "no name to record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets := &fakeTargets{objects: map[string]*TargetState{"apps/" + tc.vpc: {Found: true}}}
			ready := make(chan struct{})
			close(ready)
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Targets = targets
			obj := `{"metadata":{` + tc.meta + `,"namespace":"apps","annotations":{"kcp.io/cluster":"c1"}},"spec":{"vpcRef":{"name":"` + tc.vpc + `"}}}`
			dry := false
			resp, outcome := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, DryRun: &dry,
				Resource: metav1.GroupVersionResource(vmGVR), Namespace: "apps", Object: runtime.RawExtension{Raw: []byte(obj)}})
			if tc.refused != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.refused) {
					t.Fatalf("allowed %v (%s, %+v), want refused with %q", resp.Allowed, outcome, resp.Result, tc.refused)
				}
				if n := len(targets.objects["apps/"+tc.vpc].Annotations); n != 0 {
					t.Errorf("%d intents recorded on the target, want none", n)
				}
				return
			}
			if !resp.Allowed {
				t.Fatalf("refused (%s): %+v", outcome, resp.Result)
			}
			fresh, expired := On(targets.objects["apps/"+tc.vpc].Annotations, ix.now(), DefaultLifetime)
			if len(fresh) != 1 || len(expired) != 0 {
				t.Fatalf("intents on %s: %d fresh, expired %v; want the write's, fresh", tc.vpc, len(fresh), expired)
			}
			if !fresh[0].Names(vmGVR.GroupResource().String(), "apps", tc.stored) {
				t.Errorf("the intent %+v does not name %s, the VM stored", fresh[0].Intent, tc.stored)
			}
		})
	}
}
