package decision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
)

// TestUnreferenced: a few objects are proven one by one with the reads a
// deletion makes; more with one read of every dependent per dependent type;
// either way only the objects nothing references are returned, and a
// failed read proves nothing.
func TestUnreferenced(t *testing.T) {
	protections := fakeProtections{vpcGVR: {
		{Rule: "c1/vm-rule", Dependent: vmGVR, DependentKind: "VirtualMachine"},
		{Rule: "c1/vm-rule-2", Dependent: vmGVR, DependentKind: "VirtualMachine"},
		{Rule: "c1/db-rule", Dependent: dbGVR, DependentKind: "ManagedDB"},
	}}
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("vpc-%d", i)
		}
		return out
	}
	tests := []struct {
		name        string
		protections fakeProtections
		names       []string
		finder      *fakeFinder
		want        []string
		wantErr     string
		oneByOne    int64 // FindBlockers calls
		placeReads  int64 // ReferencedNames calls: one per dependent type
	}{
		{name: "few, none referenced", protections: protections, names: names(2), finder: &fakeFinder{},
			want: []string{"vpc-0", "vpc-1"}, oneByOne: 4},
		{name: "few, referenced", protections: protections, names: names(2),
			finder:   &fakeFinder{blockers: map[schema.GroupVersionResource][]Blocker{dbGVR: {{Kind: "ManagedDB", Name: "db"}}}},
			oneByOne: 4},
		{name: "few, a read fails", protections: protections, names: names(2),
			finder:  &fakeFinder{err: map[schema.GroupVersionResource]error{vmGVR: errors.New("forbidden")}},
			wantErr: "forbidden"},
		{name: "many: one read per dependent type", protections: protections, names: names(6),
			finder: &fakeFinder{dependents: map[string]string{"default/vm-a": "vpc-1", "default/vm-b": "vpc-4", "other/vm-c": "vpc-2"}},
			want:   []string{"vpc-0", "vpc-2", "vpc-3", "vpc-5"}, placeReads: 2},
		{name: "many, a read fails", protections: protections, names: names(6),
			finder:  &fakeFinder{err: map[schema.GroupVersionResource]error{dbGVR: errors.New("forbidden")}},
			wantErr: "listing manageddbs.compute.test.io for rule c1/db-rule: forbidden"},
		{name: "no rule protects the type", protections: fakeProtections{}, names: names(6), finder: &fakeFinder{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewValidator(tt.protections, tt.finder, admission.When(closed()), ValidatorOptions{}, logr.Discard())
			got, err := v.Unreferenced(context.Background(), "consumer-1", "default", vpcGVR, tt.names)
			if check.WantError(t, err, tt.wantErr) {
				return
			}
			if have := slices.Sorted(maps.Keys(got)); !slices.Equal(have, tt.want) {
				t.Errorf("unreferenced = %v, want %v", have, tt.want)
			}
			if n := tt.finder.calls.Load(); n != tt.oneByOne {
				t.Errorf("%d one-by-one lookups, want %d", n, tt.oneByOne)
			}
			if n := tt.finder.placeReads.Load(); n != tt.placeReads {
				t.Errorf("%d reads of every dependent, want %d", n, tt.placeReads)
			}
		})
	}
}

// TestFrontProxyReferencedNames reads every dependent in pages, index
// labels or not, and collects what they reference; deleting dependents,
// and dependent types the consumer has not bound, reference nothing.
func TestFrontProxyReferencedNames(t *testing.T) {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	protection := registry.Protection{Rule: "c/r", Dependent: vms, DependentKind: "VirtualMachine", Paths: []fieldpath.Path{fieldpath.MustParse(".spec.vpcRef.name")}}
	namespaced := "/clusters/c1/apis/compute.test.io/v1/namespaces/apps/virtualmachines"
	clusterWide := "/clusters/c1/apis/compute.test.io/v1/virtualmachines"
	tests := []struct {
		name     string
		server   *listServer
		want     []string
		wantErr  string
		wantReqs int
	}{
		{name: "several pages", server: &listServer{items: map[string][]map[string]interface{}{namespaced: {
			vm("apps", "vm-1", "vpc-a", false), vm("apps", "vm-2", "vpc-b", false), vm("apps", "vm-3", "vpc-a", false),
			vm("apps", "vm-4", "vpc-c", true), vm("apps", "vm-5", "vpc-d", false)}}},
			want: []string{"vpc-a", "vpc-b", "vpc-d"}, wantReqs: 2},
		{name: "a cluster-scoped dependent type after a 404", server: &listServer{items: map[string][]map[string]interface{}{clusterWide: {vm("", "vm-x", "vpc-a", false)}}},
			want: []string{"vpc-a"}, wantReqs: 2},
		{name: "not bound", server: &listServer{items: map[string][]map[string]interface{}{}}, wantReqs: 2},
		{name: "server errors fail it", server: &listServer{status: http.StatusInternalServerError}, wantErr: "boom", wantReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := serveFinder(t, tt.server)
			f.PageSize = 3
			got, err := f.ReferencedNames(context.Background(), "c1", "apps", protection)
			check.WantError(t, err, tt.wantErr)
			if have := slices.Sorted(maps.Keys(got)); !slices.Equal(have, tt.want) {
				t.Errorf("referenced = %v, want %v", have, tt.want)
			}
			if len(tt.server.requests) != tt.wantReqs {
				t.Errorf("made %d requests, want %d: %v", len(tt.server.requests), tt.wantReqs, tt.server.requests)
			}
			for _, r := range tt.server.requests {
				if strings.Contains(r, "labelSelector") {
					t.Errorf("request %s filters by label, but every dependent must be read", r)
				}
			}
		})
	}
}
