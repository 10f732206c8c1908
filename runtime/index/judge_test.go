package index

import (
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestJudge: an intent's write is in flight while a create's dependent is
// not stored, or while the dependent is stored at the revision the write was admitted against (or
// one not known to be later), whatever that copy references; after that,
// what the stored dependent references decides.
func TestJudge(t *testing.T) {
	update := v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Name: "vm", Base: "100"}
	create := v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Name: "vm"}
	for _, tt := range []struct {
		name string
		in   v1alpha1.Intent
		d    Dependent
		want Verdict
	}{
		{"an update held before it is stored: the old copy references something else", update,
			Dependent{Found: true, ResourceVersion: "100"}, InFlight},
		{"an update held before it is stored: the old copy references the object too", update,
			Dependent{Found: true, ResourceVersion: "100", References: true}, InFlight},
		{"a read older than the write's base", update,
			Dependent{Found: true, ResourceVersion: "99"}, InFlight},
		{"an update stored, referencing the object", update,
			Dependent{Found: true, ResourceVersion: "101", References: true}, Held},
		{"an update stored or beaten by another write, not referencing it", update,
			Dependent{Found: true, ResourceVersion: "101"}, Released},
		{"revisions compare as numbers, not as text", update,
			Dependent{Found: true, ResourceVersion: "1000", References: true}, Held},
		{"a revision that cannot be ordered", update,
			Dependent{Found: true, ResourceVersion: "x7"}, InFlight},
		{"a base that cannot be ordered", v1alpha1.Intent{Name: "vm", Base: "x7"},
			Dependent{Found: true, ResourceVersion: "101"}, InFlight},
		{"the dependent of an update deleted meanwhile: the revision it replaces is gone", update, Dependent{}, Released},
		{"a create not stored yet", create, Dependent{}, InFlight},
		{"a create stored, referencing the object", create,
			Dependent{Found: true, ResourceVersion: "5", References: true}, Held},
		{"a create beaten by another of the same name, or an intent without a base: by what it references", create,
			Dependent{Found: true, ResourceVersion: "5"}, Released},
	} {
		if got := Judge(tt.in, tt.d); got != tt.want {
			t.Errorf("%s: Judge = %s, want %s", tt.name, got, tt.want)
		}
	}
}
