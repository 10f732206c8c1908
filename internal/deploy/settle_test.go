package deploy

import (
	"slices"
	"testing"
)

// TestRenderSettleObjects: the webhook settles objects only when asked to.
func TestRenderSettleObjects(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig()
		cfg.SettleObjects = on
		objs, err := Render(cfg)
		if err != nil {
			t.Fatal(err)
		}
		args := deployment(t, objs, "depctrl-webhook").Spec.Template.Spec.Containers[0].Args
		if got := slices.Contains(args, "--settle-objects=true"); got != on {
			t.Errorf("SettleObjects=%v: webhook args %v", on, args)
		}
	}
}
