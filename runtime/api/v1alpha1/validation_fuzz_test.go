package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzValidate decodes arbitrary JSON into a DependencyRule and validates
// it. Validation must never panic, every error must name a field under
// spec, and a rule it accepts must survive a JSON round trip unchanged and
// be accepted again.
func FuzzValidate(f *testing.F) {
	f.Add(`{"spec":{"dependent":{"apiExportName":"compute.example.io","group":"compute.example.io","version":"v1","kind":"VirtualMachine","resource":"virtualmachines"},"dependencies":[{"apiExportRef":{"path":"root:org:network","name":"network.example.io"},"group":"network.example.io","version":"v1","resource":"vpcs","fieldRef":{"path":".spec.vpcRef.name"}}]}}`)
	f.Add(`{"spec":{"dependencies":[]}}`)
	f.Add(`{"spec":{"dependent":{"kind":"9"},"dependencies":[{"fieldRef":{"path":".a[*]."}}]}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, doc string) {
		r := &DependencyRule{}
		if err := json.Unmarshal([]byte(doc), r); err != nil {
			return
		}
		errs := r.Validate()
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec") {
				t.Fatalf("error for a field outside spec: %v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("an accepted rule does not encode: %v", err)
		}
		again := &DependencyRule{}
		if err := json.Unmarshal(data, again); err != nil {
			t.Fatalf("an accepted rule does not decode: %v", err)
		}
		if errs := again.Validate(); len(errs) > 0 {
			t.Fatalf("an accepted rule is refused after a round trip: %v", errs)
		}
	})
}
