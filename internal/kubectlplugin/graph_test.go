package kubectlplugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var (
	vpcType  = apiType{resource: schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}, kind: "VPC", namespaced: true}
	vmType   = apiType{resource: schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}, kind: "VirtualMachine", namespaced: true}
	zoneType = apiType{resource: schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "zones"}, kind: "Zone"}
)

func object(t apiType, namespace, name string) Object {
	return Object{Group: t.resource.Group, Version: t.resource.Version, Resource: t.resource.Resource, Kind: t.kind, Namespace: namespace, Name: name}
}

func blocker(o Object, pending bool) blockers.Blocker {
	return blockers.Blocker{DependentRef: v1alpha1.DependentRef{Workspace: "2x8ab", Group: o.Group, Version: o.Version, Resource: o.Resource,
		Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, GenerateName: o.GenerateName}, Pending: pending}
}

// fakeWorkspace serves objects per type and answers asks from verdicts.
type fakeWorkspace struct {
	objects  map[apiType][]Object
	verdicts map[objectKey]blockers.Verdict
	failing  map[objectKey]error
	listed   []string
}

func (w *fakeWorkspace) types(context.Context) ([]apiType, error) {
	return []apiType{vpcType, vmType, zoneType}, nil
}

func (w *fakeWorkspace) list(_ context.Context, t apiType, namespace string) ([]Object, error) {
	w.listed = append(w.listed, t.resource.Resource+" in "+namespace)
	var out []Object
	for _, o := range w.objects[t] {
		if namespace == "" || o.Namespace == namespace {
			out = append(out, o)
		}
	}
	return out, nil
}

func (w *fakeWorkspace) ask(_ context.Context, o Object) (blockers.Verdict, error) {
	if err := w.failing[o.key()]; err != nil {
		return blockers.Verdict{}, err
	}
	v, ok := w.verdicts[o.key()]
	if !ok {
		return blockers.Verdict{Deletable: true}, nil
	}
	return v, nil
}

// TestBuildGraph: every object of every bound type in the namespace (and
// the cluster-scoped ones) is asked about; the dependents a denial names
// become references, and objects of their own when they were not listed
// (a dependent in another namespace, or being created); an object that
// cannot be asked about, or that more dependents reference than protection
// lists, is reported, not dropped silently; one deleted meanwhile is gone.
func TestBuildGraph(t *testing.T) {
	vpc := object(vpcType, "a", "vpc-1")
	other := object(vpcType, "b", "vpc-2")
	vm := object(vmType, "a", "vm-1")
	zone := object(zoneType, "", "eu")
	elsewhere := object(vmType, "b", "vm-9")
	creating := object(vmType, "a", "")
	creating.GenerateName = "vm-"
	gone := object(vpcType, "a", "vpc-gone")
	ws := &fakeWorkspace{
		objects: map[apiType][]Object{vpcType: {vpc, other, gone}, vmType: {vm}, zoneType: {zone}},
		verdicts: map[objectKey]blockers.Verdict{
			vpc.key():  {Blockers: []blockers.Blocker{blocker(vm, false), blocker(creating, true), blocker(vm, true)}},
			zone.key(): {Blockers: []blockers.Blocker{blocker(vpc, false), blocker(elsewhere, false)}, More: 3},
		},
		failing: map[objectKey]error{
			vm.key():   errors.New("forbidden"),
			gone.key(): apierrors.NewNotFound(vpcType.resource.GroupResource(), gone.Name),
		},
	}
	g, err := buildGraph(context.Background(), ws, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := []Reference{{From: creating, To: vpc, Pending: true}, {From: vm, To: vpc}, {From: vpc, To: zone}, {From: elsewhere, To: zone}}
	if len(g.References) != len(want) {
		t.Fatalf("references %+v, want %+v", g.References, want)
	}
	for i := range want {
		if g.References[i] != want[i] {
			t.Errorf("reference %d = %+v, want %+v", i, g.References[i], want[i])
		}
	}
	wantObjects := []Object{vpc, creating, vm, elsewhere, zone}
	if len(g.Objects) != len(wantObjects) {
		t.Fatalf("objects %v, want %v", g.Objects, wantObjects)
	}
	for i := range wantObjects {
		if g.Objects[i] != wantObjects[i] {
			t.Errorf("object %d = %v, want %v", i, g.Objects[i], wantObjects[i])
		}
	}
	// vm could not be asked about; more dependents reference zone than
	// listed; vpc-gone went between the list and the ask, and is simply
	// not there.
	if len(g.Unanswered) != 2 || g.Unanswered[0].Object != vm || g.Unanswered[1].Object != zone ||
		!strings.Contains(g.Unanswered[1].Error, "3 more") || g.unansweredError() == nil {
		t.Errorf("unanswered %+v, want %v and %v (3 more)", g.Unanswered, vm, zone)
	}
	wantListed := []string{"vpcs in a", "virtualmachines in a", "zones in "}
	if len(ws.listed) != len(wantListed) {
		t.Fatalf("listed %v, want %v", ws.listed, wantListed)
	}
	for i := range wantListed {
		if ws.listed[i] != wantListed[i] {
			t.Errorf("listed %v, want %v", ws.listed, wantListed)
		}
	}
}
