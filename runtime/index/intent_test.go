package index

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

// TestIntentsOfOlderWebhooks: intents recorded by an older webhook, with
// fields this one no longer writes (the base revision) or without those it
// writes now (the rules), read as fresh.
func TestIntentsOfOlderWebhooks(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for name, value := range map[string]string{
		"with a base revision": `{"resource":"virtualmachines.compute.test.io","version":"v1","namespace":"apps","name":"vm","at":"2026-01-01T12:00:00Z","base":"41"}`,
		"without rules":        `{"resource":"virtualmachines.compute.test.io","version":"v1","namespace":"apps","name":"vm","at":"2026-01-01T12:00:00Z"}`,
	} {
		fresh, expired := On(map[string]string{Key("t"): value}, now, time.Minute)
		if len(fresh) != 1 || len(expired) != 0 || fresh[0].Name != "vm" {
			t.Errorf("%s: fresh %v, expired %v; want it fresh", name, fresh, expired)
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

// TestStanding: an intent counts while one of the rules it was recorded
// under stands; one recorded before intents named their rules counts
// unless it is dated more than ClockSkew before the oldest current rule.
func TestStanding(t *testing.T) {
	now := time.Now()
	at := metav1.NewTime(now)
	for _, tt := range []struct {
		name  string
		in    v1alpha1.Intent
		rules []string
		since time.Time
		want  bool
	}{
		{"its rule stands", v1alpha1.Intent{At: at, Rules: []string{"u1"}}, []string{"u1"}, now, true},
		{"one of its rules stands", v1alpha1.Intent{At: at, Rules: []string{"u0", "u2"}}, []string{"u1", "u2"}, now, true},
		{"its rules are gone, the type protected by a new one", v1alpha1.Intent{At: at, Rules: []string{"u0"}}, []string{"u1"}, now.Add(-time.Hour), false},
		{"no rules named, recorded after the rule", v1alpha1.Intent{At: at}, []string{"u1"}, now.Add(-time.Minute), true},
		{"no rules named, within the skew", v1alpha1.Intent{At: at}, []string{"u1"}, now.Add(ClockSkew - time.Second), true},
		{"no rules named, long before the rule", v1alpha1.Intent{At: at}, []string{"u1"}, now.Add(time.Minute), false},
	} {
		if got := Standing(tt.in, tt.rules, tt.since); got != tt.want {
			t.Errorf("%s: Standing = %v, want %v", tt.name, got, tt.want)
		}
	}
}
