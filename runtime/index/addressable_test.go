package index

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestIntentOn: an intent counts only when it names a dependent the webhook
// can have recorded it for; one whose namespace or name is no object's (a
// path into another workspace, say) is not the webhook's, and is expired.
func TestIntentOn(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		in    v1alpha1.Intent
		fresh bool
	}{
		{name: "a name", in: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Namespace: "prod", Name: "vm-1"}, fresh: true},
		{name: "a generated name", in: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Namespace: "prod", GenerateName: "vm-"}, fresh: true},
		{name: "cluster-scoped", in: v1alpha1.Intent{Resource: "regions.network.test.io", Name: "region-1"}, fresh: true},
		{name: "a name that is a path", in: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Namespace: "prod",
			Name: "../../../../clusters/tenant-b/apis/compute.test.io/v1/namespaces/prod/virtualmachines/vm-b"}},
		{name: "a namespace that is a path", in: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Namespace: "../../clusters/b", Name: "vm-1"}},
		{name: "a generated name that is a path", in: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Namespace: "prod", GenerateName: "../"}},
		{name: "no name at all", in: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Namespace: "prod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.At = metav1.NewTime(now)
			value, err := Encode(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			fresh, expired := On(map[string]string{Key("t"): value}, now, DefaultLifetime)
			if got := len(fresh) == 1; got != tt.fresh {
				t.Fatalf("fresh = %v (expired %v), want %v", got, expired, tt.fresh)
			}
			if Addressable(tt.in) != tt.fresh {
				t.Fatalf("Addressable = %v, want %v", !tt.fresh, tt.fresh)
			}
		})
	}
}
