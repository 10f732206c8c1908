package e2e

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
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
