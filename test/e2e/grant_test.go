package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/internal/rbac"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// Bounds of TestResolveGrantRemoved. The controller trusts a resolved path
// for --workspace-cache-ttl (30 s) and runs at least every --resync-period
// (20 s in these tests), so it notices the grant gone within 50 s; once
// the grant is back, it runs again within controller.DefaultReread, and
// kcp takes a moment to authorize by the restored binding.
const (
	grantNoticedBound  = 90 * time.Second
	grantRepairedBound = 20 * time.Second
	// pastResync is how long protection is watched while the controller
	// cannot resolve the path: two resync periods and more.
	pastResync = 50 * time.Second
)

// TestResolveGrantRemoved removes the grant that lets the controller
// resolve the network provider's path (the workspace reader in the
// intermediate org workspace, as depctrl_root_rbac grants it). A failure to
// read is not "nothing to protect": well past the controller's resync, and
// again after the controller restarted without ever resolving the path,
// the webhook configuration in the network workspace is still the very one
// installed (same UID and generation: entries, scope and published stamp
// alike), a referenced VPC is still refused on both shards, the rule says
// why it cannot be checked, and the controller is not ready. Once the
// grant is back the rule is Ready again within seconds.
func TestResolveGrantRemoved(t *testing.T) {
	ctx, e := integration(t, 15*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	top.protectVPCs(ctx, t)
	for _, c := range top.Consumers {
		top.vpcInUse(ctx, t, c)
	}
	refused := func(what string) {
		t.Helper()
		for _, c := range top.Consumers {
			check.Eventually(ctx, t, time.Minute, fmt.Sprintf("%s: vpc-1 refused on shard %s", what, c.Shard), func() error {
				return top.decidedDenial(ctx, t, c, fixtures.VPCs, "vpc-1", "still referenced by VirtualMachine/vm-1")
			})
		}
	}
	refused("before")
	// The stamp is published a moment after the rule is Ready; from then
	// on nothing changes the configuration unless a rule does.
	check.Eventually(ctx, t, time.Minute, "the stamp of VPCs to be published", func() error {
		if top.publishedStamp(ctx, t, fixtures.VPCs) == "" {
			return fmt.Errorf("no stamp yet")
		}
		return nil
	})
	installed := top.webhookConfiguration(ctx, t, top.Network)
	index := top.dynamicFor(t, top.Compute.Path).Resource(mutatingGVR)
	installedIndex, err := index.Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{})
	check.Must(t, err)
	// unchanged fails the test unless both configurations are the very
	// objects installed before the grant was removed.
	unchanged := func(what string) {
		t.Helper()
		u := top.webhookConfiguration(ctx, t, top.Network)
		if u == nil {
			t.Fatalf("%s: the webhook configuration in %s was removed", what, top.Network.Path)
		}
		if u.GetUID() != installed.GetUID() || u.GetGeneration() != installed.GetGeneration() {
			t.Fatalf("%s: the webhook configuration in %s was replaced or rewritten (uid %s generation %d, was %s generation %d)",
				what, top.Network.Path, u.GetUID(), u.GetGeneration(), installed.GetUID(), installed.GetGeneration())
		}
		i, err := index.Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{})
		check.Must(t, err)
		if i.GetUID() != installedIndex.GetUID() || i.GetGeneration() != installedIndex.GetGeneration() {
			t.Fatalf("%s: the reference index configuration in %s was replaced or rewritten", what, top.Compute.Path)
		}
	}
	// heldFor watches protection for d: nothing installed changes, and
	// vpc-1 stays refused on both shards.
	heldFor := func(what string, d time.Duration) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); {
			refused(what)
			unchanged(what)
			time.Sleep(5 * time.Second)
		}
		t.Logf("%s: protection held for %s", what, d)
	}
	// unreadReported checks what the controller says while it cannot
	// resolve the path: the rule's conditions, its readiness, its metric.
	unreadReported := func(what string) {
		t.Helper()
		rule := top.getRule(ctx, t, top.Compute, "vm-needs-vpc")
		for _, want := range []struct{ cond, status, reason string }{
			{v1alpha1.ConditionWorkspacesResolved, "False", "ResolveFailed"},
			{v1alpha1.ConditionWebhookInstalled, "Unknown", "WorkspacesUnreadable"},
			{v1alpha1.ConditionReady, "False", "ResolveFailed"},
		} {
			if status, reason, msg := condition(rule, want.cond); status != want.status || reason != want.reason {
				t.Errorf("%s: %s=%s (%s: %s), want %s (%s)", what, want.cond, status, reason, msg, want.status, want.reason)
			}
		}
		if code, body, err := httpBody(ctx, rt.ControllerReadyzURL+"/configurations"); err != nil || code == http.StatusOK ||
			!strings.Contains(body, "vm-needs-vpc") || !strings.Contains(body, top.Network.Path) {
			t.Errorf("%s: the controller's readiness does not name the rule it cannot read: %d %s %v", what, code, body, err)
		}
		if got, err := unreadMetric(ctx, rt, controller.UnreadWorkspace); got != "1" {
			t.Errorf("%s: depctrl_controller_rules_unread{read=%q} = %q (%v), want 1", what, controller.UnreadWorkspace, got, err)
		}
	}

	bindings := top.dynamicFor(t, top.Org.Path).Resource(schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterrolebindings"})
	check.Must(t, bindings.Delete(ctx, rbac.WorkspaceReaderName, metav1.DeleteOptions{}))
	removed := time.Now()
	t.Logf("removed the controller's grant to read workspaces in %s", top.Org.Path)

	var message string
	check.Eventually(ctx, t, grantNoticedBound, "the controller to report the path unresolvable", func() error {
		status, reason, msg := condition(top.getRule(ctx, t, top.Compute, "vm-needs-vpc"), v1alpha1.ConditionWorkspacesResolved)
		if status != "False" || reason != "ResolveFailed" {
			return fmt.Errorf("WorkspacesResolved=%q (%s): %s", status, reason, msg)
		}
		message = msg
		return nil
	})
	t.Logf("noticed %s after the grant was removed: %s", time.Since(removed).Round(time.Millisecond), message)
	if !strings.Contains(message, top.Network.Path) || !strings.Contains(message, "forbidden") {
		t.Errorf("the rule does not say that reading %s was forbidden: %s", top.Network.Path, message)
	}
	if note := top.waitEvent(ctx, t, top.Compute, "default", "vm-needs-vpc", "ResolveFailed"); note != message {
		t.Errorf("the ResolveFailed Event says %q, the condition %q", note, message)
	}
	heldFor("grant removed", pastResync)
	unreadReported("grant removed, past the resync")

	// A restarted controller never resolved the path: it keeps what is
	// installed for the rule rather than what it can compute.
	rt.StopController(t)
	rt.StartController(t)
	restarted := time.Now()
	check.Eventually(ctx, t, time.Minute, "the restarted controller's first run", func() error {
		if got, err := unreadMetric(ctx, rt, controller.UnreadWorkspace); got != "1" {
			return fmt.Errorf("depctrl_controller_rules_unread{read=%q} = %q (%v)", controller.UnreadWorkspace, got, err)
		}
		return nil
	})
	t.Logf("restarted controller ran after %s", time.Since(restarted).Round(time.Millisecond))
	heldFor("controller restarted", pastResync)
	unreadReported("controller restarted, past the resync")

	apply(ctx, t, top.admin(t, top.Org.Path), toYAML(t, rbac.WorkspaceReader([]rbacv1.Subject{rbac.User(env.ControllerUser)})))
	back := time.Now()
	took := top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	t.Logf("rule Ready %s after the grant was restored (bound %s)", took.Round(time.Millisecond), grantRepairedBound)
	if took > grantRepairedBound {
		t.Errorf("the rule took %s to become Ready after the grant was restored, more than %s", took, grantRepairedBound)
	}
	rule := top.getRule(ctx, t, top.Compute, "vm-needs-vpc")
	for _, c := range []string{v1alpha1.ConditionWorkspacesResolved, v1alpha1.ConditionWebhookInstalled} {
		if status, reason, msg := condition(rule, c); status != "True" {
			t.Errorf("after the grant was restored: %s=%s (%s: %s)", c, status, reason, msg)
		}
	}
	check.Eventually(ctx, t, grantRepairedBound, "the controller to report ready again", func() error {
		if code := httpStatus(ctx, rt.ControllerReadyzURL); code != http.StatusOK {
			return fmt.Errorf("readyz: %d", code)
		}
		if got, err := unreadMetric(ctx, rt, controller.UnreadWorkspace); got != "0" {
			return fmt.Errorf("depctrl_controller_rules_unread{read=%q} = %q (%v)", controller.UnreadWorkspace, got, err)
		}
		return nil
	})
	t.Logf("controller ready %s after the grant was restored", time.Since(back).Round(time.Millisecond))
	unchanged("grant restored")
	refused("grant restored")
}

// httpBody GETs url and returns the status code and the body; an error
// when nothing answers (a process starting).
func httpBody(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// unreadMetric is depctrl_controller_rules_unread for what, as exported
// by the controller ("" when it is not exported).
func unreadMetric(ctx context.Context, rt *runtimetest.Runtime, what string) (string, error) {
	_, body, err := httpBody(ctx, rt.ControllerMetricsURL)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("depctrl_controller_rules_unread{read=%q} ", what)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", nil
}
