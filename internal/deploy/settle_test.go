package deploy

import (
	"slices"
	"testing"
)

// TestRenderSettleObjects: both binaries settle only when asked to: the
// controller publishes stamps, the webhook settles under them.
func TestRenderSettleObjects(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig()
		cfg.SettleObjects = on
		objs, err := Render(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"depctrl-controller", "depctrl-webhook"} {
			args := deployment(t, objs, name).Spec.Template.Spec.Containers[0].Args
			if got := slices.Contains(args, "--settle-objects=true"); got != on {
				t.Errorf("SettleObjects=%v: %s args %v", on, name, args)
			}
		}
	}
}
