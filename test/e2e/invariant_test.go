package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// Knobs of the invariant test; `make soak` raises them.
const (
	seedVariable   = "DEPCTRL_INVARIANT_SEED"
	phasesVariable = "DEPCTRL_INVARIANT_PHASES"
	workers        = 4
	stepsPerPhase  = 12
	// livenessBound is how long an unreferenced object may still be
	// refused (a rule change the webhook has not caught up with) before
	// the test calls it a deadlock.
	livenessBound = 15 * time.Second
)

// The two places a VM may name its VPC; the rule watches one at a time.
var refPaths = [2]string{".spec.vpcRef.name", ".spec.networks[*].vpc"}

func vmSpec(vpc string, style int) map[string]interface{} {
	if style == 0 {
		return map[string]interface{}{"vpcRef": map[string]interface{}{"name": vpc}}
	}
	return map[string]interface{}{"networks": []interface{}{map[string]interface{}{"vpc": vpc}}}
}

// vmObjectAt is a VM named vm that references vpc in the given style.
func vmObjectAt(vm, vpc string, style int) *unstructured.Unstructured {
	u := vmObject(vm, vpc)
	u.Object["spec"] = vmSpec(vpc, style)
	return u
}

// ruleState is what the test knows about the one rule.
type ruleState struct {
	present bool
	style   int
}

// worker owns a disjoint set of objects in one consumer workspace, so its
// model of them is exact while workers run concurrently.
type worker struct {
	id       int
	consumer env.Workspace
	rng      *rand.Rand
	vpcs     map[string]bool
	vms      map[string]vmRef
	// regions are the worker's cluster-scoped dependents, each
	// referencing a VPC by name in every namespace (region-needs-vpc,
	// which never changes).
	regions map[string]vmRef
	// forge is another consumer's logical cluster, which some updates
	// claim in kcp.io/cluster: it must change nothing.
	forge string
	// namespace is the worker's own, so that it may delete it.
	namespace string
	// held tells when the slow admission step holds a move.
	held *arrivals
	// Clients made on the test goroutine: workers never call t.Fatal.
	vpcAPI, vmAPI, regionAPI, namespaces dynamic.ResourceInterface
}

