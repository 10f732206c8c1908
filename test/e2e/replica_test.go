package e2e

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
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
	ports, err := env.FreePorts(1)
	check.Must(t, err)
	a := fmt.Sprintf("127.0.0.1:%d", ports[0])
	rt.MoveWebhook(ctx, t, a)
	b := rt.StartWebhookReplica(ctx, t, "webhook-b")
	u, err := url.Parse(rt.WebhookURL)
	check.Must(t, err)
	lb := startBalancer(t, u.Host, a, b.Addr)
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
