package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// A crowd round of the invariant test: many clients on both shards create
// VMs that all reference a handful of popular VPCs, while others try to
// delete those VPCs. Every other round under the rule, the crowd's
// namespace opts in to deferred deletion: the deletes are refused and
// deferred (each anchored VPC's once before the crowd starts, so the crowd
// references VPCs whose deletion waits), the VPCs stay while the crowd
// references them, and go, with nobody deleting them, once the round's VMs
// are gone (deferredBound).
const (
	// crowdClients create VMs at once, spread over the consumers.
	crowdClients = 16
	// crowdTargets is how many popular VPCs each consumer has.
	crowdTargets = 3
	// crowdCreates is how many VMs each client creates in a round.
	crowdCreates = 5
	// crowdEvery is how many phases pass between two rounds.
	crowdEvery = 10
	// deferredBound is how long after its last VM is gone a popular VPC
	// whose deletion was deferred may still be there.
	deferredBound = 30 * time.Second
)

// crowd is the popular VPCs of every consumer, in a namespace of their own
// that no worker touches.
type crowd struct {
	places []*worker
	round  int
	// ruled counts the rounds run under the rule: every other one, the
	// first included, defers.
	ruled int
}

// newCrowd makes the namespace and the popular VPCs in every consumer.
func newCrowd(ctx context.Context, t *testing.T, top *Topology) *crowd {
	t.Helper()
	const ns = "crowd"
	c := &crowd{}
	for i, consumer := range top.Consumers {
		apply(ctx, t, top.admin(t, consumer.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
		d := top.dynamicFor(t, consumer.Path)
		w := &worker{id: -1 - i, consumer: consumer, namespace: ns, vpcs: map[string]bool{}, vms: map[string]vmRef{},
			vpcAPI: d.Resource(fixtures.VPCs.GVR()).Namespace(ns), vmAPI: d.Resource(fixtures.VirtualMachines.GVR()).Namespace(ns),
			namespaces: d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})}
		for k := range crowdTargets {
			vpc := fmt.Sprintf("popular-%d", k)
			if err := w.create(ctx, w.vpcAPI, fixtures.VPCs, vpc, map[string]interface{}{}); err != nil {
				t.Fatalf("creating %s in %s: %v", vpc, consumer.Path, err)
			}
			w.vpcs[vpc] = true
		}
		c.places = append(c.places, w)
	}
	return c
}

