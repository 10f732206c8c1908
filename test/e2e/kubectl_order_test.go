package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/internal/kubectlplugin"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
)

// hubDependents is how many VMs reference the hub VPC: more than a
// deletion's denial names (10), so refs must read them all.
const hubDependents = 12

// TestKubectlDepctrlRefsAndOrder: on the real two-shard kcp, with a VPC
// that twelve VMs reference and one that nothing references, in a consumer
// on either shard, kubectl-depctrl's why lists all twelve (a dry run lists
// every blocker; a deletion names ten), refs draws every reference as a
// tree, DOT and JSON, and order puts every VM before the VPC it references.
// Deleting the namespace's objects wave by wave in that order, nothing is
// ever refused for a dependent that is still there, and everything goes.
func TestKubectlDepctrlRefsAndOrder(t *testing.T) {
	onEveryShardWithPlugin(t, func(t *testing.T, ctx context.Context, top *Topology, consumer env.Workspace, run pluginRun) {
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-hub", map[string]interface{}{}, nil)
		top.object(ctx, t, consumer, fixtures.VPCs, "vpc-lone", map[string]interface{}{}, nil)
		for i := range hubDependents {
			top.object(ctx, t, consumer, fixtures.VirtualMachines, fmt.Sprintf("vm-hub-%02d", i), ref("vpc-hub"), nil)
		}

		out, code := run("why", "vpcs/vpc-hub", "-o", "json")
		var v kubectlplugin.Verdict
		if code != kubectlplugin.ExitBlocked || json.Unmarshal([]byte(out), &v) != nil || len(v.Blockers) != hubDependents || !strings.Contains(v.Message, "and 2 more") {
			t.Fatalf("why vpcs/vpc-hub: exit %d, %d blockers, want %d listed and a message naming ten of them:\n%s", code, len(v.Blockers), hubDependents, out)
		}

		out, code = run("refs", "-o", "json")
		var g kubectlplugin.Graph
		if code != kubectlplugin.ExitOK || json.Unmarshal([]byte(out), &g) != nil {
			t.Fatalf("refs -o json: exit %d:\n%s", code, out)
		}
		hub := 0
		for _, r := range g.References {
			if r.To.Name == "vpc-hub" && r.To.Kind == fixtures.VPCs.Kind && r.From.Kind == fixtures.VirtualMachines.Kind && strings.HasPrefix(r.From.Name, "vm-hub-") && !r.Pending {
				hub++
			}
			if r.To.Name == "vpc-lone" {
				t.Errorf("refs names a reference to vpc-lone, which nothing references: %+v", r)
			}
		}
		if hub != hubDependents {
			t.Fatalf("refs -o json names %d stored references to vpc-hub, want %d:\n%s", hub, hubDependents, out)
		}
		out, code = run("refs")
		if code != kubectlplugin.ExitOK || !strings.Contains(out, "VPC.network.test.io/vpc-hub (apps)\n") || !strings.Contains(out, "└── VirtualMachine.compute.test.io/vm-hub-11 (apps)\n") {
			t.Fatalf("refs: exit %d, want vpc-hub with vm-hub-11 last beneath it:\n%s", code, out)
		}
		t.Logf("kubectl depctrl refs:\n%s", out)
		out, code = run("refs", "-o", "dot")
		if code != kubectlplugin.ExitOK || !strings.Contains(out, `"VirtualMachine.compute.test.io/vm-hub-00 (apps)" -> "VPC.network.test.io/vpc-hub (apps)";`) {
			t.Fatalf("refs -o dot: exit %d, want an edge from vm-hub-00 to vpc-hub:\n%s", code, out)
		}

		out, code = run("order", "-o", "json")
		var o kubectlplugin.Order
		if code != kubectlplugin.ExitOK || json.Unmarshal([]byte(out), &o) != nil || len(o.Cycles) > 0 || len(o.Stuck) > 0 {
			t.Fatalf("order -o json: exit %d:\n%s", code, out)
		}
		wave := map[string]int{}
		for i, w := range o.Waves {
			for _, x := range w {
				wave[x.Kind+"/"+x.Namespace+"/"+x.Name] = i
			}
		}
		hubWave, ok := wave["VPC/apps/vpc-hub"]
		if !ok || wave["VPC/apps/vpc-lone"] != 0 {
			t.Fatalf("order puts vpc-hub in wave %d (%v) and vpc-lone in %d, want vpc-lone first:\n%s", hubWave, ok, wave["VPC/apps/vpc-lone"], out)
		}
		for i := range hubDependents {
			if w, ok := wave[fmt.Sprintf("VirtualMachine/apps/vm-hub-%02d", i)]; !ok || w >= hubWave {
				t.Fatalf("order puts vm-hub-%02d in wave %d (%v), not before vpc-hub's %d:\n%s", i, w, ok, hubWave, out)
			}
		}
		t.Logf("kubectl depctrl order:\n%s", out)

		deleteInOrder(ctx, t, top, consumer, o)
	})
}

// deleteInOrder deletes the objects of o wave by wave. A deletion refused
// must name only dependents of earlier waves, already deleted, whose
// writes' intents the object still carries for a moment: one naming an
// object that is still there means the order was wrong.
func deleteInOrder(ctx context.Context, t *testing.T, top *Topology, consumer env.Workspace, o kubectlplugin.Order) {
	t.Helper()
	deleted := map[string]bool{}
	key := func(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }
	d := top.dynamicFor(t, consumer.Path)
	for i, w := range o.Waves {
		for _, x := range w {
			res := d.Resource(schema.GroupVersionResource{Group: x.Group, Version: x.Version, Resource: x.Resource}).Namespace(x.Namespace)
			check.Eventually(ctx, t, 2*time.Minute, fmt.Sprintf("deleting %s of wave %d", x, i+1), func() error {
				err := res.Delete(ctx, x.Name, metav1.DeleteOptions{})
				if err == nil || apierrors.IsNotFound(err) {
					return nil
				}
				var status apierrors.APIStatus
				if errors.As(err, &status) && status.Status().Details != nil {
					for _, c := range status.Status().Details.Causes {
						if ref, _, ok, _ := v1alpha1.DependentOf(c); ok && !deleted[key(ref.Kind, ref.Namespace, ref.Name)] {
							t.Fatalf("deleting %s of wave %d was refused for %s/%s, which the order puts later or not at all: %v", x, i+1, ref.Kind, ref.Name, err)
						}
					}
				}
				return err
			})
		}
		for _, x := range w {
			deleted[key(x.Kind, x.Namespace, x.Name)] = true
		}
	}
	if top.exists(ctx, t, consumer, fixtures.VPCs, "vpc-hub") {
		t.Fatal("vpc-hub is still there after its wave")
	}
}

// runPlugin runs kubectl-depctrl with args and returns its output (stdout,
// then stderr when it fails) and exit code.
func runPlugin(ctx context.Context, t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String() + errOut.String(), exit.ExitCode()
	default:
		t.Fatalf("running %s: %v", bin, err)
		return "", -1
	}
}
