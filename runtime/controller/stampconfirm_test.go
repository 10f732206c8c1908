package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/virtualworkspace"
)

// TestViewDiffers: a stamp is published only on a view of the rules that a
// read of the servers confirms: each rule there at the same UID and
// generation, and being deleted or not alike, and no rule missing from it.
func TestViewDiffers(t *testing.T) {
	viewed := func(cluster, name, uid string, gen int64, deleting bool) virtualworkspace.Object {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetUID(types.UID(uid))
		u.SetGeneration(gen)
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return virtualworkspace.Object{Cluster: cluster, Obj: u}
	}
	listed := func(cluster, name, uid string, gen int64, deleting bool) virtualworkspace.Meta {
		m := virtualworkspace.Meta{Cluster: cluster, Obj: metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Generation: gen}}}
		if deleting {
			now := metav1.Now()
			m.Obj.DeletionTimestamp = &now
		}
		return m
	}
	view := []virtualworkspace.Object{viewed("comp", "vm-needs-vpc", "u1", 1, false), viewed("comp", "db-needs-vpc", "u2", 3, false)}
	tests := []struct {
		name   string
		listed []virtualworkspace.Meta
		want   []string
	}{
		{"the same", []virtualworkspace.Meta{listed("comp", "vm-needs-vpc", "u1", 1, false), listed("comp", "db-needs-vpc", "u2", 3, false)}, nil},
		{"edited since", []virtualworkspace.Meta{listed("comp", "vm-needs-vpc", "u1", 2, false), listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"recreated since", []virtualworkspace.Meta{listed("comp", "vm-needs-vpc", "u9", 1, false), listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"being deleted since", []virtualworkspace.Meta{listed("comp", "vm-needs-vpc", "u1", 1, true), listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"deleted since", []virtualworkspace.Meta{listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"created since", []virtualworkspace.Meta{listed("comp", "vm-needs-vpc", "u1", 1, false), listed("comp", "db-needs-vpc", "u2", 3, false), listed("other", "fw-needs-net", "u3", 1, false)}, []string{"other/fw-needs-net"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := viewDiffers(view, tt.listed); !slices.Equal(got, tt.want) {
				t.Errorf("viewDiffers = %v, want %v", got, tt.want)
			}
		})
	}
}