// run is one round. Under the rule, every popular VPC is first referenced
// by an anchor VM; then crowdClients clients each create crowdCreates VMs
// referencing popular VPCs at random, one attempt each, while one client
// per consumer deletes popular VPCs over and over. Every create must be
// admitted (a legitimate write refused under load is a failure), every
// delete refused, and every popular VPC still there at the end. The
// round's VMs are deleted after it.
func (c *crowd) run(ctx context.Context, rule ruleState, rng *rand.Rand, tl *tally) {
	c.round++
	style := rule.style
	if rule.present {
		c.ruled++
	}
	defers := rule.present && c.ruled%2 == 1
	if defers {
		c.optIn(ctx, true, tl)
		defer c.optIn(ctx, false, tl)
	}
	// deferred are the popular VPCs whose deletion was deferred, by place.
	deferred := make([]map[string]bool, len(c.places))
	for i := range deferred {
		deferred[i] = map[string]bool{}
	}
	var mu sync.Mutex // guards the places' models while clients write
	// create makes one VM with one attempt: under load, too, a write that
	// references an existing object is admitted.
	create := func(w *worker, vm, vpc string) bool {
		_, err := w.vmAPI.Create(ctx, vmObjectAt(vm, vpc, style), metav1.CreateOptions{})
		tl.add(func(tl *tally) { tl.ops++; tl.crowdCreates++ })
		if err != nil {
			tl.unactionablef("crowd round %d: creating %s referencing %s in %s refused: %v", c.round, vm, vpc, w.consumer.Path, err)
			return false
		}
		mu.Lock()
		w.vms[vm] = vmRef{vpc: vpc, style: style, guarded: rule.present}
		mu.Unlock()
		return true
	}
	// Only a VPC whose anchor was admitted is referenced throughout.
	anchored := make([][]string, len(c.places))
	for i, w := range c.places {
		for k := range crowdTargets {
			vpc := fmt.Sprintf("popular-%d", k)
			anchor := fmt.Sprintf("anchor-%d-%d", c.round, k)
			if create(w, anchor, vpc) {
				anchored[i] = append(anchored[i], vpc)
			}
		}
	}
	// deleteOnce asks for vpc's deletion in w once, at place i, and
	// checks the answer.
	deleteOnce := func(i int, w *worker, vpc string) {
		err := w.vpcAPI.Delete(ctx, vpc, metav1.DeleteOptions{})
		tl.add(func(tl *tally) { tl.ops++; tl.deletes++ })
		switch {
		case err == nil:
			tl.violation("crowd round %d: %s was deleted in %s while VMs referenced it", c.round, vpc, w.consumer.Path)
			mu.Lock()
			delete(w.vpcs, vpc)
			mu.Unlock()
		case strings.Contains(err.Error(), "still referenced by ") && defers:
			if !strings.Contains(err.Error(), "its deletion is deferred") {
				tl.unactionablef("crowd round %d: deleting %s in %s, which opts in to deferred deletion, was refused without deferring it: %v", c.round, vpc, w.consumer.Path, err)
			}
			tl.add(func(tl *tally) { tl.denials++; tl.deferred++ })
			mu.Lock()
			deferred[i][vpc] = true
			mu.Unlock()
		case strings.Contains(err.Error(), "still referenced by "):
			tl.add(func(tl *tally) { tl.denials++ })
		default:
			tl.unactionablef("crowd round %d: deleting %s in %s: %v", c.round, vpc, w.consumer.Path, err)
		}
	}
	if defers {
		for i, w := range c.places {
			for _, vpc := range anchored[i] {
				deleteOnce(i, w, vpc)
			}
		}
	}
	seeds := make([][2]uint64, crowdClients+len(c.places))
	for i := range seeds {
		seeds[i] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	done := make(chan struct{})
	var deleters sync.WaitGroup
	if rule.present {
		for i, w := range c.places {
			if len(anchored[i]) == 0 {
				continue
			}
			r := rand.New(rand.NewPCG(seeds[crowdClients+i][0], seeds[crowdClients+i][1]))
			deleters.Go(func() {
				for {
					select {
					case <-done:
						return
					case <-time.After(50 * time.Millisecond):
					}
					deleteOnce(i, w, anchored[i][r.IntN(len(anchored[i]))])
				}
			})
		}
	}
	var clients sync.WaitGroup
	for i := range crowdClients {
		w := c.places[i%len(c.places)]
		r := rand.New(rand.NewPCG(seeds[i][0], seeds[i][1]))
		clients.Go(func() {
			for k := range crowdCreates {
				create(w, fmt.Sprintf("crowd-%d-%d-%d", c.round, i, k), fmt.Sprintf("popular-%d", r.IntN(crowdTargets)))
			}
		})
	}
	clients.Wait()
	close(done)
	deleters.Wait()
	for i, w := range c.places {
		for k := range crowdTargets {
			vpc := fmt.Sprintf("popular-%d", k)
			if _, err := w.vpcAPI.Get(ctx, vpc, metav1.GetOptions{}); err != nil && w.vpcs[vpc] {
				tl.violation("crowd round %d: %s is gone from %s although every delete of it was refused (%v)", c.round, vpc, w.consumer.Path, err)
			}
		}
		for vm, ref := range w.vms {
			// A VPC whose deletion is deferred goes only after its
			// last VM: one still stored must find it.
			if deferred[i][ref.vpc] {
				if _, err := w.vpcAPI.Get(ctx, ref.vpc, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					tl.violation("crowd round %d: %s, whose deletion was deferred, is gone from %s while VM %s references it", c.round, ref.vpc, w.consumer.Path, vm)
				}
			}
			if err := w.vmAPI.Delete(ctx, vm, metav1.DeleteOptions{}); err != nil {
				tl.unactionablef("crowd round %d: deleting VM %s in %s: %v", c.round, vm, w.consumer.Path, err)
				continue
			}
			delete(w.vms, vm)
		}
		// Their VMs gone, the deferred VPCs go with no client asking
		// again; the others stay.
		for vpc := range deferred[i] {
			if !c.goneWithin(ctx, w, vpc, deferredBound) {
				tl.stuckf("crowd round %d: %s in %s, whose deletion was deferred, still there %s after its last VM", c.round, vpc, w.consumer.Path, deferredBound)
				continue
			}
			delete(w.vpcs, vpc)
		}
		for k := range crowdTargets {
			vpc := fmt.Sprintf("popular-%d", k)
			if _, err := w.vpcAPI.Get(ctx, vpc, metav1.GetOptions{}); apierrors.IsNotFound(err) && w.vpcs[vpc] {
				tl.violation("crowd round %d: %s is gone from %s although nobody asked for its deletion in this round", c.round, vpc, w.consumer.Path)
				delete(w.vpcs, vpc)
			}
			if !w.vpcs[vpc] {
				// Deleted, deferred or in a violation: made again
				// for the next round.
				if err := w.create(ctx, w.vpcAPI, fixtures.VPCs, vpc, map[string]interface{}{}); err == nil {
					w.vpcs[vpc] = true
				}
			}
		}
	}
}

// optIn sets or removes the crowd namespace's opt-in to deferred deletion
// in every consumer.
func (c *crowd) optIn(ctx context.Context, on bool, tl *tally) {
	value := "null"
	if on {
		value = `"true"`
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, v1alpha1.DeferDeletionAnnotation, value)
	for _, w := range c.places {
		if _, err := w.namespaces.Patch(ctx, w.namespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			tl.unactionablef("crowd round %d: opting namespace %s in %s in to deferred deletion (%t): %v", c.round, w.namespace, w.consumer.Path, on, err)
		}
	}
}

// goneWithin reports whether vpc is gone from w's namespace within bound.
func (c *crowd) goneWithin(ctx context.Context, w *worker, vpc string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		_, err := w.vpcAPI.Get(ctx, vpc, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// finish deletes the popular VPCs, whose VMs are gone: each must go.
func (c *crowd) finish(ctx context.Context, tl *tally) {
	for _, w := range c.places {
		for vpc := range w.vpcs {
			w.expectDeletable(ctx, vpc, tl)
		}
	}
}
