package e2e

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestWebhookReplicaStopped: on the real two-shard kcp, with settling on,
// the webhook runs as two replicas behind a balancer at the URL the
// controller installs, as a Service spreads kcp's calls over the ready
// pods. One replica, b, is stopped (SIGSTOP) and taken out of rotation, as
// a Service does once its readiness probe fails; while it is stopped, a
// rule over VPCs is created, then edited, then deleted (ruleChanges), each
// once the one before has converged. The replica that runs withdraws the
// stamp of the rules before the change, and the VPC settled under them
// that the change makes referenced is refused in both consumers. Then b is
// resumed, holding the rules and the stamps as they were when it stopped,
// and put alone in rotation: every deletion of that VPC goes to it, and it
// refuses them all, for as long as it is watched, and decides some of them
// itself; the withdrawn stamp is never published again. Then both are in
// rotation, and the change converges.
func TestWebhookReplicaStopped(t *testing.T) {
	ctx, e := integration(t, 25*time.Minute, env.TwoShards)
	top, rt := install(ctx, t, e)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	lb, a, b := webhookReplicas(ctx, t, rt)
	top.protectVPCs(ctx, t)
	rc := newRuleChanges(ctx, t, top, rt)
	denied := func() float64 {
		return counter(ctx, t, b.MetricsURL)(`depctrl_webhook_decisions_total{outcome="denied"}`)
	}

	for _, step := range rc.steps() {
		ok := t.Run(step.name+" while a webhook replica is stopped", func(t *testing.T) {
			check.Must(t, b.Pause())
			paused := true
			defer func() {
				if paused {
					_ = b.Resume()
				}
				lb.Rotate(a, b.Addr)
			}()
			lb.Rotate(a)
			old, mark := rc.enforced(ctx, t, step)

			check.Must(t, b.Resume())
			paused = false
			before := denied()
			lb.Rotate(b.Addr)
			t.Logf("replica b resumed, alone in rotation")
			rc.held(ctx, t, step, old, mark, "replica b resumed, alone in rotation")
			if got := denied(); got == before {
				t.Fatalf("the resumed replica decided none of the deletions of %s (denials: %v before, %v after)", step.refused, before, got)
			}
			lb.Rotate(a, b.Addr)
			rc.converged(ctx, t, step, old)
			rc.neverBack(t, old, mark, "after replica b was resumed")
		})
		if !ok {
			t.FailNow() // the later steps start from this one's outcome
		}
	}
	t.Logf("kcp's connections to the webhook: %d to replica a, %d to replica b", lb.Served(a), lb.Served(b.Addr))
}

// TestWebhookReplicaCutOffFromTheRules: on the real two-shard kcp, with
// settling on, webhook replica b reaches kcp through a proxy that cuts it
// off from the shard that holds the rules (shard-1: the compute workspace
// and its reference index configuration), while it still reaches the
// front-proxy and the root shard, and kcp still reaches it. Its watch of
// the rules there ends, and the registry keeps the rules it held. While b
// is cut off and out of rotation, a rule over VPCs is created, then edited,
// then deleted (ruleChanges); once replica a enforces the change, b is put
// alone in rotation, still cut off: every deletion of the VPC the change
// made referenced goes to b, and b refuses each itself, to be retried, as
// it cannot confirm that its rules are current, rather than decide it on
// the rules it held. Once the cut heals and both are in rotation, the
// change converges.
func TestWebhookReplicaCutOffFromTheRules(t *testing.T) {
	ctx, top, rt, away := installRulesAway(t)
	rt.EnableSettling(ctx, t, "--settle-after", settleAfter.String())
	proxy := startConnectProxy(t)
	awayPort := portOf(t, away.URL)
	lb, a, b := webhookReplicas(ctx, t, rt, "--kubeconfig", rt.ProxiedWebhookKubeconfig(t, proxy.URL))
	top.protectVPCs(ctx, t)
	rc := newRuleChanges(ctx, t, top, rt)
	unconfirmed := func() float64 {
		return counter(ctx, t, b.MetricsURL)(`depctrl_webhook_decisions_total{outcome="not_initialized"}`)
	}

	for _, step := range rc.steps() {
		ok := t.Run(step.name+" while a webhook replica is cut off from the shard of the rules", func(t *testing.T) {
			lb.Rotate(a)
			proxy.Cut(awayPort)
			healed := false
			heal := func() {
				if !healed {
					proxy.Heal(awayPort)
					healed = true
				}
			}
			defer func() {
				heal()
				lb.Rotate(a, b.Addr)
			}()
			old, mark := rc.enforced(ctx, t, step)

			before := unconfirmed()
			lb.Rotate(b.Addr)
			rc.held(ctx, t, step, old, mark, "replica b cut off from the rules, alone in rotation")
			if got := unconfirmed(); got == before {
				t.Fatalf("the cut-off replica refused none of the deletions of %s as undecidable (%v before, %v after)", step.refused, before, got)
			}
			heal()
			lb.Rotate(a, b.Addr)
			rc.converged(ctx, t, step, old)
			rc.neverBack(t, old, mark, "after the cut healed")
		})
		if !ok {
			t.FailNow() // the later steps start from this one's outcome
		}
	}
	t.Logf("kcp's connections to the webhook: %d to replica a, %d to replica b; %s", lb.Served(a), lb.Served(b.Addr), proxy.describe(awayPort))
}

