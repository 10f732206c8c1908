package provider

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/kcp-dev/logicalcluster/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// accepts reports whether v lets s through at plan.
func accepts(v validator.String, s string) bool {
	resp := &validator.StringResponse{}
	v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("attr"), ConfigValue: types.StringValue(s)}, resp)
	return !resp.Diagnostics.HasError()
}

// consumers are the checks that the values of validated attributes meet
// at apply, written from what their consumers require rather than from the
// validators, so that the fuzzer can find where the two disagree.
var consumers = []struct {
	name      string
	validator validator.String
	// consumer returns why apply would fail with s, or "".
	consumer func(s string) string
}{
	{"object name", objectNameValidator("must be a name"), func(s string) string {
		// The API server checks metadata.name of the objects the provider
		// writes (APIExports, APIBindings, rules, ClusterRoles, Secrets).
		return strings.Join(validation.IsDNS1123Subdomain(s), "; ")
	}},
	{"namespace", dnsLabelValidator("must be a namespace"), func(s string) string {
		return strings.Join(validation.IsDNS1123Label(s), "; ")
	}},
	{"workspace path", workspacePathValidator(), func(s string) string {
		// kcp resolves the path from root, one workspace name at a time.
		if p, ok := logicalcluster.NewValidatedPath(s); !ok || !strings.HasPrefix(p.String()+":", "root:") {
			return "kcp does not take it as a path from root"
		}
		return ""
	}},
	{"https URL", httpsURLValidator("https://x"), func(s string) string {
		// The API server's rules for a webhook's clientConfig.url, which
		// the controller installs, and what a client needs of a host.
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return "not a webhook URL the API server accepts"
		}
		if u.Hostname() == "" || strings.ContainsAny(s, " \t\r\n") {
			return "no usable host"
		}
		return ""
	}},
}

// FuzzPlanValidation: whatever a plan-time validator accepts, its consumer
// accepts at apply. (The reverse need not hold: a validator may be
// stricter.)
func FuzzPlanValidation(f *testing.F) {
	for _, s := range []string{
		"root", "root:org:network", "root:" + strings.Repeat("a", 64), "root::x",
		"dependencies.opendefense.cloud", "vm-needs-vpc", strings.Repeat("a.", 130), "Upper",
		"depctrl-system", strings.Repeat("n", 64),
		"https://depctrl-webhook.example.com/validate", "https://user@host/x", "https://host/x?y=1", "https://host/#frag", "https://:443/", "http://host",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range consumers {
			if accepts(c.validator, s) {
				if problem := c.consumer(s); problem != "" {
					t.Errorf("%s: %q passes plan but fails at apply: %s", c.name, s, problem)
				}
			}
		}
	})
}

// TestValidatorsRefuse pins what the fuzzer found the old regular
// expressions let through.
func TestValidatorsRefuse(t *testing.T) {
	for _, tt := range []struct {
		validator validator.String
		value     string
	}{
		{workspacePathValidator(), "root:" + strings.Repeat("a", 64)},
		{objectNameValidator("must be a name"), strings.Repeat("a.", 127) + "a"},
		{httpsURLValidator("https://x"), "https://user@host/validate"},
		{httpsURLValidator("https://x"), "https://host/validate?x=1"},
		{httpsURLValidator("https://x"), "https://host/validate#x"},
		{httpsURLValidator("https://x"), "https://:443/validate"},
	} {
		if accepts(tt.validator, tt.value) {
			t.Errorf("%q accepted", tt.value)
		}
	}
}
