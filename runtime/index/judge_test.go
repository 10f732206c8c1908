package index

import (
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// TestJudge: an intent's write is in flight until the stored dependent
// carries its label, whatever revision it is stored at and whatever it
// references: the API server admits a patch again, against the later
// revision, when another write was stored first; once the write is stored,
// what the stored dependent references decides.
func TestJudge(t *testing.T) {
	in := Recorded{Key: Key("a1"), Intent: v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Name: "vm"}}
	for _, tt := range []struct {
		name string
		d    Dependent
		want Verdict
	}{
		{"not stored yet: a create on its way, or a write the server may admit again as a create (server-side apply)",
			Dependent{}, InFlight},
		{"stored without a label: the write is not", Dependent{Found: true}, InFlight},
		{"the copy the write replaces, or one another write stored since, not referencing the object",
			Dependent{Found: true, Token: "b2"}, InFlight},
		{"another write's copy referencing the object: it may yet be replaced by one that does not, before this write is admitted again",
			Dependent{Found: true, Token: "b2", References: true}, InFlight},
		{"stored, referencing the object", Dependent{Found: true, Token: "a1", References: true}, Held},
		{"stored, and the reference dropped since", Dependent{Found: true, Token: "a1"}, Released},
	} {
		if got := Judge(in, tt.d); got != tt.want {
			t.Errorf("%s: Judge = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestTokenOf: the token of an IntentLabel, none from a value that is not
// one.
func TestTokenOf(t *testing.T) {
	for label, want := range map[string]string{"a1.1700000000": "a1", "a1": "", ".17": "", "a1.x": "", "": ""} {
		if got := TokenOf(label); got != want {
			t.Errorf("TokenOf(%q) = %q, want %q", label, got, want)
		}
	}
}