// webhookReplicas runs the webhook as two replicas behind a balancer at the
// URL the controller installs, both in rotation, as a Service spreads
// kcp's calls over the ready pods: the runtime's own webhook, moved to
// address a, and replica b, started with extra flags.
func webhookReplicas(ctx context.Context, t *testing.T, rt *runtimetest.Runtime, extra ...string) (lb *balancer, a string, b *runtimetest.WebhookReplica) {
	t.Helper()
	ports, err := env.FreePorts(1)
	check.Must(t, err)
	a = fmt.Sprintf("127.0.0.1:%d", ports[0])
	rt.MoveWebhook(ctx, t, a)
	b = rt.StartWebhookReplica(ctx, t, "webhook-b", extra...)
	u, err := url.Parse(rt.WebhookURL)
	check.Must(t, err)
	return startBalancer(t, u.Host, a, b.Addr), a, b
}

// TestWebhookReplicaStalledWhileARuleIsEdited: replica b reaches the shard
// of the rules through a proxy that, right after b confirmed its rules for
// a write, silently holds everything (no reset, as a network that drops
// packets), and the rule's field path is edited at once; settling is off,
// so no configuration changes and only the rule's own readiness waits. As
// soon as the rule says Ready for the new path, a VM's update that makes a
// reference under it is sent to b alone, held by a slow admission step
// after the index webhook, and the VPC it references is deleted through
// replica a. b may not admit the update on the old path: either it refuses
// it, as it cannot confirm its rules current, or the delete is refused.
// (When Ready came right after the webhook enforced the edit, b admitted
// the update on the rules it held, recording no intent, and the VPC was
// deleted while the update was on its way.)
func TestWebhookReplicaStalledWhileARuleIsEdited(t *testing.T) {
	ctx, top, rt, away := installRulesAway(t)
	proxy := startConnectProxy(t)
	awayPort := portOf(t, away.URL)
	lb, a, b := webhookReplicas(ctx, t, rt, "--kubeconfig", rt.ProxiedWebhookKubeconfig(t, proxy.URL))
	top.protectVPCs(ctx, t)
	consumer := top.Consumers[0]
	// The slow step holds the writes that change the move label.
	probe := vmObject("vm-stalled-probe", "nothing")
	probe.SetLabels(map[string]string{"e2e.test.io/move": "probe"})
	slowAdmission(ctx, t, top, consumer, slowHold, func(obj, old metav1.ObjectMeta) bool {
		return obj.Labels["e2e.test.io/move"] != old.Labels["e2e.test.io/move"]
	}, probe)
	vms := top.objects(t, consumer, fixtures.VirtualMachines)
	top.object(ctx, t, consumer, fixtures.VPCs, "vpc-stalled", map[string]interface{}{}, nil)
	top.object(ctx, t, consumer, fixtures.VirtualMachines, "vm-stalled", map[string]interface{}{}, nil)

	// b decides a write now: its rules are confirmed as of this moment.
	lb.Rotate(b.Addr)
	_, err := vms.Patch(ctx, "vm-stalled", types.MergePatchType, []byte(`{"metadata":{"labels":{"e2e.test.io/touch":"1"}}}`), metav1.PatchOptions{})
	check.Must(t, err)
	proxy.Stall(awayPort)
	stalled := time.Now()
	defer func() {
		proxy.Unstall(awayPort)
		lb.Rotate(a, b.Addr)
	}()
	editRulePath(ctx, t, top, "vm-needs-vpc", ".spec.networks[*].vpc")
	top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	t.Logf("the edited rule is Ready %s after the stall began", time.Since(stalled).Round(10*time.Millisecond))

	deleteErr, writeErr := whileHeld(func() error {
		_, err := vms.Patch(ctx, "vm-stalled", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"e2e.test.io/move":"1"}},"spec":{"networks":[{"vpc":"vpc-stalled"}]}}`), metav1.PatchOptions{})
		return err
	}, func() error {
		lb.Rotate(a)
		return top.remove(ctx, t, consumer, fixtures.VPCs, "vpc-stalled")
	})
	t.Logf("update through b: %v; delete through a: %v", writeErr, deleteErr)
	stored, err := vms.Get(ctx, "vm-stalled", metav1.GetOptions{})
	check.Must(t, err)
	nets, _, _ := unstructured.NestedSlice(stored.Object, "spec", "networks")
	if len(nets) > 0 && !top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-stalled") {
		t.Fatal("vm-stalled references vpc-stalled under the Ready rule, and vpc-stalled was deleted while the update was on its way: a dangling reference")
	}
	if writeErr == nil && deleteErr == nil {
		t.Fatal("both the update and the delete went through")
	}
}
