package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// faultHold is how long a test watches protection while a fault lasts,
// once the rule change is enforced: past the controller's resync (20 s in
// these tests) and the retries of a run that failed.
const faultHold = 30 * time.Second

// ruleChanges is a rule created, edited and deleted over VPCs that are
// settled in every consumer, as TestControllerPartitionedFromAShard makes
// each change while a component cannot follow it. Before the changes, vm-needs-vpc protects VPCs, and in each
// consumer:
//
//   - by-created is referenced by ManagedDB db-created at .spec.vpcRef.name,
//     where no rule reads a ManagedDB yet;
//   - by-edited is referenced by ManagedDB db-edited at .spec.backupVpc;
//   - by-remaining is referenced by nothing.
//
// All three are settled. The changes, each made once the one before has
// converged:
//
//  1. db-needs-vpc is created (ManagedDBs at .spec.vpcRef.name): by-created,
//     settled under the rules before, is referenced now;
//  2. db-needs-vpc's path is edited to .spec.backupVpc: by-edited, settled
//     under the rules before (step 1's), is referenced now;
//  3. db-needs-vpc is deleted, and a VirtualMachine vm-remaining is created
//     referencing by-remaining, settled under the rules before (step 2's),
//     under the rule that remains.
type ruleChanges struct {
	top       *Topology
	consumers []*settling
	history   *stampHistory
}

// ruleChange is one step of ruleChanges.
type ruleChange struct {
	name   string
	change func(ctx context.Context, t *testing.T)
	// refused is the VPC the change makes referenced, and its blocker.
	refused, by string
	// ready is the rule Ready once the change has converged.
	ready string
	// settles is a VPC settled under the new rules once they converged,
	// which the next step makes referenced.
	settles string
	// freed is a VPC no rule protects after the change.
	freed string
	// keeps: the change only removes a rule, so the stamp before may stay
	// accepted (settle.Keeps) rather than be withdrawn; what it makes
	// referenced is unsettled by the intent of the write that references it.
	keeps bool
	// bridges: the change only adds a rule, so the stamp before stays
	// accepted as a bridge (settle.Bridges), and what the new rule makes
	// referenced skips the webhook until the bridge ends: the new stamp's
	// hold before it is published, then settle.TransitionFor.
	bridges bool
}

// refusalWait is how long a step waits for the webhook to refuse what it
// made referenced: a minute, and the bridge's time where there is one.
func (c ruleChange) refusalWait() time.Duration {
	if c.bridges {
		return time.Minute + settle.TransitionFor(settleAfter)
	}
	return time.Minute
}

// newRuleChanges creates the VPCs and their dependents in every consumer
// and waits until the VPCs are settled; vm-needs-vpc must be Ready.
func newRuleChanges(ctx context.Context, t *testing.T, top *Topology, rt *runtimetest.Runtime) *ruleChanges {
	t.Helper()
	rc := &ruleChanges{top: top}
	for _, c := range top.Consumers {
		s := &settling{top: top, rt: rt, ws: c, vpcs: top.objects(t, c, fixtures.VPCs)}
		rc.consumers = append(rc.consumers, s)
		for _, name := range []string{"by-created", "by-edited", "by-remaining"} {
			s.create(ctx, t, name)
		}
		top.object(ctx, t, c, fixtures.ManagedDBs, "db-created", ref("by-created"), nil)
		top.object(ctx, t, c, fixtures.ManagedDBs, "db-edited", map[string]interface{}{"backupVpc": "by-edited"}, nil)
	}
	for _, s := range rc.consumers {
		for _, name := range []string{"by-created", "by-edited", "by-remaining"} {
			s.waitSettled(ctx, t, name)
		}
	}
	rc.history = top.watchPublished(ctx, t, fixtures.VPCs)
	return rc
}

