package decision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
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
