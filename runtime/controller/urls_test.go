package controller

import (
	"strings"
	"testing"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

func TestDeriveMutateURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://depctrl-webhook.depctrl.svc:443/validate", "https://depctrl-webhook.depctrl.svc:443/mutate"},
		{"https://depctrl-webhook.depctrl.svc:443/validate/", "https://depctrl-webhook.depctrl.svc:443/mutate"},
		{"https://webhook.example.com/depctrl/validate", "https://webhook.example.com/depctrl/mutate"},
		{"https://webhook.example.com/depctrl", "https://webhook.example.com/depctrl/mutate"},
		{"https://webhook.example.com/depctrl/", "https://webhook.example.com/depctrl/mutate"},
		{"https://webhook.example.com", "https://webhook.example.com/mutate"},
		{"https://webhook.example.com/", "https://webhook.example.com/mutate"},
		{"https://10.0.0.1:9443/revalidate", "https://10.0.0.1:9443/revalidate/mutate"},
		{"https://webhook.example.com/validate/x", "https://webhook.example.com/validate/x/mutate"},
	}
	for _, tt := range tests {
		if got := DeriveMutateURL(tt.in); got != tt.want {
			t.Errorf("DeriveMutateURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestOptionsMutateURL(t *testing.T) {
	tests := []struct {
		name           string
		url, mutateURL string
		want           string
	}{
		{"derived", "https://wh:9443/validate", "", "https://wh:9443/mutate"},
		{"overridden", "https://wh:9443/validate", "https://index.example.com/refs", "https://index.example.com/refs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{WebhookURL: tt.url, WebhookMutateURL: tt.mutateURL}
			if got := o.MutateURL(); got != tt.want {
				t.Fatalf("MutateURL() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOptionsValidateWebhookURLs(t *testing.T) {
	valid := func() Options {
		return Options{Common: process.Common{ExportName: "e"}, WebhookURL: "https://wh:9443/validate", CABundleFile: "ca.pem", WebhookTimeoutSeconds: 10}
	}
	tests := []struct {
		name    string
		edit    func(*Options)
		wantErr string
	}{
		{"derived mutate URL", func(*Options) {}, ""},
		{"explicit mutate URL", func(o *Options) { o.WebhookMutateURL = "https://wh:9443/mutate" }, ""},
		{"http webhook URL", func(o *Options) { o.WebhookURL = "http://wh/validate" }, "--webhook-url"},
		{"no webhook URL", func(o *Options) { o.WebhookURL = "" }, "derived from it"},
		{"http mutate URL", func(o *Options) { o.WebhookMutateURL = "http://wh/mutate" }, "--webhook-mutate-url"},
		{"mutate URL without host", func(o *Options) { o.WebhookMutateURL = "https:///mutate" }, "--webhook-mutate-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.edit(&o)
			err := o.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