// steps are the three changes.
func (rc *ruleChanges) steps() []ruleChange {
	top := rc.top
	return []ruleChange{{
		name: "a rule created",
		change: func(ctx context.Context, t *testing.T) {
			top.createRule(ctx, t, top.Compute, ruleObject("db-needs-vpc", fixtures.ManagedDBs, fixtures.VPCs, top.Network.Path, ".spec.vpcRef.name"))
		},
		refused: "by-created", by: "ManagedDB/db-created", ready: "db-needs-vpc", settles: "by-edited", bridges: true,
	}, {
		name: "a rule edited",
		change: func(ctx context.Context, t *testing.T) {
			editRulePath(ctx, t, top, "db-needs-vpc", ".spec.backupVpc")
		},
		refused: "by-edited", by: "ManagedDB/db-edited", ready: "db-needs-vpc", settles: "by-remaining",
	}, {
		name: "a rule deleted",
		change: func(ctx context.Context, t *testing.T) {
			top.deleteRule(ctx, t, top.Compute, "db-needs-vpc")
			for _, s := range rc.consumers {
				top.object(ctx, t, s.ws, fixtures.VirtualMachines, "vm-remaining", ref("by-remaining"), nil)
			}
		},
		refused: "by-remaining", by: "VirtualMachine/vm-remaining", ready: "vm-needs-vpc", freed: "by-edited", keeps: true,
	}}
}

// enforced makes the change and waits until the webhook enforces it: the
// stamp published before is withdrawn (unless the change only removed a
// rule), and the VPC the change made referenced is refused, by the
// webhook's decision, in every consumer. It returns the stamp published
// before and the mark in the history from which it must not come back once
// withdrawn.
func (rc *ruleChanges) enforced(ctx context.Context, t *testing.T, step ruleChange) (old string, mark int) {
	t.Helper()
	old = rc.top.publishedStamp(ctx, t, fixtures.VPCs)
	if old == "" {
		t.Fatal("no stamp is published for VPCs before the change")
	}
	mark = rc.history.Mark()
	step.change(ctx, t)
	if !step.keeps {
		check.Eventually(ctx, t, time.Minute, "the webhook to withdraw the stamp of the rules before the change", func() error {
			if p := rc.top.publishedStamp(ctx, t, fixtures.VPCs); p == old {
				return fmt.Errorf("still %q", p)
			}
			return nil
		})
	}
	rc.refusedEverywhere(ctx, t, step, "after the change")
	return old, mark
}

// refusedEverywhere waits until the webhook decides the deletion of the
// VPC the change made referenced, in every consumer; one that succeeds
// fails the test.
func (rc *ruleChanges) refusedEverywhere(ctx context.Context, t *testing.T, step ruleChange, when string) {
	t.Helper()
	for _, s := range rc.consumers {
		check.Eventually(ctx, t, step.refusalWait(), fmt.Sprintf("%s: %s refused on shard %s", when, step.refused, s.ws.Shard), func() error {
			return rc.top.decidedDenial(ctx, t, s.ws, fixtures.VPCs, step.refused, "still referenced by "+step.by)
		})
	}
}

