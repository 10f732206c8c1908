package decision

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/fieldpath"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

func TestByDependent(t *testing.T) {
	p := func(rule string, dep schema.GroupVersionResource, paths ...string) registry.Protection {
		out := registry.Protection{Rule: rule, Dependent: dep, DependentKind: dep.Resource}
		for _, s := range paths {
			out.Paths = append(out.Paths, fieldpath.MustParse(s))
		}
		return out
	}
	in := []registry.Protection{
		p("c/a", vmGVR, ".spec.vpcRef.name"),
		p("c/b", dbGVR, ".spec.vpc"),
		p("c/c", vmGVR, ".spec.networks[*].vpc", ".spec.vpcRef.name"),
	}
	got := byDependent(in)
	want := []registry.Protection{
		p("c/a, c/c", vmGVR, ".spec.vpcRef.name", ".spec.networks[*].vpc"),
		p("c/b", dbGVR, ".spec.vpc"),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("byDependent = %v\nwant %v", got, want)
	}
	if len(in[0].Paths) != 1 {
		t.Fatalf("byDependent changed its input: %v", in[0].Paths)
	}

	// Five rules over one dependent type cost one lookup.
	var five []registry.Protection
	for i := range 5 {
		five = append(five, p(fmt.Sprintf("c/r%d", i), vmGVR, fmt.Sprintf(".spec.ref%d", i)))
	}
	finder := &fakeFinder{}
	ready := make(chan struct{})
	close(ready)
	v := NewValidator(fakeProtections{vpcGVR: five}, finder, admission.When(ready), ValidatorOptions{}, logr.Discard())
	if resp, _ := v.Decide(context.Background(), deleteRequest(vpcGVR, "v", map[string]string{v1alpha1.ClusterAnnotation: "c1"})); !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if n := finder.calls.Load(); n != 1 {
		t.Fatalf("five rules over one dependent type made %d lookups, want 1", n)
	}
}