// create makes an object, retrying while a fresh binding is not served
// yet.
func (w *worker) create(ctx context.Context, res dynamic.ResourceInterface, a fixtures.APIType, name string, spec map[string]interface{}) error {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": a.Group + "/v1", "kind": a.Kind,
		"metadata": map[string]interface{}{"name": name}, "spec": spec,
	}}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := res.Create(ctx, u, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type vmRef struct {
	vpc   string
	style int
	// guarded: the VM was created referencing an existing VPC under the
	// rule, and the rule has not changed since, so its VPC must still
	// exist at the end.
	guarded bool
}

type tally struct {
	sync.Mutex
	ops, denials, deletes, skips, collections, refusedNew, namespaces, replaces, moves, forged, held, regions, crowdCreates int
	// deferred counts the refused deletes that were deferred.
	deferred int
	// awaitedIntents counts unreferenced VPCs whose delete waited for the
	// intent of a write admitted again, or not stored, to expire.
	awaitedIntents                  int
	violations, stuck, unactionable []string
}

func (tl *tally) add(f func(*tally)) {
	tl.Lock()
	defer tl.Unlock()
	f(tl)
}

// violation records a broken promise: something referenced was deleted.
func (tl *tally) violation(format string, args ...any) {
	tl.add(func(tl *tally) { tl.violations = append(tl.violations, fmt.Sprintf(format, args...)) })
}

// stuckf records something unreferenced that could not be deleted.
func (tl *tally) stuckf(format string, args ...any) {
	tl.add(func(tl *tally) { tl.stuck = append(tl.stuck, fmt.Sprintf(format, args...)) })
}

// unactionablef records a refusal or failure a client could not act on.
func (tl *tally) unactionablef(format string, args ...any) {
	tl.add(func(tl *tally) { tl.unactionable = append(tl.unactionable, fmt.Sprintf(format, args...)) })
}

// TestInvariantUnderLoad drives random concurrent operations (dependents
// and protected objects created and deleted, deletes with and without
// skip-protection, the rule's field path edited, the rule deleted and
// recreated) in consumer workspaces on both shards, with a crowd round
// every crowdEvery phases (many clients referencing a few popular VPCs at
// once, while others delete them; every other round with their deletion
// deferred), and checks after every
// step that nothing referenced under an enforced rule was deleted, that
// nothing unreferenced stays undeletable, and that every refusal is one
// the caller can act on. The seed is logged; DEPCTRL_INVARIANT_SEED
// replays a run.
func TestInvariantUnderLoad(t *testing.T) {
	ctx, e := integration(t, 30*time.Minute, env.TwoShards)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVariable); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		check.Must(t, err)
		seed = s
	}
	phases := 40
	if v := os.Getenv(phasesVariable); v != "" {
		n, err := strconv.Atoi(v)
		check.Must(t, err)
		phases = n
	}
	t.Logf("seed %d (replay with %s=%d), %d phases of %d workers x %d steps", seed, seedVariable, seed, phases, workers, stepsPerPhase)
	top, rt := install(ctx, t, e)
	// Deferred deletion is on: the crowd opts in every other round, and
	// every refused delete elsewhere asks whether it is to be deferred.
	grantDeferral(ctx, t, e)
	rt.StopWebhook(t)
	rt.StartWebhook(ctx, t, "--deferred-deletion")
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// The webhook may re-index: every rule change leaves the VMs
	// unindexed, and it then rewrites them while the workers create and
	// delete them, which the invariant must survive too.
	for _, c := range top.Consumers {
		grantReindex(ctx, t, top, c)
	}

	rule := ruleState{present: true}
	top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, refPaths[0]))
	top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	for _, c := range top.Consumers {
		top.waitIndexWebhookActive(ctx, t, c)
	}
	top.createRule(ctx, t, top.Network, ruleObject("region-needs-vpc", fixtures.Regions, fixtures.VPCs, top.Network.Path, ".spec.vpc"))
	top.waitReady(ctx, t, top.Network, "region-needs-vpc")
	// Some moves are held by a slow admission step of the provider's own
	// after the index webhook let them through: those that change the
	// slow label.
	probe := vmObject("slow-probe", "nothing")
	probe.SetLabels(map[string]string{slowLabel: "probe"})
	held := &arrivals{}
	slowAdmission(ctx, t, top, top.Consumers[0], slowMoveHold, func(obj, old metav1.ObjectMeta) bool {
		if obj.Labels[slowLabel] == "" || obj.Labels[slowLabel] == old.Labels[slowLabel] {
			return false
		}
		held.arrive(obj.Labels[slowLabel])
		return true
	}, probe)

	ws := make([]*worker, workers)
	for i := range ws {
		consumer := top.Consumers[i%len(top.Consumers)]
		d := top.dynamicFor(t, consumer.Path)
		ns := fmt.Sprintf("w%d", i)
		apply(ctx, t, top.admin(t, consumer.Path), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
		ws[i] = &worker{
			id: i, consumer: consumer, namespace: ns, held: held,
			rng:  rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())),
			vpcs: map[string]bool{}, vms: map[string]vmRef{}, regions: map[string]vmRef{},
			forge:  top.Consumers[(i+1)%len(top.Consumers)].Cluster,
			vpcAPI: d.Resource(fixtures.VPCs.GVR()).Namespace(ns), vmAPI: d.Resource(fixtures.VirtualMachines.GVR()).Namespace(ns),
			regionAPI:  d.Resource(fixtures.Regions.GVR()),
			namespaces: d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}),
		}
	}
	popular := newCrowd(ctx, t, top)
	tl := &tally{}
	start := time.Now()
	for phase := range phases {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range stepsPerPhase {
					w.step(ctx, rule, tl)
				}
			}()
		}
		wg.Wait()
		if (phase+1)%crowdEvery == 0 {
			popular.run(ctx, rule, rng, tl)
			t.Logf("phase %d: crowd round %d", phase, popular.round)
		}
		// Change the rule between phases, and wait until the change is
		// enforced (or, for a delete, no longer enforced) before judging.
		// A rule change ends every guard: what the old rule protected
		// may go.
		for _, w := range ws {
			for vm, ref := range w.vms {
				ref.guarded = false
				w.vms[vm] = ref
			}
		}
		switch op := rng.IntN(3); {
		case !rule.present:
			rule = ruleState{present: true, style: rng.IntN(2)}
			top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, refPaths[rule.style]))
			top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
			// Recreating the rule installs a new index configuration,
			// which reaches the consumer on the other shard through the
			// cache server: the model counts it in force once kcp calls it
			// in every consumer.
			for _, c := range top.Consumers {
				top.waitIndexWebhookActive(ctx, t, c)
			}
			t.Logf("phase %d: rule recreated at %s", phase, refPaths[rule.style])
		case op == 0:
			top.deleteRule(ctx, t, top.Compute, "vm-needs-vpc")
			rule.present = false
			t.Logf("phase %d: rule deleted", phase)
		default:
			rule.style = 1 - rule.style
			editRulePath(ctx, t, top, "vm-needs-vpc", refPaths[rule.style])
			top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
			t.Logf("phase %d: rule path edited to %s", phase, refPaths[rule.style])
		}
		tl.add(func(tl *tally) { tl.ops++ })
	}

	// The state on the server is the model's, and every guarded VM's VPC
	// is still there: no reference the rule protected dangles.
	for _, w := range ws {
		w.checkState(ctx, tl)
	}

	// Everything can be deleted once its dependents are gone, with the rule
	// in force.
	if !rule.present {
		top.createRule(ctx, t, top.Compute, ruleObject("vm-needs-vpc", fixtures.VirtualMachines, fixtures.VPCs, top.Network.Path, refPaths[rule.style]))
		top.waitReady(ctx, t, top.Compute, "vm-needs-vpc")
	}
	for _, w := range ws {
		w.deleteRegions(ctx, tl)
		for vm := range w.vms {
			if err := w.vmAPI.Delete(ctx, vm, metav1.DeleteOptions{}); err != nil {
				tl.stuckf("VM %s: %v", vm, err)
			}
		}
		for vpc := range w.vpcs {
			w.expectDeletable(ctx, vpc, tl)
		}
	}
	popular.finish(ctx, tl)
	t.Logf("%d operations in %s: %d deletes of protected objects (%d by collection, %d refused, %d with skip-protection), %d new references to a VPC being deleted refused, %d namespaces deleted with their contents, %d VPCs replaced from copies without intents, %d references moved by update (%d claiming another workspace in kcp.io/cluster, %d held by a slow admission step while their new VPC's delete was tried), %d cluster-scoped Regions created, %d VMs created by %d clients at once referencing %d popular VPCs per consumer in %d rounds; violations %d, stuck %d, unactionable refusals %d",
		tl.ops, time.Since(start).Round(time.Second), tl.deletes, tl.collections, tl.denials, tl.skips, tl.refusedNew, tl.namespaces, tl.replaces, tl.moves, tl.forged, tl.held, tl.regions,
		tl.crowdCreates, crowdClients, crowdTargets, popular.round, len(tl.violations), len(tl.stuck), len(tl.unactionable))
	t.Logf("%d refused deletes of popular VPCs deferred (in the crowd rounds that opt in), each carried out once its VMs were gone", tl.deferred)
	t.Logf("%d deletes of unreferenced VPCs waited for an intent whose write was admitted again, or never stored, to expire (--intent-lifetime)", tl.awaitedIntents)
	t.Logf("meanwhile the webhook read %s dependents without a current stamp and re-indexed %s (%s were gone first)",
		counterValue(ctx, t, rt.WebhookMetricsURL, "depctrl_webhook_unindexed_dependents_examined_total"),
		counterValue(ctx, t, rt.WebhookMetricsURL, `depctrl_webhook_reindex_total{outcome="written"}`),
		counterValue(ctx, t, rt.WebhookMetricsURL, `depctrl_webhook_reindex_total{outcome="gone"}`))
	for _, v := range tl.violations {
		t.Errorf("VIOLATION: %s", v)
	}
	for _, v := range tl.stuck {
		t.Errorf("STUCK: %s", v)
	}
	for _, v := range tl.unactionable {
		t.Errorf("UNACTIONABLE: %s", v)
	}
}

