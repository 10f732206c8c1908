package decision

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// manyProtections is n rules protecting one type from one dependent type,
// each through its own path: the shape of make bench's 1 000 rules.
func manyProtections(n int) []registry.Protection {
	vms := schema.GroupVersionResource{Group: "compute.test.io", Version: "v1", Resource: "virtualmachines"}
	out := make([]registry.Protection, n)
	for i := range out {
		out[i] = registry.Protection{Rule: fmt.Sprintf("c/rule-%04d", i), Dependent: vms, DependentKind: "VirtualMachine",
			Paths: []fieldpath.Path{fieldpath.MustParse(fmt.Sprintf(".spec.field%d", i))}}
	}
	return out
}

// BenchmarkDecisionCPU is the webhook's own work for one protected DELETE
// before and after its reads, without them: merging the rules by dependent
// type, building the LIST projection and decoding an empty page, by number
// of rules over the type.
func BenchmarkDecisionCPU(b *testing.B) {
	empty := []byte(`{"kind":"List","metadata":{"resourceVersion":"42"},"items":[]}`)
	for _, n := range []int{1, 5, 100, 1000} {
		protections := manyProtections(n)
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			for b.Loop() {
				for _, p := range byDependent(protections) {
					for range 2 { // the unstamped and the referencing read
						if _, err := listProjection(p).Decode(empty); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}
