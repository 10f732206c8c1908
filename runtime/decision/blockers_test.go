package decision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
)

// TestDenialCauses: a denial names each dependent it names in its message
// also as a cause a tool can read (v1alpha1.DependentOf): its workspace,
// type, namespace and name, and whether it is stored or being written.
func TestDenialCauses(t *testing.T) {
	now := time.Now()
	intent := func(name, generateName string) map[string]string {
		v, err := index.Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "default", Name: name, GenerateName: generateName, At: metav1.NewTime(now)})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{index.Key("t1"): v}
	}
	ref := func(namespace, name, generateName string) v1alpha1.DependentRef {
		return v1alpha1.DependentRef{Workspace: "consumer-1", Group: vmGVR.Group, Version: vmGVR.Version, Resource: vmGVR.Resource,
			Kind: "VirtualMachine", Namespace: namespace, Name: name, GenerateName: generateName}
	}
	type cause struct {
		ref     v1alpha1.DependentRef
		pending bool
	}
	tests := []struct {
		name    string
		intents map[string]string
		finder  *fakeFinder
		want    []cause
	}{
		{
			name:   "stored dependents",
			finder: &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: {{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "default", Name: "vm-1"}, {Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "default", Name: "vm-2"}}}},
			want:   []cause{{ref: ref("default", "vm-1", "")}, {ref: ref("default", "vm-2", "")}},
		},
		{
			name:    "a dependent being written",
			intents: intent("vm-slow", ""),
			finder:  &fakeFinder{},
			want:    []cause{{ref: ref("default", "vm-slow", ""), pending: true}},
		},
		{
			name:    "a dependent being created with a generated name",
			intents: intent("", "vm-"),
			finder:  &fakeFinder{},
			want:    []cause{{ref: ref("default", "", "vm-"), pending: true}},
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annotations := inConsumer(tt.intents)
			protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine", Since: now.Add(-time.Hour)}}}
			v := NewValidator(protections, tt.finder, admission.When(ready), ValidatorOptions{}, logr.Discard())
			resp, _ := v.Decide(context.Background(), deleteRequest(vpcGVR, "vpc", annotations))
			if resp.Allowed || resp.Result.Details == nil {
				t.Fatalf("got allowed=%v %+v, want a denial with details", resp.Allowed, resp.Result)
			}
			d := resp.Result.Details
			if d.Name != "vpc" || d.Group != vpcGVR.Group || d.Kind != vpcGVR.Resource {
				t.Errorf("details name the object %s %s/%s, want %s", d.Name, d.Group, d.Kind, vpcGVR.GroupResource())
			}
			var got []cause
			for _, c := range d.Causes {
				r, pending, ok, err := v1alpha1.DependentOf(c)
				if !ok || err != nil {
					t.Fatalf("cause %+v: ok %v, %v", c, ok, err)
				}
				got = append(got, cause{ref: r, pending: pending})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("causes %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("cause %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestDryRunListsEveryBlocker: a deletion's denial names the first
// MaxBlockersReported dependents and stops reading once it has a blocker,
// while a dry run, which asks what blocks, lists them all as causes (up to
// MaxBlockersListed), stored ones and writes on their way, under the same
// message; a MoreDependents cause says how many the causes leave out. Both
// refuse alike: a lookup that fails after a blocker was found still refuses
// the dry run for the blocker.
func TestDryRunListsEveryBlocker(t *testing.T) {
	now := time.Now()
	var stored []Blocker
	for i := range 25 {
		stored = append(stored, Blocker{Dependent: vmGVR, Kind: "VirtualMachine", Namespace: "default", Name: fmt.Sprintf("vm-%02d", i)})
	}
	intent := func(name string, at time.Time) string {
		v, err := index.Encode(v1alpha1.Intent{Resource: vmGVR.GroupResource().String(), Version: "v1", Namespace: "default", Name: name, At: metav1.NewTime(at)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	recorded := map[string]string{index.Key("t1"): intent("vm-07", now.Add(-time.Hour))}
	slow := map[string]string{index.Key("t2"): intent("vm-slow", now)}
	const names = "VirtualMachine/vm-00, VirtualMachine/vm-01, VirtualMachine/vm-02, VirtualMachine/vm-03, VirtualMachine/vm-04, VirtualMachine/vm-05, VirtualMachine/vm-06, VirtualMachine/vm-07, VirtualMachine/vm-08, VirtualMachine/vm-09"
	const message = "cannot delete vpcs/vpc: still referenced by " + names + " and "
	tests := []struct {
		name      string
		dryRun    bool
		intents   map[string]string
		listed    int
		finderErr error
		// wantCauses counts the dependents named as causes; wantMore is
		// the MoreDependents cause's count (-1: unknown), or nil for none.
		wantCauses int
		wantMore   *int
		wantCode   int32
		// wantMessage counts the dependents it does not name as far as
		// the lookup read: "and more" when it stopped.
		wantMessage string
	}{
		{name: "a deletion names the first ten", wantCauses: 10, wantMore: ptr.To(-1), wantMessage: message + "more"},
		{name: "a dry run lists them all", dryRun: true, wantCauses: 25, wantMessage: message + "15 more"},
		{name: "a dry run reads past a recorded blocker", dryRun: true, intents: recorded, wantCauses: 25, wantMessage: message + "15 more"},
		{name: "a deletion stops at a recorded blocker", intents: recorded, wantCauses: 1, wantMessage: "cannot delete vpcs/vpc: still referenced by VirtualMachine/vm-07"},
		{name: "a dry run lists at most MaxBlockersListed", dryRun: true, listed: 20, wantCauses: 20, wantMore: ptr.To(-1), wantMessage: message + "more"},
		{name: "a dry run lists writes on their way beside stored dependents", dryRun: true, intents: slow, wantCauses: 26, wantMessage: message + "16 more"},
		{
			name: "a dry run whose lookup fails after a recorded blocker still refuses for it", dryRun: true, intents: recorded, finderErr: errors.New("list refused"),
			wantCauses: 1, wantMore: ptr.To(-1), wantMessage: "cannot delete vpcs/vpc: still referenced by VirtualMachine/vm-07 and more",
		},
	}
	ready := make(chan struct{})
	close(ready)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annotations := map[string]string{v1alpha1.ClusterAnnotation: "consumer-1"}
			maps.Copy(annotations, tt.intents)
			finder := &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{vmGVR: stored}, dependents: map[string]string{"default/vm-07": "vpc"}}
			if tt.finderErr != nil {
				finder.err = map[schema.GroupVersionResource]error{vmGVR: tt.finderErr}
			}
			protections := fakeProtections{vpcGVR: {{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine", Since: now.Add(-2 * time.Hour)}}}
			v := NewValidator(protections, finder, admission.When(ready), ValidatorOptions{MaxBlockersListed: tt.listed}, logr.Discard())
			req := deleteRequest(vpcGVR, "vpc", annotations)
			req.DryRun = &tt.dryRun
			resp, _ := v.Decide(context.Background(), req)
			if resp.Allowed || resp.Result.Details == nil || resp.Result.Code != 403 {
				t.Fatalf("got allowed=%v %+v, want a denial (403) with details", resp.Allowed, resp.Result)
			}
			dependents := 0
			var more *int
			for _, c := range resp.Result.Details.Causes {
				if _, _, ok, _ := v1alpha1.DependentOf(c); ok {
					dependents++
				}
				if n, ok := v1alpha1.MoreOf(c); ok {
					more = &n
				}
			}
			if dependents != tt.wantCauses {
				t.Errorf("%d dependents named as causes, want %d", dependents, tt.wantCauses)
			}
			if (more == nil) != (tt.wantMore == nil) || (more != nil && *more != *tt.wantMore) {
				t.Errorf("a MoreDependents cause of %v, want %v", deref(more), deref(tt.wantMore))
			}
			if resp.Result.Message != tt.wantMessage {
				t.Errorf("message %q, want %q", resp.Result.Message, tt.wantMessage)
			}
		})
	}
}

func deref(n *int) string {
	if n == nil {
		return "none"
	}
	return strconv.Itoa(*n)
}

// TestUnion: the blockers of two lookups merge each once, up to the limit,
// with the count of those left out: a stored dependent named by the intents
// that the lookup of the stored ones left out was counted there, and is
// not counted twice once named; a write on its way was not.
func TestUnion(t *testing.T) {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	vm := func(name string, pending bool) Blocker {
		return Blocker{Dependent: vms, Kind: "VirtualMachine", Namespace: "apps", Name: name, Pending: pending}
	}
	a, b, c, d := vm("a", false), vm("b", false), vm("c", false), vm("d", false)
	w := vm("w", true)
	tests := []struct {
		name     string
		named    []Blocker
		more     int
		extra    []Blocker
		counted  bool
		limit    int
		want     []Blocker
		wantMore int
	}{
		{name: "nothing left out, one more stored", named: []Blocker{a}, extra: []Blocker{b}, counted: true, limit: 10, want: []Blocker{a, b}},
		{name: "already named", named: []Blocker{a, b}, extra: []Blocker{b}, counted: true, limit: 10, want: []Blocker{a, b}},
		{name: "a stored one the lookup counted, named now", named: []Blocker{a, b}, more: 5, extra: []Blocker{c}, counted: true, limit: 10, want: []Blocker{a, b, c}, wantMore: 4},
		{name: "a stored one the lookup counted, past the limit", named: []Blocker{a, b}, more: 5, extra: []Blocker{c}, counted: true, limit: 2, want: []Blocker{a, b}, wantMore: 5},
		{name: "writes on their way were not counted", named: []Blocker{a, b}, more: 5, extra: []Blocker{w}, limit: 10, want: []Blocker{a, b, w}, wantMore: 5},
		{name: "writes on their way past the limit", named: []Blocker{a, b}, more: 5, extra: []Blocker{w}, limit: 2, want: []Blocker{a, b}, wantMore: 6},
		{name: "an unknown number left out stays unknown", named: []Blocker{a}, more: -1, extra: []Blocker{c, d}, counted: true, limit: 2, want: []Blocker{a, c}, wantMore: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more := union(tt.named, tt.more, tt.extra, tt.counted, tt.limit)
			if !reflect.DeepEqual(got, tt.want) || more != tt.wantMore {
				t.Errorf("union = %v, %d more; want %v, %d more", got, more, tt.want, tt.wantMore)
			}
		})
	}
}