// held watches protection for faultHold: the stamp published before the
// change never comes back once withdrawn, and the VPC the change made
// referenced is never deleted, in any consumer.
func (rc *ruleChanges) held(ctx context.Context, t *testing.T, step ruleChange, old string, mark int, while string) {
	t.Helper()
	for end := time.Now().Add(faultHold); ; {
		rc.neverBack(t, old, mark, while)
		for _, s := range rc.consumers {
			if err := rc.top.remove(ctx, t, s.ws, fixtures.VPCs, step.refused); err == nil {
				t.Fatalf("%s: %s was deleted on shard %s while %s references it (published since the change: %v)",
					while, step.refused, s.ws.Shard, step.by, rc.history.Describe(mark))
			}
		}
		if time.Now().After(end) {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("%s: protection held for %s; published since the change: %v", while, faultHold, rc.history.Describe(mark))
}

// neverBack fails the test if the stamp old was published again after it
// was withdrawn since mark.
func (rc *ruleChanges) neverBack(t *testing.T, old string, mark int, while string) {
	t.Helper()
	since := rc.history.Since(mark)
	withdrawn := false
	for _, s := range since {
		switch {
		case s != old:
			withdrawn = true
		case withdrawn:
			t.Fatalf("%s: the stamp %s of the rules before the change was published again after it was withdrawn (published since the change: %s)", while, old, rc.history.Describe(mark))
		}
	}
}

// converged waits until the change is in force everywhere once the fault
// is over: its rule is Ready, a stamp other than old is published, the VPC
// the next step needs is settled under it, the VPC the change made
// referenced is refused and the one it freed can be deleted, in every
// consumer.
func (rc *ruleChanges) converged(ctx context.Context, t *testing.T, step ruleChange, old string) {
	t.Helper()
	top := rc.top
	start := time.Now()
	check.Eventually(ctx, t, 3*time.Minute, "rule "+step.ready+" to become Ready", func() error {
		status, reason, msg := condition(top.getRule(ctx, t, top.Compute, step.ready), v1alpha1.ConditionReady)
		if status != "True" {
			return fmt.Errorf("condition Ready=%q %s: %s", status, reason, msg)
		}
		return nil
	})
	check.Eventually(ctx, t, 2*time.Minute, "the stamp of the new rules to be published", func() error {
		if p := top.publishedStamp(ctx, t, fixtures.VPCs); p == "" || p == old {
			return fmt.Errorf("published %q", p)
		}
		return nil
	})
	for _, s := range rc.consumers {
		if step.settles != "" {
			s.waitSettled(ctx, t, step.settles)
		}
		if step.freed != "" {
			check.Eventually(ctx, t, time.Minute, step.freed+" deletable on shard "+s.ws.Shard, func() error {
				return top.remove(ctx, t, s.ws, fixtures.VPCs, step.freed)
			})
		}
	}
	rc.refusedEverywhere(ctx, t, step, "converged")
	t.Logf("converged %s after the fault ended; published so far: %s", time.Since(start).Round(time.Millisecond), rc.history.Describe(0))
}

// stampHistory records each stamp the deletion webhook of one type
// publishes, in the order a watch of its configuration sees them: every
// write, so also a stamp published for a moment only.
type stampHistory struct {
	mu     sync.Mutex
	stamps []string
	// at is when each stamp was seen, for messages.
	at []time.Time
}

func (h *stampHistory) record(stamp string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.stamps); n == 0 || h.stamps[n-1] != stamp {
		h.stamps = append(h.stamps, stamp)
		h.at = append(h.at, time.Now())
	}
}

// Mark is where the history stands now.
func (h *stampHistory) Mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.stamps)
}

// Since returns the stamps published from mark on, starting with the one
// published at mark ("" for none).
func (h *stampHistory) Since(mark int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if mark > 0 {
		mark--
	}
	return append([]string(nil), h.stamps[mark:]...)
}

// Describe lists the stamps published from mark on, each with when it was
// seen, for messages.
func (h *stampHistory) Describe(mark int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if mark > 0 {
		mark--
	}
	parts := make([]string, 0, len(h.stamps)-mark)
	for i := mark; i < len(h.stamps); i++ {
		s := h.stamps[i]
		if s == "" {
			s = "none"
		}
		parts = append(parts, fmt.Sprintf("%s at %s", s, h.at[i].Format("15:04:05.000")))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// watchPublished records, until the test ends, the stamps the deletion
// webhook of a publishes, from a watch of its configuration.
func (top *Topology) watchPublished(ctx context.Context, t *testing.T, a fixtures.APIType) *stampHistory {
	t.Helper()
	ws := top.Network
	if a.Group != fixtures.VPCs.Group {
		ws = top.Compute
	}
	res := top.dynamicFor(t, ws.Path).Resource(webhookGVR)
	byName := fields.OneTermEqualSelector("metadata.name", v1alpha1.WebhookConfigurationName).String()
	h := &stampHistory{}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	observe := func(u *unstructured.Unstructured) {
		s, err := stampIn(u, a)
		if err == nil {
			h.record(s)
		}
	}
	list := func() (string, error) {
		l, err := res.List(ctx, metav1.ListOptions{FieldSelector: byName})
		if err != nil {
			return "", err
		}
		if len(l.Items) == 0 {
			h.record("")
		}
		for i := range l.Items {
			observe(&l.Items[i])
		}
		return l.GetResourceVersion(), nil
	}
	first, err := list()
	check.Must(t, err)
	go func() {
		rv := first
		for ctx.Err() == nil {
			if rv == "" {
				var err error
				if rv, err = list(); err != nil {
					time.Sleep(time.Second)
					continue
				}
			}
			w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					rv = ""
				}
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type == watch.Error || !ok {
					// List again.
					rv = ""
					break
				}
				rv = u.GetResourceVersion()
				switch ev.Type {
				case watch.Deleted:
					h.record("")
				case watch.Added, watch.Modified:
					observe(u)
				}
			}
			w.Stop()
		}
	}()
	return h
}