// step performs one random operation and checks its outcome against the
// model.
func (w *worker) step(ctx context.Context, rule ruleState, tl *tally) {
	vpc := fmt.Sprintf("w%d-vpc-%d", w.id, w.rng.IntN(4))
	vm := fmt.Sprintf("w%d-vm-%d", w.id, w.rng.IntN(6))
	tl.add(func(tl *tally) { tl.ops++ })
	fail := tl.unactionablef
	switch r := w.rng.IntN(100); {
	case r < 30:
		if !w.vpcs[vpc] {
			if err := w.create(ctx, w.vpcAPI, fixtures.VPCs, vpc, map[string]interface{}{}); err != nil {
				fail("creating %s: %v", vpc, err)
				return
			}
			w.vpcs[vpc] = true
		}
	case r < 45:
		if _, ok := w.vms[vm]; !ok {
			ref := vmRef{vpc: vpc, style: w.rng.IntN(2)}
			ref.guarded = rule.present && ref.style == rule.style && w.vpcs[vpc]
			if err := w.create(ctx, w.vmAPI, fixtures.VirtualMachines, vm, vmSpec(ref.vpc, ref.style)); err != nil {
				fail("creating %s: %v", vm, err)
				return
			}
			w.vms[vm] = ref
		}
	case r < 52:
		w.createRegion(ctx, vpc, tl, fail)
	case r < 60:
		w.moveReference(ctx, vm, vpc, rule, tl, fail)
	case r < 70:
		if _, ok := w.vms[vm]; ok {
			if err := w.vmAPI.Delete(ctx, vm, metav1.DeleteOptions{}); err != nil {
				fail("deleting VM %s: %v", vm, err)
				return
			}
			delete(w.vms, vm)
		}
	case r < 75:
		region := fmt.Sprintf("w%d-region-%d", w.id, w.rng.IntN(3))
		if _, ok := w.regions[region]; ok {
			if err := w.regionAPI.Delete(ctx, region, metav1.DeleteOptions{}); err != nil {
				fail("deleting Region %s: %v", region, err)
				return
			}
			delete(w.regions, region)
		}
	case r < 88:
		if !w.vpcs[vpc] {
			return
		}
		referenced := w.referenced(vpc, rule)
		// Named, or as a collection of one (kubectl delete -l, a
		// namespace or an APIBinding going away): the same answer.
		var err error
		if w.rng.IntN(2) == 0 {
			err = w.vpcAPI.Delete(ctx, vpc, metav1.DeleteOptions{})
		} else {
			err = w.vpcAPI.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=" + vpc})
			tl.add(func(tl *tally) { tl.collections++ })
		}
		tl.add(func(tl *tally) { tl.deletes++ })
		switch {
		case err == nil && referenced:
			tl.violation("%s was deleted in %s while a VM referenced it at %s", vpc, w.consumer.Path, refPaths[rule.style])
			delete(w.vpcs, vpc)
		case err == nil:
			delete(w.vpcs, vpc)
		case !strings.Contains(err.Error(), "still referenced by "):
			fail("deleting %s: %v", vpc, err)
		default:
			// A refusal must leave the object in place.
			if _, getErr := w.vpcAPI.Get(ctx, vpc, metav1.GetOptions{}); apierrors.IsNotFound(getErr) {
				tl.violation("%s is gone although its delete was refused", vpc)
				delete(w.vpcs, vpc)
				return
			}
			if referenced {
				tl.add(func(tl *tally) { tl.denials++ })
				return
			}
			// Refused although nothing references it: only acceptable
			// briefly, while the webhook catches up with a rule change.
			w.expectDeletable(ctx, vpc, tl)
		}
	case r < 95:
		w.newReferenceToDeleting(ctx, vpc, vm, rule, tl, fail)
	case r < 96:
		w.deleteNamespace(ctx, tl, fail)
	case r < 98:
		w.replaceVPC(ctx, vpc, tl, fail)
	default:
		if !w.vpcs[vpc] {
			return
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.SkipProtectionAnnotation)
		_, err := w.vpcAPI.Patch(ctx, vpc, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil {
			err = w.vpcAPI.Delete(ctx, vpc, metav1.DeleteOptions{})
		}
		if err != nil {
			fail("deleting %s with skip-protection: %v", vpc, err)
			return
		}
		tl.add(func(tl *tally) { tl.skips++; tl.deletes++ })
		delete(w.vpcs, vpc)
		w.unguard(vpc)
	}
}

// replaceVPC writes a VPC back whole from a copy without the intents on it,
// as a tool that replaces objects does. The webhook lets that through when
// every intent it drops is of a VM already stored that references the VPC,
// and refuses it as a conflict otherwise; either way the model is unchanged
// and protection must hold.
func (w *worker) replaceVPC(ctx context.Context, vpc string, tl *tally, fail func(string, ...any)) {
	if !w.vpcs[vpc] {
		return
	}
	obj, err := w.vpcAPI.Get(ctx, vpc, metav1.GetOptions{})
	if err != nil {
		fail("reading %s to replace it: %v", vpc, err)
		return
	}
	annotations := obj.GetAnnotations()
	for k := range annotations {
		if strings.HasPrefix(k, v1alpha1.IntentAnnotationPrefix) {
			delete(annotations, k)
		}
	}
	obj.SetAnnotations(annotations)
	_, err = w.vpcAPI.Update(ctx, obj, metav1.UpdateOptions{})
	tl.add(func(tl *tally) { tl.replaces++ })
	if err != nil && !apierrors.IsConflict(err) {
		fail("replacing %s: %v", vpc, err)
	}
}

// unguard ends the guard of every VM that references vpc, which went with
// the skip-protection annotation.
func (w *worker) unguard(vpc string) {
	for _, deps := range []map[string]vmRef{w.vms, w.regions} {
		for name, ref := range deps {
			if ref.vpc == vpc {
				ref.guarded = false
				deps[name] = ref
			}
		}
	}
}

// namespaceBound is how long the deletion of a worker's namespace may take
// before the test calls it wedged: the namespace controller retries what
// protection refused until the dependents are gone.
const namespaceBound = 2 * time.Minute

// deleteNamespace deletes the worker's namespace with everything in it and
// waits until it is gone: whatever references what inside it, it must
// finish. Then the namespace is made again, empty.
func (w *worker) deleteNamespace(ctx context.Context, tl *tally, fail func(string, ...any)) {
	// The worker's Regions live outside the namespace: while one
	// references a VPC in it, the namespace rightly waits.
	w.deleteRegions(ctx, tl)
	if err := w.namespaces.Delete(ctx, w.namespace, metav1.DeleteOptions{}); err != nil {
		fail("deleting namespace %s: %v", w.namespace, err)
		return
	}
	tl.add(func(tl *tally) { tl.namespaces++ })
	deadline := time.Now().Add(namespaceBound)
	for {
		_, err := w.namespaces.Get(ctx, w.namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			tl.stuckf("namespace %s in %s still there %s after its deletion (%v)", w.namespace, w.consumer.Path, namespaceBound, err)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	clear(w.vpcs)
	clear(w.vms)
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": w.namespace}}}
	if _, err := w.namespaces.Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		fail("creating namespace %s again: %v", w.namespace, err)
	}
}

const holdFinalizer = "e2e.test.io/hold"

// newReferenceToDeleting deletes an unreferenced VPC that a finalizer
// holds, tries to create a VM that references it, and lets the VPC go. The
// create must be refused exactly when the rule would see the reference.
func (w *worker) newReferenceToDeleting(ctx context.Context, vpc, vm string, rule ruleState, tl *tally, fail func(string, ...any)) {
	if _, exists := w.vms[vm]; exists || !w.vpcs[vpc] || w.referenced(vpc, rule) {
		return
	}
	hold := func(finalizers string) error {
		_, err := w.vpcAPI.Patch(ctx, vpc, types.MergePatchType, []byte(`{"metadata":{"finalizers":`+finalizers+`}}`), metav1.PatchOptions{})
		return err
	}
	if err := hold(`["` + holdFinalizer + `"]`); err != nil {
		fail("holding %s: %v", vpc, err)
		return
	}
	tl.add(func(tl *tally) { tl.deletes++ })
	if err := w.vpcAPI.Delete(ctx, vpc, metav1.DeleteOptions{}); err != nil {
		// Unreferenced: only a webhook catching up with a rule change may
		// refuse it, and then only briefly.
		_ = hold(`null`)
		w.expectDeletable(ctx, vpc, tl)
		return
	}
	ref := vmRef{vpc: vpc, style: w.rng.IntN(2)}
	seen := rule.present && ref.style == rule.style
	_, err := w.vmAPI.Create(ctx, vmObjectAt(vm, ref.vpc, ref.style), metav1.CreateOptions{})
	switch {
	case err == nil && seen:
		tl.violation("%s was created in %s referencing %s while it was being deleted", vm, w.consumer.Path, vpc)
		w.vms[vm] = ref
	case err == nil:
		w.vms[vm] = ref
	case seen && strings.Contains(err.Error(), "is being deleted"):
		tl.add(func(tl *tally) { tl.refusedNew++ })
	default:
		fail("creating %s referencing %s, which is being deleted (rule sees it: %v): %v", vm, vpc, seen, err)
	}
	if err := hold(`null`); err != nil {
		fail("releasing %s: %v", vpc, err)
		return
	}
	delete(w.vpcs, vpc)
}

// checkState compares the worker's objects on the server with its model,
// and checks that every guarded VM's VPC exists.
func (w *worker) checkState(ctx context.Context, tl *tally) {
	prefix := fmt.Sprintf("w%d-", w.id)
	names := func(res dynamic.ResourceInterface) (map[string]bool, error) {
		l, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, o := range l.Items {
			if strings.HasPrefix(o.GetName(), prefix) && o.GetDeletionTimestamp() == nil {
				out[o.GetName()] = true
			}
		}
		return out, nil
	}
	record := tl.violation
	vpcsThere, err := names(w.vpcAPI)
	if err != nil {
		record("listing VPCs in %s: %v", w.consumer.Path, err)
		return
	}
	vmsThere, err := names(w.vmAPI)
	if err != nil {
		record("listing VMs in %s: %v", w.consumer.Path, err)
		return
	}
	for vpc := range w.vpcs {
		if !vpcsThere[vpc] {
			record("%s is gone from %s although every delete of it was refused", vpc, w.consumer.Path)
		}
	}
	for vpc := range vpcsThere {
		if !w.vpcs[vpc] {
			record("%s is still in %s although it was deleted", vpc, w.consumer.Path)
		}
	}
	for vm, ref := range w.vms {
		if !vmsThere[vm] {
			record("VM %s is missing from %s", vm, w.consumer.Path)
		}
		if ref.guarded && !vpcsThere[ref.vpc] {
			record("VM %s in %s references %s, which is gone although the rule protected it throughout: a dangling reference", vm, w.consumer.Path, ref.vpc)
		}
	}
	regionsThere, err := names(w.regionAPI)
	if err != nil {
		record("listing Regions in %s: %v", w.consumer.Path, err)
		return
	}
	for region, ref := range w.regions {
		if !regionsThere[region] {
			record("Region %s is missing from %s", region, w.consumer.Path)
		}
		if ref.guarded && !vpcsThere[ref.vpc] {
			record("Region %s in %s references %s, which is gone although region-needs-vpc protected it throughout: a dangling reference", region, w.consumer.Path, ref.vpc)
		}
	}
}

func (w *worker) referenced(vpc string, rule ruleState) bool {
	for _, ref := range w.regions {
		if ref.vpc == vpc {
			return true
		}
	}
	if !rule.present {
		return false
	}
	for _, ref := range w.vms {
		if ref.vpc == vpc && ref.style == rule.style {
			return true
		}
	}
	return false
}

// expectDeletable retries the delete of an unreferenced VPC for
// livenessBound and records it as stuck if it never goes. A VPC that still
// carries the intent of a write whose dependent is not stored with that
// write's token (the API server admitted the write again, or it failed
// after admission) is held by design until the intent expires
// (index.DefaultLifetime, the harness's --intent-lifetime): then it is
// given until then, and livenessBound more, once.
func (w *worker) expectDeletable(ctx context.Context, vpc string, tl *tally) {
	deadline := time.Now().Add(livenessBound)
	extended := false
	for {
		err := w.vpcAPI.Delete(ctx, vpc, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		if err == nil {
			delete(w.vpcs, vpc)
			return
		}
		if time.Now().After(deadline) {
			if until := w.unstoredIntentsUntil(ctx, vpc); !extended && until.After(time.Now()) {
				extended = true
				deadline = until.Add(livenessBound)
				tl.add(func(tl *tally) { tl.awaitedIntents++ })
				continue
			}
			tl.stuckf("%s in %s, referenced by nothing, still refused after %s: %v; %s", vpc, w.consumer.Path, livenessBound, err, w.describeIntents(ctx, vpc))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// seenIntent is an intent recorded on a VPC, with its dependent as read
// now.
type seenIntent struct {
	key, value string
	intent     v1alpha1.Intent
	// dependent is nil when it is not found, or could not be read (err).
	dependent *unstructured.Unstructured
	err       error
}

// intentsOn reads vpc and the dependent of each intent recorded on it.
func (w *worker) intentsOn(ctx context.Context, vpc string) (*unstructured.Unstructured, []seenIntent, error) {
	obj, err := w.vpcAPI.Get(ctx, vpc, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	var out []seenIntent
	for k, v := range obj.GetAnnotations() {
		if !strings.HasPrefix(k, v1alpha1.IntentAnnotationPrefix) {
			continue
		}
		in := seenIntent{key: k, value: v}
		if in.err = json.Unmarshal([]byte(v), &in.intent); in.err == nil {
			api := w.vmAPI
			if strings.HasPrefix(in.intent.Resource, fixtures.Regions.Resource+".") {
				api = w.regionAPI
			}
			in.dependent, in.err = api.Get(ctx, in.intent.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(in.err) {
				in.dependent, in.err = nil, nil
			}
		}
		out = append(out, in)
	}
	return obj, out, nil
}

// unstoredIntentsUntil is when the last of the intents on vpc whose write
// is not the one its dependent is stored with expires: the dependent is
// gone, or carries another write's token in its IntentLabel. The zero time
// when there is none.
func (w *worker) unstoredIntentsUntil(ctx context.Context, vpc string) time.Time {
	_, intents, err := w.intentsOn(ctx, vpc)
	if err != nil {
		return time.Time{}
	}
	var until time.Time
	for _, in := range intents {
		if in.err != nil {
			continue
		}
		if in.dependent != nil {
			token := strings.TrimPrefix(in.key, v1alpha1.IntentAnnotationPrefix)
			if stored, _, ok := index.ParseLabel(in.dependent.GetLabels()[v1alpha1.IntentLabel]); ok && stored == token {
				continue
			}
		}
		if expires := in.intent.At.Add(index.DefaultLifetime); expires.After(until) {
			until = expires
		}
	}
	return until
}

// describeIntents reports the intents recorded on vpc and, for each, what
// its dependent is now: what a stuck delete needs explained.
func (w *worker) describeIntents(ctx context.Context, vpc string) string {
	obj, intents, err := w.intentsOn(ctx, vpc)
	if err != nil {
		return fmt.Sprintf("reading it: %v", err)
	}
	parts := make([]string, len(intents))
	for i, in := range intents {
		now := "not found"
		switch {
		case in.err != nil:
			now = in.err.Error()
		case in.dependent != nil:
			spec, _, _ := unstructured.NestedMap(in.dependent.Object, "spec")
			now = fmt.Sprintf("stored at %s, spec %v, labels %v", in.dependent.GetResourceVersion(), spec, in.dependent.GetLabels())
		}
		parts[i] = fmt.Sprintf("intent %s %s (dependent %s)", in.key, in.value, now)
	}
	return fmt.Sprintf("VPC at %s, labels %v, %d intents: %s", obj.GetResourceVersion(), obj.GetLabels(), len(parts), strings.Join(parts, "; "))
}

// editRulePath sets the rule's first field path, retrying when the
// controller updated the rule's status in between.
func editRulePath(ctx context.Context, t *testing.T, top *Topology, name, path string) {
	t.Helper()
	check.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rule := top.getRule(ctx, t, top.Compute, name)
		deps, _, _ := unstructured.NestedSlice(rule.Object, "spec", "dependencies")
		if err := unstructured.SetNestedField(deps[0].(map[string]interface{}), path, "fieldRef", "path"); err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(rule.Object, deps, "spec", "dependencies"); err != nil {
			return err
		}
		_, err := top.dynamicFor(t, top.Compute.Path).Resource(rulesGVR).Update(ctx, rule, metav1.UpdateOptions{})
		return err
	}))
}

// createRegion creates one of the worker's cluster-scoped Regions,
// referencing vpc in whatever namespace it is.
func (w *worker) createRegion(ctx context.Context, vpc string, tl *tally, fail func(string, ...any)) {
	region := fmt.Sprintf("w%d-region-%d", w.id, w.rng.IntN(3))
	if _, ok := w.regions[region]; ok {
		return
	}
	if err := w.create(ctx, w.regionAPI, fixtures.Regions, region, map[string]interface{}{"vpc": vpc}); err != nil {
		fail("creating Region %s: %v", region, err)
		return
	}
	w.regions[region] = vmRef{vpc: vpc, guarded: w.vpcs[vpc]}
	tl.add(func(tl *tally) { tl.regions++ })
}

// arrivals tells a worker when the slow admission step holds its write:
// each held write carries a label value of its own.
type arrivals struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

// expect returns what is closed once a write labelled label is held.
func (a *arrivals) expect(label string) <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting == nil {
		a.waiting = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	a.waiting[label] = ch
	return ch
}

// arrive says that the slow step holds a write labelled label; kcp may
// call the step again for one write, which changes nothing.
func (a *arrivals) arrive(label string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch, ok := a.waiting[label]; ok {
		close(ch)
		delete(a.waiting, label)
	}
}

// forget drops label once its write is done.
func (a *arrivals) forget(label string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.waiting, label)
}

// slowLabel on a VM, when a write changes it, makes the slow admission
// step hold that write for slowMoveHold.
const (
	slowLabel    = "e2e.test.io/slow"
	slowMoveHold = 2 * time.Second
)

// moveReference makes an existing VM reference vpc instead, by an update
// that, half the time, also claims another consumer's logical cluster in
// kcp.io/cluster (kcp puts the real one back after admission), and, half the
// time, is held by the slow admission step while the worker tries to delete
// vpc: a move in flight must protect vpc already. The VPC it references is
// protected from then on, wherever the update says it is.
func (w *worker) moveReference(ctx context.Context, vm, vpc string, rule ruleState, tl *tally, fail func(string, ...any)) {
	ref, ok := w.vms[vm]
	if !ok || ref.vpc == vpc {
		return
	}
	md := map[string]interface{}{}
	forged := w.rng.IntN(2) == 0
	if forged {
		md["annotations"] = map[string]string{v1alpha1.ClusterAnnotation: w.forge}
	}
	held := w.rng.IntN(2) == 0
	var arrived <-chan struct{}
	if held {
		label := fmt.Sprintf("w%d-%d", w.id, w.rng.Int())
		md["labels"] = map[string]string{slowLabel: label}
		arrived = w.held.expect(label)
		defer w.held.forget(label)
	}
	body, _ := json.Marshal(map[string]interface{}{"metadata": md, "spec": vmSpec(vpc, ref.style)})
	moved := make(chan error, 1)
	go func() {
		_, err := w.vmAPI.Patch(ctx, vm, types.MergePatchType, body, metav1.PatchOptions{})
		moved <- err
	}()
	next := vmRef{vpc: vpc, style: ref.style, guarded: rule.present && ref.style == rule.style && w.vpcs[vpc]}
	var deleteErr error
	var movedErr error
	movedAlready := false
	tried := false
	if held && next.guarded {
		// Once the slow step holds the write, the index webhook has let
		// it through (validating webhooks come after mutating ones), and
		// it is not stored before the hold is over: the move is in flight.
		select {
		case <-arrived:
			tried = true
			deleteErr = w.vpcAPI.Delete(ctx, vpc, metav1.DeleteOptions{})
		case movedErr = <-moved:
			// Refused before the slow step: nothing was in flight.
			movedAlready = true
		}
	}
	if !movedAlready {
		movedErr = <-moved
	}
	if err := movedErr; err != nil {
		fail("moving %s's reference to %s: %v", vm, vpc, err)
		if tried && deleteErr == nil {
			delete(w.vpcs, vpc)
			w.unguard(vpc)
		}
		return
	}
	w.vms[vm] = next
	tl.add(func(tl *tally) {
		tl.moves++
		if forged {
			tl.forged++
		}
		if tried {
			tl.held++
			tl.deletes++
		}
	})
	if !tried {
		return
	}
	switch {
	case deleteErr == nil:
		tl.violation("%s was deleted in %s while an update moving %s's reference to it was in flight", vpc, w.consumer.Path, vm)
		delete(w.vpcs, vpc)
		w.unguard(vpc)
	case strings.Contains(deleteErr.Error(), "still referenced by "):
		tl.add(func(tl *tally) { tl.denials++ })
	default:
		fail("deleting %s while a move to it was in flight: %v", vpc, deleteErr)
	}
}

// deleteRegions deletes every one of the worker's Regions.
func (w *worker) deleteRegions(ctx context.Context, tl *tally) {
	for region := range w.regions {
		if err := w.regionAPI.Delete(ctx, region, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			tl.stuckf("Region %s: %v", region, err)
		}
	}
	clear(w.regions)
}
