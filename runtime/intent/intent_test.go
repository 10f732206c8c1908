package intent

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// TestIntentClock: an object's intents are fresh until the newest expires;
// expired and unreadable ones do not count.
func TestIntentClock(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string {
		v, _ := Encode(v1alpha1.Intent{Resource: "virtualmachines.compute.test.io", Version: "v1", Name: "vm", At: metav1.NewTime(now.Add(d))})
		return v
	}
	c := Clock{Lifetime: time.Minute}
	for name, tt := range map[string]struct {
		annotations map[string]string
		want        time.Time
	}{
		"none":          {nil, time.Time{}},
		"expired":       {map[string]string{Key("a"): at(-2 * time.Minute)}, time.Time{}},
		"unreadable":    {map[string]string{Key("a"): "{"}, time.Time{}},
		"newest counts": {map[string]string{Key("a"): at(-30 * time.Second), Key("b"): at(-10 * time.Second)}, now.Add(50 * time.Second)},
	} {
		if got := c.FreshUntil(tt.annotations, now); !got.Equal(tt.want) {
			t.Errorf("%s: FreshUntil = %v, want %v", name, got, tt.want)
		}
	}
}

// TestSettleAfterCoversAnIntent: a stamp is used only once it has stood as
// long as an intent lives, so that every write admitted before it was
// published, by a replica of any version, is stored or failed by then.
func TestSettleAfterCoversAnIntent(t *testing.T) {
	if settle.DefaultSettleAfter < DefaultLifetime {
		t.Errorf("settle.DefaultSettleAfter %s is shorter than DefaultLifetime %s", settle.DefaultSettleAfter, DefaultLifetime)
	}
}
