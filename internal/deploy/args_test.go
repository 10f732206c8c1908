package deploy

import (
	"slices"
	"strings"
	"testing"
)

// TestWebhookArgs: the options a configuration may leave unset are rendered
// only when set, after the ones always rendered and in the order of
// WebhookRenderedNames, so that the import tells them from the user's extra
// arguments; a configuration that sets none renders exactly the arguments
// it did before they existed (its pods do not roll on an upgrade).
func TestWebhookArgs(t *testing.T) {
	always := []string{
		"--kubeconfig=" + KubeconfigDir + "/" + KubeconfigKey,
		"--apiexport-name=deps",
		"--tls-cert-dir=" + TLSDir,
		"--bind-address=:9443",
		"--metrics-bind-address=:8082",
		"--health-probe-bind-address=:8083",
		"--settle-objects=true",
	}
	base := Config{APIExportName: "deps", WebhookPort: 9443, SettleObjects: true}
	for _, tt := range []struct {
		name     string
		groups   []string
		deferred bool
		want     []string
	}{
		{name: "neither", want: always},
		{name: "skip-protection groups", groups: []string{"ops", "sre"}, want: append(slices.Clone(always), "--skip-protection-groups=ops,sre")},
		{name: "deferred deletion", deferred: true, want: append(slices.Clone(always), "--deferred-deletion=true")},
		{
			name: "both", groups: []string{"ops"}, deferred: true,
			want: append(slices.Clone(always), "--skip-protection-groups=ops", "--deferred-deletion=true"),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			cfg.SkipProtectionGroups, cfg.DeferredDeletion = tt.groups, tt.deferred
			got := cfg.WebhookArgs()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("args\n got %q\nwant %q", got, tt.want)
			}
			// Each rendered argument is one WebhookRenderedNames names,
			// in that order.
			names := WebhookRenderedNames()
			next := 0
			for _, a := range got {
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				i := slices.Index(names[next:], name)
				if i < 0 {
					t.Fatalf("%s is not among the rendered names %v after position %d", a, names, next)
				}
				next += i + 1
			}
		})
	}
}

// TestWebhookRenderedNames: every option the renderer may write, once each,
// those always written first.
func TestWebhookRenderedNames(t *testing.T) {
	want := []string{
		"kubeconfig", "apiexport-name", "tls-cert-dir", "bind-address", "metrics-bind-address", "health-probe-bind-address", "settle-objects",
		"skip-protection-groups", "deferred-deletion",
	}
	if got := WebhookRenderedNames(); !slices.Equal(got, want) {
		t.Errorf("WebhookRenderedNames() = %q, want %q", got, want)
	}
}
