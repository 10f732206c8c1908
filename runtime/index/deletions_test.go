package index

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

type heardDeletion struct {
	cluster string
	name    string
	targets []Referenced
}

type deletionLog []heardDeletion

func (l *deletionLog) DependentDeleted(cluster string, _ schema.GroupVersionResource, meta metav1.ObjectMeta, targets []Referenced) {
	*l = append(*l, heardDeletion{cluster: cluster, name: meta.Name, targets: targets})
}

// TestDependentDeleted: a dependent's deletion is told with what its stored
// copy references under the rules, from the cluster the object says; a dry
// run, a dependent that references nothing, and one whose stored copy names
// no logical cluster or carries values that cannot be names, tell nothing
// (or leave those values out).
func TestDependentDeleted(t *testing.T) {
	ready := make(chan struct{})
	close(ready)
	for _, tc := range []struct {
		name   string
		old    string
		dryRun bool
		want   []string
	}{
		{name: "its references are told", old: vmReferencing("", "vpc-a", "vpc-b"), want: []string{"vpc-a", "vpc-b"}},
		{name: "a dry run tells nothing", old: vmReferencing("", "vpc-a"), dryRun: true},
		{name: "a dependent referencing nothing tells nothing", old: vmReferencing("")},
		{name: "values that cannot be names are left out", old: vmReferencing("", "vpc-a", "../x", "a/b", "a%2Fb"), want: []string{"vpc-a"}},
		{name: "a path-segment name is one (nameValidation PathSegmentName)", old: vmReferencing("", "vpc-a", "A_B"), want: []string{"A_B", "vpc-a"}},
		{name: "no logical cluster tells nothing", old: `{"metadata":{"name":"vm","namespace":"apps"},"spec":{"networks":[{"vpc":"vpc-a"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var heard deletionLog
			ix := NewIndexer(schemaSource(vmIndexSchema), admission.When(ready), logr.Discard())
			ix.Deletions = &heard
			resp, _ := ix.Decide(context.Background(), &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Delete, DryRun: &tc.dryRun,
				Resource: metav1.GroupVersionResource(vmGVR), OldObject: runtime.RawExtension{Raw: []byte(tc.old)}})
			if !resp.Allowed {
				t.Fatalf("a delete must be let through: %+v", resp.Result)
			}
			if len(tc.want) == 0 {
				if len(heard) != 0 {
					t.Errorf("heard %+v, want nothing", heard)
				}
				return
			}
			if len(heard) != 1 || heard[0].cluster != "c1" || heard[0].name != "vm" {
				t.Fatalf("heard %+v, want the deletion of vm in c1", heard)
			}
			var names []string
			for _, r := range heard[0].targets {
				if r.Resource != vpcGVR {
					t.Errorf("target %+v is not a VPC", r)
				}
				names = append(names, r.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("targets %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Errorf("targets %v, want %v", names, tc.want)
				}
			}
		})
	}
}
