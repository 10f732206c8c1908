package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// destroyWarnings records the warnings the provider returns when Terraform
// deletes a resource, for tests to check what a destroy said.
type destroyWarnings struct {
	mu       sync.Mutex
	warnings []string
}

// factories runs the provider as testAccProtoV6ProviderFactories does,
// recording the warnings of every delete.
func (w *destroyWarnings) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"depctrl": func() (tfprotov6.ProviderServer, error) {
			s, err := providerserver.NewProtocol6WithError(New("test")())()
			return recordingServer{ProviderServer: s, w: w}, err
		},
	}
}

func (w *destroyWarnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.warnings...)
}

// withRuntimeRunning is tc for a test whose destroys run with the runtime
// running: besides tc.CheckDestroy, none of them may warn that the
// controller left anything behind.
func withRuntimeRunning(tc resource.TestCase) resource.TestCase {
	w := &destroyWarnings{}
	tc.ProtoV6ProviderFactories = w.factories()
	checkDestroy := tc.CheckDestroy
	tc.CheckDestroy = func(s *terraform.State) error {
		if all := w.all(); len(all) > 0 {
			return fmt.Errorf("destroying with the runtime running warned: %q", all)
		}
		return checkDestroy(s)
	}
	return tc
}

// matching returns the recorded warnings whose summary or detail contains s.
func (w *destroyWarnings) matching(s string) []string {
	var out []string
	for _, m := range w.all() {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

type recordingServer struct {
	tfprotov6.ProviderServer
	w *destroyWarnings
}

func (s recordingServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp, err := s.ProviderServer.ApplyResourceChange(ctx, req)
	deleting := req.PlannedState == nil
	if !deleting {
		deleting, _ = req.PlannedState.IsNull()
	}
	if resp != nil && deleting {
		s.w.mu.Lock()
		for _, d := range resp.Diagnostics {
			if d.Severity == tfprotov6.DiagnosticSeverityWarning {
				s.w.warnings = append(s.w.warnings, fmt.Sprintf("%s: %s: %s", req.TypeName, d.Summary, d.Detail))
			}
		}
		s.w.mu.Unlock()
	}
	return resp, err
}

// TestAccDependencyRuleResource_destroyWithoutController: with the controller
// stopped, nothing removes the webhook configurations it installed for a
// rule. The rule's destroy waits its delete timeout and warns, naming them;
// the binding's destroy removes them and warns too. (TestAccTopology_basic
// destroys with the controller running, and there neither warns.)
func TestAccDependencyRuleResource_destroyWithoutController(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tp := topology{e: e, prefix: env.UniqueName("nocontroller")}
	var rt *runtimetest.Runtime
	warnings := &destroyWarnings{}
	config := tp.base() + vmRule{Workspace: "depctrl_provider_binding.compute.workspace_path", NetworkPath: "depctrl_provider_binding.network.workspace_path",
		Extra: "\n  timeouts {\n    delete = \"5s\"\n  }\n"}.HCL("vm_needs_vpc", "vm-needs-vpc")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: warnings.factories(),
		CheckDestroy: func(*terraform.State) error {
			rule := warnings.matching("The controller has not removed the rule's webhooks")
			if len(rule) != 1 {
				return fmt.Errorf("want the rule's destroy to warn once that the controller did not remove its webhooks; the destroy warned %q", warnings.all())
			}
			for _, what := range []string{"the reference index entry for virtualmachines.compute.test.io", "the deletion webhook for vpcs.network.test.io"} {
				if !strings.Contains(rule[0], what) {
					return fmt.Errorf("the rule's warning does not name %s: %s", what, rule[0])
				}
			}
			if got := warnings.matching("Removed webhook configurations the controller left behind"); len(got) != 2 {
				return fmt.Errorf("want both bindings' destroys to warn that they removed what the controller left behind; the destroy warned %q", warnings.all())
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: tp.base()},
			{
				PreConfig: func() {
					tp.applyFixtures(ctx, t, []string{tp.path("consumer-0"), tp.path("consumer-1")})
					rt = runtimetest.Start(ctx, t, e, tp.path("depctrl"))
				},
				Config: config,
				// The rule is enforced; then the controller stops, before
				// the destroy that follows this step.
				Check: func(*terraform.State) error {
					rt.StopController(t)
					return nil
				},
			},
		},
	})
}

// TestServesCluster: a deletion webhook belongs to the rules of the
// logical clusters its URL names; one that names none is nobody's in
// particular.
func TestServesCluster(t *testing.T) {
	for _, tt := range []struct {
		url  string
		want bool
	}{
		{"https://127.0.0.1:9443/validate/clusters/abc,def", true},
		{"https://127.0.0.1:9443/validate/clusters/def", false},
		{"https://127.0.0.1:9443/validate", false},
		{"https://127.0.0.1:9443/validate/clusters/", false},
	} {
		if got := servesCluster(admissionregistrationv1.WebhookClientConfig{URL: ptr.To(tt.url)}, "abc"); got != tt.want {
			t.Errorf("servesCluster(%s) = %v, want %v", tt.url, got, tt.want)
		}
	}
	if servesCluster(admissionregistrationv1.WebhookClientConfig{}, "abc") {
		t.Error("a webhook without a URL serves no cluster")
	}
}

func TestCovers(t *testing.T) {
	vpcs := schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "vpcs"}
	rule := func(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"network.test.io"}, APIVersions: []string{"v1"}, Resources: []string{"vpcs", "subnets"},
		}}}
	}
	for _, tt := range []struct {
		name  string
		rules []admissionregistrationv1.RuleWithOperations
		op    admissionregistrationv1.OperationType
		gvr   schema.GroupVersionResource
		want  bool
	}{
		{"delete", rule(admissionregistrationv1.Delete), admissionregistrationv1.Delete, vpcs, true},
		{"update only", rule(admissionregistrationv1.Update), admissionregistrationv1.Delete, vpcs, false},
		{"any operation", rule(admissionregistrationv1.Update), "", vpcs, true},
		{"all", rule(admissionregistrationv1.OperationAll), admissionregistrationv1.Delete, vpcs, true},
		{"other version", rule(admissionregistrationv1.Delete), admissionregistrationv1.Delete, schema.GroupVersionResource{Group: "network.test.io", Version: "v2", Resource: "vpcs"}, false},
		{"other resource", rule(admissionregistrationv1.Delete), admissionregistrationv1.Delete, schema.GroupVersionResource{Group: "network.test.io", Version: "v1", Resource: "firewallrules"}, false},
	} {
		if got := covers(tt.rules, tt.gvr, tt.op); got != tt.want {
			t.Errorf("%s: covers = %v, want %v", tt.name, got, tt.want)
		}
	}
}
