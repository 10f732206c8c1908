package deploy

import (
	"fmt"
	"slices"
	"testing"
)

// TestRenderSettleObjects: both binaries are told whether to settle, either
// way, so that the binaries' default never decides: the controller
// publishes stamps, the webhook settles under them.
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
			if !slices.Contains(args, fmt.Sprintf("--settle-objects=%t", on)) || slices.Contains(args, fmt.Sprintf("--settle-objects=%t", !on)) {
				t.Errorf("SettleObjects=%v: %s args %v", on, name, args)
			}
		}
	}
}
