package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// TestViewDiffers: a stamp is published only on a view of the rules that a
// read of the servers confirms: each rule there at the same UID and
// generation, and being deleted or not alike, and no rule missing from it.
func TestViewDiffers(t *testing.T) {
	viewed := func(cluster, name, uid string, gen int64, deleting bool) process.ShardObject {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		u.SetUID(types.UID(uid))
		u.SetGeneration(gen)
		if deleting {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}
		return process.ShardObject{Cluster: cluster, Obj: u}
	}
	listed := func(cluster, name, uid string, gen int64, deleting bool) process.ShardMeta {
		m := process.ShardMeta{Cluster: cluster, Obj: metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Generation: gen}}}
		if deleting {
			now := metav1.Now()
			m.Obj.DeletionTimestamp = &now
		}
		return m
	}
	view := []process.ShardObject{viewed("comp", "vm-needs-vpc", "u1", 1, false), viewed("comp", "db-needs-vpc", "u2", 3, false)}
	tests := []struct {
		name   string
		listed []process.ShardMeta
		want   []string
	}{
		{"the same", []process.ShardMeta{listed("comp", "vm-needs-vpc", "u1", 1, false), listed("comp", "db-needs-vpc", "u2", 3, false)}, nil},
		{"edited since", []process.ShardMeta{listed("comp", "vm-needs-vpc", "u1", 2, false), listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"recreated since", []process.ShardMeta{listed("comp", "vm-needs-vpc", "u9", 1, false), listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"being deleted since", []process.ShardMeta{listed("comp", "vm-needs-vpc", "u1", 1, true), listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"deleted since", []process.ShardMeta{listed("comp", "db-needs-vpc", "u2", 3, false)}, []string{"comp/vm-needs-vpc"}},
		{"created since", []process.ShardMeta{listed("comp", "vm-needs-vpc", "u1", 1, false), listed("comp", "db-needs-vpc", "u2", 3, false), listed("other", "fw-needs-net", "u3", 1, false)}, []string{"other/fw-needs-net"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := viewDiffers(view, tt.listed); !slices.Equal(got, tt.want) {
				t.Errorf("viewDiffers = %v, want %v", got, tt.want)
			}
		})
	}
}
